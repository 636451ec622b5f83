/**
 * The fetch the MCP client's HTTP transports (Streamable HTTP and legacy SSE) are given. Every
 * request is sent by the web tools' `requestPinned` (tools/builtin/net-guard.ts) to the addresses
 * `vetMcpUrl` approved when the connection was made, so a DNS answer that changes after the
 * check (DNS rebinding) cannot move the connection to a metadata, loopback or private address.
 * TLS still verifies the certificate against the URL's host name.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { requestPinned } from '../../tools/index.ts';
import { McpServerRefusedError } from './mcp-server-refused-error.ts';
import { type McpFetch, readBoundedBody, type VetMcpUrlOptions, type VettedMcpUrl, vetMcpUrl } from './security.ts';

/** A fetch pinned to one server's vetted addresses, and the end of its connection pool. */
export interface PinnedFetch {
  fetch: McpFetch;
  /** Closes the pooled sockets; call when the transport is done with. */
  close: () => void;
}

/** Socket errors meaning the checked address does not answer (as opposed to a request that failed there). */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ETIMEDOUT']);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Statuses whose response has no body, whatever the server sends. */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/** Options of {@link createPinnedFetch}. */
export interface PinnedFetchOptions {
  /**
   * Called when a request cannot reach the checked address at all (refused, unreachable, timed
   * out), so the caller can reconnect, which resolves the host and checks it again.
   */
  onUnreachable?: ((error: Error) => void) | undefined;
}

/**
 * A fetch that sends requests for `vetted.url`'s host only, over sockets connected to
 * `vetted.addresses` (kept alive in a pool of its own, so no socket made to any other address is
 * reused). The host is not resolved again: a server that moves is followed only by a new
 * connection, checked again (see `onUnreachable`). Redirects are returned, not followed: the SDK
 * follows those within the origin itself, each through this fetch again. Throws
 * McpServerRefusedError for a URL on another host.
 *
 * @example
 * const vetted = await vetMcpUrl('docs', 'https://mcp.example.com/mcp', false);
 * const pinned = createPinnedFetch('docs', vetted);
 * const transport = new StreamableHTTPClientTransport(vetted.url, { fetch: pinned.fetch });
 */
export function createPinnedFetch(server: string, vetted: VettedMcpUrl, options: PinnedFetchOptions = {}): PinnedFetch {
  const agents = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) };

  async function pinnedFetch(input: string | URL, init: RequestInit = {}): Promise<Response> {
    const url = new URL(input);
    if (url.hostname !== vetted.url.hostname || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new McpServerRefusedError(
        `MCP server "${server}": a request to ${url.origin} is refused: only ${vetted.url.hostname} was checked for this connection`,
        {
          details: { server, url: url.origin },
        },
      );
    }
    const headers: Record<string, string> = Object.fromEntries(new Headers(init.headers));
    let body: Uint8Array | undefined;
    if (init.body !== undefined && init.body !== null) {
      // Any BodyInit, read as fetch would, with the content-type fetch would give it.
      const wrapped = new Response(init.body);
      body = new Uint8Array(await wrapped.arrayBuffer());
      const type = wrapped.headers.get('content-type');
      if (type !== null && headers['content-type'] === undefined) headers['content-type'] = type;
    }
    // Nothing here decodes a compressed body.
    headers['accept-encoding'] = 'identity';
    const method = (init.method ?? 'GET').toUpperCase();
    let message: IncomingMessage;
    try {
      message = await requestPinned(url, { method, headers, body, addresses: vetted.addresses, signal: init.signal ?? undefined, agent: agents[url.protocol] });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== undefined && UNREACHABLE_CODES.has(code) && init.signal?.aborted !== true) options.onUnreachable?.(error as Error);
      throw error;
    }
    const status = message.statusCode ?? 0;
    if (init.redirect === 'error' && REDIRECT_STATUSES.has(status)) {
      message.destroy();
      throw new TypeError(`fetch failed: ${url.href} redirected (${status}) and redirect is "error"`);
    }
    return toResponse(message, url, method === 'HEAD' || NULL_BODY_STATUSES.has(status));
  }

  return {
    fetch: pinnedFetch,
    close: () => {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}

/** The web Response for a node response, its body streamed as it arrives (an SSE stream stays open). */
function toResponse(message: IncomingMessage, url: URL, withoutBody: boolean): Response {
  const headers = new Headers();
  for (let index = 0; index + 1 < message.rawHeaders.length; index += 2) {
    headers.append(message.rawHeaders[index] ?? '', message.rawHeaders[index + 1] ?? '');
  }
  if (withoutBody) message.resume();
  const body = withoutBody ? null : (Readable.toWeb(message) as ReadableStream<Uint8Array>);
  const response = new Response(body, { status: message.statusCode ?? 0, statusText: message.statusMessage ?? '', headers });
  // As fetch does: the URL the response came from (the SDK reads it to explain a redirect).
  Object.defineProperty(response, 'url', { value: url.href });
  return response;
}

/**
 * A fetch for the requests beside a connection's own (an OAuth authorization server's discovery,
 * registration and token endpoints): requests to `pinned`'s host go through it; any other host
 * is checked like a server URL (`vetMcpUrl`, with the entry's `allow_private_network`) and sent
 * pinned to the addresses that passed, its small answer read whole (at most 10 MB) before the sockets close.
 */
export function withCheckedOtherHosts(server: string, pinned: McpFetch, home: URL, allowPrivate: boolean, vet: VetMcpUrlOptions): McpFetch {
  return async (input, init) => {
    const url = new URL(input);
    if (url.hostname === home.hostname) return pinned(url, init);
    const other = createPinnedFetch(server, await vetMcpUrl(server, url.href, allowPrivate, vet));
    try {
      const response = await other.fetch(url, init);
      const body = NULL_BODY_STATUSES.has(response.status) ? null : await readBoundedBody(response);
      return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    } finally {
      other.close();
    }
  };
}
