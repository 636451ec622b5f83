/**
 * The guards spec/05 puts around MCP servers: a cleared environment for stdio children, no `..`
 * in a stdio command, no cloud-metadata (and by default no private or loopback) URLs, header
 * values expanded from the environment, and a 10 MB cap on every message. The connection to a
 * vetted URL is pinned to the checked addresses by `createPinnedFetch`.
 */
import type { Config } from '../../config/index.ts';
import { type HostResolver, type VettedAddress, vetHostAddresses } from '../../tools/builtin/net-guard.ts';
import { McpServerRefusedError } from './mcp-server-refused-error.ts';

/** One `[[mcp_servers]]` entry, defaults filled in. */
export type McpServerEntry = Omit<Config['mcp_servers'][number], 'sampling'> & { sampling?: boolean | undefined };

/** The largest MCP message accepted, in bytes (spec/05's `MAX_MCP_MESSAGE_SIZE`). */
export const MAX_MCP_MESSAGE_BYTES = 10 * 1024 * 1024;

/** The environment of a stdio server: PATH plus the variables its entry lists, nothing else. */
export function stdioEnvironment(entry: Pick<McpServerEntry, 'env'>, env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const result: Record<string, string> = {};
  for (const name of ['PATH', ...entry.env]) {
    const value = env[name];
    if (value !== undefined) result[name] = value;
  }
  return result;
}

/** Refuses a stdio command holding `..` (path traversal out of the directories PATH names). */
export function checkStdioCommand(server: string, command: string): void {
  if (command.includes('..')) {
    throw new McpServerRefusedError(`MCP server "${server}": command "${command}" is refused: it contains ".."`, { details: { server, command } });
  }
}

/**
 * Expands `${NAME}` in header values from `env`. Throws when a named variable is not set, so a
 * server is never sent a header with a hole in it.
 */
export function expandHeaders(server: string, headers: Readonly<Record<string, string>>, env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) {
    result[key] = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_match, name: string) => {
      const found = env[name];
      if (found === undefined) {
        throw new McpServerRefusedError(`MCP server "${server}": header "${key}" names the environment variable ${name}, which is not set`, {
          details: { server, header: key, variable: name },
        });
      }
      return found;
    });
  }
  return result;
}

/** An sse/http server URL that passed `vetMcpUrl`, with the addresses its host resolved to then. */
export interface VettedMcpUrl {
  url: URL;
  /** Every address the host resolved to, all judged; connections go to these only (see createPinnedFetch). */
  addresses: VettedAddress[];
}

/** How `vetMcpUrl` resolves host names and stops early. */
export interface VetMcpUrlOptions {
  /** The system resolver unless a test injects another. */
  resolve?: HostResolver | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * Checks an sse/http server URL: http or https; never a cloud-metadata host or address; no
 * loopback, private, link-local or unspecified address unless `allowPrivate`. Every address the
 * host resolves to is judged, and they are returned so the connection can be pinned to them.
 * Throws McpServerRefusedError naming the URL and the address; a WebRequestError when the host
 * cannot be resolved (retried like any failed connect).
 */
export async function vetMcpUrl(server: string, text: string, allowPrivate: boolean, options: VetMcpUrlOptions = {}): Promise<VettedMcpUrl> {
  const url = new URL(text);
  const refuse = (why: string, address?: string): McpServerRefusedError =>
    new McpServerRefusedError(`MCP server "${server}": URL ${url.origin} is refused: ${why}`, {
      details: { server, url: url.origin, ...(address === undefined ? {} : { address }) },
    });
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refuse(`only http and https are supported, not "${url.protocol}"`);
  const vetted = await vetHostAddresses(url, allowPrivate, options);
  if ('addresses' in vetted) return { url, addresses: vetted.addresses };
  const { refused } = vetted;
  if (refused.kind === 'metadata-host') throw refuse('it is a cloud metadata host');
  const resolved = refused.address === refused.host ? '' : ` (${refused.host} resolves to ${refused.address})`;
  if (refused.reason === 'cloud metadata') throw refuse(`it is a cloud metadata address${resolved}`, refused.address);
  throw refuse(`${refused.reason} addresses are refused unless allow_private_network = true${resolved}`, refused.address);
}

/** The fetch the SDK's HTTP transports take. */
export type McpFetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * A fetch for the HTTP transports that refuses a response over `maxBytes`: a JSON body as a
 * whole, an event stream per event (the bytes between blank lines), so a long-lived stream of
 * small messages is fine while one oversized message aborts the read. Requests go through
 * `baseFetch` (the pinned fetch of the connection in Loom; the global fetch by default).
 */
export function sizeLimitedFetch(maxBytes: number = MAX_MCP_MESSAGE_BYTES, baseFetch: McpFetch = fetch): McpFetch {
  return async (url, init) => {
    const response = await baseFetch(url, init);
    const length = Number(response.headers.get('content-length') ?? '0');
    const tooLarge = (): Error => new Error(`MCP message from ${String(url)} is over ${maxBytes} bytes; refused`);
    if (length > maxBytes) {
      await response.body?.cancel();
      throw tooLarge();
    }
    if (response.body === null) return response;
    const eventStream = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    let size = 0;
    let afterNewline = false;
    const limiter = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        let over = false;
        if (!eventStream) {
          size += chunk.byteLength;
          over = size > maxBytes;
        } else {
          for (const byte of chunk) {
            if (byte === 13) continue;
            if (byte === 10 && afterNewline) size = 0;
            else size += 1;
            afterNewline = byte === 10;
            if (size > maxBytes) {
              over = true;
              break;
            }
          }
        }
        if (over) controller.error(tooLarge());
        else controller.enqueue(chunk);
      },
    });
    return new Response(response.body.pipeThrough(limiter), { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
