/**
 * The HTTP client the web tools share: one request through the SSRF guard, redirects followed by
 * hand with the capability and address rules checked again for every hop, the body read up to a
 * byte limit. Built on `node:http`/`node:https` (through net-guard.ts's `requestPinned`) because
 * their `lookup` option lets the socket be pinned to the addresses the guard vetted.
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { pipeline, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { z } from 'zod';
import { isGranted } from '../../capabilities/index.ts';
import type { JsonValue, ToolAgent, ToolContext, ToolResult } from '../../contracts/index.ts';
import { CapabilityDeniedError, ConfigError, isLoomError } from '../../errors/index.ts';
import { netConnectFor, netConnectTarget, parseWebUrl, requestPinned, vetDestination } from './net-guard.ts';
import { WebRequestError } from './web-request-error.ts';

/** Bytes of body read when `[tools.<name>] max_content_bytes` is not set. */
export const DEFAULT_MAX_CONTENT_BYTES = 1_000_000;
/** Seconds a web request may take when `[tools.<name>] timeout_seconds` is not set. */
export const DEFAULT_WEB_TIMEOUT_SECONDS = 30;
/** Redirects followed before a request fails. */
export const MAX_REDIRECTS = 5;

/** The statuses whose `location` a client follows. */
export const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);
/** Headers that carry credentials: dropped when a redirect leaves the origin. */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];
/** Headers the client sets itself; a caller's values are ignored. */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection']);

/** The settings every web tool reads from its `[tools.<name>]` table. */
export interface WebSettings {
  maxContentBytes: number;
  timeoutSeconds: number;
}

const WebSettingsSchema = z.looseObject({
  max_content_bytes: z.int().positive().optional(),
  timeout_seconds: z.number().positive().optional(),
});

/** Reads `max_content_bytes` and `timeout_seconds`; throws a ConfigError naming the bad key. */
export function readWebSettings(toolName: string, settings: Readonly<Record<string, JsonValue>>): WebSettings {
  const parsed = WebSettingsSchema.safeParse(settings);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`cannot read [tools.${toolName}]: ${issue?.path.join('.') ?? '?'}: ${issue?.message ?? 'invalid'}`);
  }
  return {
    maxContentBytes: parsed.data.max_content_bytes ?? DEFAULT_MAX_CONTENT_BYTES,
    timeoutSeconds: parsed.data.timeout_seconds ?? DEFAULT_WEB_TIMEOUT_SECONDS,
  };
}

/** One request to make. */
export interface WebRequest {
  url: URL;
  method: string;
  headers: Readonly<Record<string, string>>;
  body?: string | undefined;
}

/** What came back, after redirects. */
export interface WebResponse {
  url: URL;
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** True when the body was longer than the limit and reading stopped there. */
  truncated: boolean;
  /** The URLs redirected from, in order. */
  redirects: URL[];
}

/** How a request runs. */
export interface WebRequestOptions {
  agent: ToolAgent;
  signal: AbortSignal;
  settings: WebSettings;
  /**
   * `follow` (the default) follows redirects here; `manual` returns a redirect response as it is
   * (status and `location`), for a caller that must vet every hop itself, as a forged tool's
   * sandboxed `fetch` does against `[emergent].fetch_domain_allowlist`.
   */
  redirect?: 'follow' | 'manual' | undefined;
}

/**
 * Sends `request` and follows up to MAX_REDIRECTS redirects (none with `redirect: 'manual'`).
 * The first hop's `net_connect` is the tool's `requires` (the runner checked it); every later hop
 * is checked here against the agent's grants. Every hop goes through the SSRF guard.
 *
 * Throws CapabilityDeniedError for a redirect to a host the agent is not granted,
 * NetAddressRefusedError for a refused address, WebRequestError for anything on the wire
 * (including the timeout) and a UsageError for a redirect to a non-http URL.
 */
export async function sendWebRequest(request: WebRequest, options: WebRequestOptions): Promise<WebResponse> {
  const timeout = AbortSignal.timeout(options.settings.timeoutSeconds * 1000);
  const signal = AbortSignal.any([options.signal, timeout]);
  const redirects: URL[] = [];
  let { url, method, body } = request;
  let headers: Record<string, string> = withoutReserved(request.headers);
  try {
    for (;;) {
      if (redirects.length > 0 && !isGranted(options.agent.capabilities, netConnectFor(url))) {
        throw new CapabilityDeniedError(`cannot follow the redirect to "${url.href}": the agent holds no net_connect for "${netConnectTarget(url)}"`, {
          details: { host: url.hostname, target: netConnectTarget(url) },
        });
      }
      const addresses = await vetDestination(url, options.agent.capabilities, signal);
      const response = await requestPinned(url, { method, headers, body, addresses, signal });
      const location = response.headers.location;
      if (!REDIRECT_STATUSES.has(response.statusCode ?? 0) || location === undefined || options.redirect === 'manual') {
        const read = await readBody(response, options.settings.maxContentBytes);
        return {
          url,
          status: response.statusCode ?? 0,
          statusText: response.statusMessage ?? '',
          headers: response.headers,
          ...read,
          redirects,
        };
      }
      response.destroy();
      if (redirects.length >= MAX_REDIRECTS) {
        throw new WebRequestError(`cannot fetch "${request.url.href}": more than ${MAX_REDIRECTS} redirects (last to "${location}")`, {
          details: { url: request.url.href, redirects: MAX_REDIRECTS },
        });
      }
      const next = redirectedRequest({ url, method, headers, body }, response.statusCode ?? 0, parseWebUrl(new URL(location, url).href));
      redirects.push(url);
      ({ url, method, body } = next);
      headers = { ...next.headers };
    }
  } catch (error) {
    if (signal.aborted) {
      const why = options.signal.aborted ? 'the call was aborted' : `timed out after ${options.settings.timeoutSeconds} s`;
      throw new WebRequestError(`cannot fetch "${url.href}": ${why}`, { cause: error, details: { url: url.href }, isRetryable: !options.signal.aborted });
    }
    if (isLoomError(error)) {
      throw error;
    }
    const code = (error as NodeJS.ErrnoException).code;
    const message = error instanceof Error ? error.message : String(error);
    throw new WebRequestError(`cannot fetch "${url.href}": ${code ?? message}`, { cause: error, details: { url: url.href }, isRetryable: true });
  }
}

/**
 * The request a redirect (`status`, to `next`) turns `request` into: credentials dropped when the
 * origin changes; as browsers do, 303 always, and 301/302 after a POST, turn into a GET (a HEAD
 * stays one) without a body or its `content-*` headers. Shared by `sendWebRequest` and by a
 * caller that follows redirects itself (a forged tool's sandboxed `fetch`).
 */
export function redirectedRequest(request: WebRequest, status: number, next: URL): WebRequest {
  let headers = { ...request.headers };
  if (next.origin !== request.url.origin)
    headers = Object.fromEntries(Object.entries(headers).filter(([name]) => !CREDENTIAL_HEADERS.includes(name.toLowerCase())));
  const method = request.method.toUpperCase();
  if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
    return {
      url: next,
      method: method === 'HEAD' ? 'HEAD' : 'GET',
      headers: Object.fromEntries(Object.entries(headers).filter(([name]) => !name.toLowerCase().startsWith('content-'))),
    };
  }
  return { url: next, method: request.method, headers, body: request.body };
}

async function readBody(response: IncomingMessage, maxBytes: number): Promise<{ body: Buffer; truncated: boolean }> {
  const stream = decoded(response);
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const chunk of stream) {
      const buffer = chunk as Buffer;
      if (size + buffer.length > maxBytes) {
        chunks.push(buffer.subarray(0, maxBytes - size));
        size = maxBytes;
        truncated = true;
        break;
      }
      chunks.push(buffer);
      size += buffer.length;
    }
  } finally {
    stream.destroy();
    response.destroy();
  }
  return { body: Buffer.concat(chunks, size), truncated };
}

/** The body with its content-encoding undone; the limit counts decoded bytes, so a small compressed bomb is still cut. */
function decoded(response: IncomingMessage): Readable {
  const encoding = (response.headers['content-encoding'] ?? '').trim().toLowerCase();
  const ignore = (): void => undefined;
  switch (encoding) {
    case 'gzip':
    case 'x-gzip':
      return pipeline(response, createGunzip(), ignore);
    case 'deflate':
      return pipeline(response, createInflate(), ignore);
    case 'br':
      return pipeline(response, createBrotliDecompress(), ignore);
    default:
      return response;
  }
}

function withoutReserved(headers: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !RESERVED_HEADERS.has(name.toLowerCase())));
}

/** The media type of a response, lower case without parameters (`text/html`), or '' when none is given. */
export function mediaType(headers: IncomingHttpHeaders): string {
  return (headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

/** Whether a media type is text the tools may show as is (text/*, JSON, XML, JavaScript, form data). */
export function isTextual(type: string): boolean {
  return (
    type.startsWith('text/') ||
    type === 'application/json' ||
    type.endsWith('+json') ||
    type === 'application/xml' ||
    type.endsWith('+xml') ||
    type === 'application/javascript' ||
    type === 'application/x-www-form-urlencoded' ||
    type === 'application/x-ndjson'
  );
}

/** The body as text, in the charset the content-type names (UTF-8 when none, or an unknown one). */
export function bodyText(response: Pick<WebResponse, 'headers' | 'body'>): string {
  const charset = /charset\s*=\s*"?([^";\s]+)/i.exec(response.headers['content-type'] ?? '')?.[1] ?? 'utf-8';
  try {
    return new TextDecoder(charset).decode(response.body);
  } catch {
    return new TextDecoder('utf-8').decode(response.body);
  }
}

/** Whether a body with no content-type looks like text: no NUL byte in its first 1 KiB. */
export function looksLikeText(body: Buffer): boolean {
  return !body.subarray(0, 1024).includes(0);
}

/** An error result for any failure of a web tool; errors that are not Errors are bugs and rethrown. */
export function webToolFailure(error: unknown, context: ToolContext): ToolResult {
  if (!(error instanceof Error)) {
    throw error;
  }
  context.logger.debug({ err: error }, 'web tool call failed');
  return { text: error.message, isError: true };
}
