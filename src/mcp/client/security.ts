/**
 * The guards spec/05 puts around MCP servers: a cleared environment for stdio children, no `..`
 * in a stdio command, no cloud-metadata (and by default no private or loopback) URLs, header
 * values expanded from the environment, and a 10 MB cap on every message. The connection to a
 * vetted URL is pinned to the checked addresses by `createPinnedFetch`.
 */
import type { Config } from '../../config/index.ts';
import { type HostResolver, type VettedAddress, vetHostAddresses } from '../../tools/index.ts';
import { BoundedBytes, type JsonRpcId, recoverJsonRpcId } from '../jsonrpc-message-reader.ts';
import { McpMessageTooLargeError } from '../mcp-message-too-large-error.ts';
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
export function expandHeaders(
  server: string,
  headers: Readonly<Record<string, string>>,
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
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

/** The id of the one JSON-RPC request a POST carries, if it carries exactly one. */
function requestIdOf(init: RequestInit | undefined): JsonRpcId {
  if (typeof init?.body !== 'string') return null;
  try {
    const value: unknown = JSON.parse(init.body);
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !('method' in value) || !('id' in value)) return null;
    const { id } = value as { id: unknown };
    return typeof id === 'string' || typeof id === 'number' ? id : null;
  } catch {
    return null;
  }
}

/** A stream that fails with McpMessageTooLargeError once more than `maxBytes` have passed. */
function bodyLimiter(maxBytes: number): TransformStream<Uint8Array, Uint8Array> {
  let size = 0;
  return new TransformStream({
    transform(chunk, controller) {
      size += chunk.byteLength;
      if (size > maxBytes) controller.error(new McpMessageTooLargeError({ size: undefined, limit: maxBytes }));
      else controller.enqueue(chunk);
    },
  });
}

/**
 * A response's body read whole, at most `maxBytes` of it: past that it fails with
 * McpMessageTooLargeError, having held no more than the limit.
 */
export async function readBoundedBody(response: Response, maxBytes: number = MAX_MCP_MESSAGE_BYTES): Promise<ArrayBuffer> {
  if (response.body === null) return new ArrayBuffer(0);
  return new Response(response.body.pipeThrough(bodyLimiter(maxBytes))).arrayBuffer();
}

/**
 * An event stream passed on event by event (the bytes up to a blank line), each held until it is
 * whole and at most `maxBytes`. An event over that is read past, keeping only its start and end,
 * and passed on as an event carrying the JSON-RPC error response to its id (recovered from the
 * message, else the id of the request the POST carried), so the SDK fails that request alone and
 * the stream carries on. An oversized request or notification from the server is dropped.
 */
function eventStreamLimiter(maxBytes: number, postId: JsonRpcId): TransformStream<Uint8Array, Uint8Array> {
  const encoder = new TextEncoder();
  let event = new BoundedBytes(maxBytes);
  let afterNewline = false;
  const flush = (controller: TransformStreamDefaultController<Uint8Array>): void => {
    const done = event;
    event = new BoundedBytes(maxBytes);
    if (done.size === 0) return;
    if (!done.over) {
      controller.enqueue(done.whole());
      return;
    }
    const head = done.head();
    const dataAt = head.search(/^data:/m);
    const { id, kind } = recoverJsonRpcId(dataAt === -1 ? '' : head.slice(dataAt + 5), done.tail());
    const answered = kind === 'request' ? null : (id ?? postId);
    if (answered === null) return;
    const eventId = /^id:\s?(.*)$/m.exec(dataAt === -1 ? head : head.slice(0, dataAt))?.[1];
    const response = {
      jsonrpc: '2.0',
      id: answered,
      error: { code: -32600, message: new McpMessageTooLargeError({ size: done.size, limit: maxBytes }).message, data: { size: done.size, limit: maxBytes } },
    };
    controller.enqueue(encoder.encode(`event: message\n${eventId === undefined ? '' : `id: ${eventId}\n`}data: ${JSON.stringify(response)}\n\n`));
  };
  return new TransformStream({
    transform(chunk, controller) {
      let start = 0;
      for (let index = 0; index < chunk.length; index += 1) {
        const byte = chunk[index];
        if (byte === 13) continue;
        if (byte === 10 && afterNewline) {
          event.add(chunk.subarray(start, index + 1));
          start = index + 1;
          afterNewline = false;
          flush(controller);
          continue;
        }
        afterNewline = byte === 10;
      }
      event.add(chunk.subarray(start));
    },
    flush(controller) {
      flush(controller);
    },
  });
}

/**
 * A fetch for the HTTP transports that holds every MCP message to `maxBytes`. A JSON body over
 * it fails that POST (and so the one request it answers) with McpMessageTooLargeError; an event
 * stream is limited per event, an oversized event becoming the error response to its request
 * (see eventStreamLimiter), so a long-lived stream of small messages is fine and one large
 * message costs only its request. Requests go through `baseFetch` (the pinned fetch of the
 * connection in Loom; the global fetch by default).
 */
export function sizeLimitedFetch(maxBytes: number = MAX_MCP_MESSAGE_BYTES, baseFetch: McpFetch = fetch): McpFetch {
  return async (url, init) => {
    const response = await baseFetch(url, init);
    if (response.body === null) return response;
    const eventStream = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    const length = Number(response.headers.get('content-length') ?? '0');
    if (!eventStream && length > maxBytes) {
      await response.body.cancel();
      throw new McpMessageTooLargeError({ size: length, limit: maxBytes });
    }
    const limiter = eventStream ? eventStreamLimiter(maxBytes, requestIdOf(init)) : bodyLimiter(maxBytes);
    return new Response(response.body.pipeThrough(limiter), { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
