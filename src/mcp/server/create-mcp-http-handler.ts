import { createMcpHandler, DEFAULT_MAX_REQUEST_BODY_SIZE, isJSONRPCRequest, isLegacyRequest, type McpRequestContext } from '@modelcontextprotocol/server';
import { createSystemClock } from '../../clock/index.ts';
import type { Config } from '../../config/index.ts';
import type { Clock, Logger } from '../../contracts/index.ts';
import type { Kernel } from '../../kernel/index.ts';
import { createSilentLogger } from '../../logging/index.ts';
import { safeParseJson } from '../../validation/index.ts';
import { type AgentDirectory, kernelAgentDirectory, mcpThread, wrapCalls } from './agent-tools.ts';
import { createLoomMcpServer, type RequestHandling } from './create-loom-mcp-server.ts';
import { authInfoOf, mcpPrincipal, type McpRequestOrigin, originOfAuthInfo } from './mcp-principal.ts';
import { createLegacySseEndpoints, type LegacySseEndpoints } from './legacy-sse-endpoints.ts';
import { createMcpSessions, MCP_SESSION_HEADER, type McpSessions, type McpSessionsOptions } from './mcp-sessions.ts';

/** What the `/mcp` endpoints are built from. */
export interface McpHttpHandlerOptions {
  kernel: Kernel;
  /** `[mcp_server]`: the principal whose own tools are offered besides the agents. */
  config: Config;
  /** Reported as the MCP server's version. */
  version: string;
  logger?: Logger;
  /** Where the agents come from; defaults to `kernel`'s. */
  directory?: AgentDirectory;
  /** Where the legacy SSE endpoint tells clients to POST (default `/mcp/messages`). */
  legacyMessagesPath?: string;
  /** The clock 2025-era sessions idle out on (the kernel's); the system clock when omitted. */
  clock?: Clock;
  /** The bounds of 2025-era sessions (idle time, sessions per principal, SSE `retry`, events kept); defaults in `mcp-sessions.ts`. */
  sessions?: Pick<McpSessionsOptions, 'idleMs' | 'maxPerPrincipal' | 'retryMs' | 'events'>;
}

/** The MCP endpoints of the daemon. */
export interface McpHttpHandler {
  /**
   * `POST|GET|DELETE /mcp`: Streamable HTTP, modern (2026-07-28, stateless) and 2025-era (an
   * `initialize` opens a session; requests with `Mcp-Session-Id` go to it; a 2025-era request
   * with neither is served by the SDK's stateless fallback). `body` is a POST's body when the
   * caller has read it already: it is parsed once here and the request's own body is not read.
   */
  fetch(request: Request, origin: McpRequestOrigin, body?: string): Promise<Response>;
  /** `GET /mcp/sse`: the 2024-11-05 HTTP+SSE transport's event stream. */
  sse(request: Request, origin: McpRequestOrigin): Promise<Response>;
  /** `POST /mcp/messages?sessionId=…`: the 2024-11-05 HTTP+SSE transport's message endpoint (`body` as for `fetch`). */
  messages(request: Request, origin: McpRequestOrigin, body?: string): Promise<Response>;
  /**
   * Stops following the kernel, closes open streams, sessions and in-flight modern exchanges; from
   * its call on, a new request is answered 503 (the daemon is stopping). The calls under way (an
   * agent's turn, a tool) are let run first, up to `callsWithinMs` of the clock (none by default):
   * one that ends gives its client its result; one still running then is cancelled and answered,
   * as a tool error, that the daemon is stopping. While it waits, a session's DELETE and a POST of
   * notifications (a call's cancel) still reach their session or stream. It waits for the calls
   * alone, never for a client to read: what is answered is written out by the server
   * (`HttpApp.doorsClosed`), and the close ends within `callsWithinMs`.
   */
  close(options?: { callsWithinMs?: number }): Promise<void>;
}

/**
 * The answer to an MCP request once the endpoints have closed: `what` could not be done, and why
 * (JSON-RPC's error shape, with the id of the request's body, `parsed`, when it has one; or plain
 * text for the 2024-11-05 endpoints).
 */
function daemonStopping(what: string, shape: 'json-rpc' | 'text', parsed?: unknown): Response {
  const message = `cannot ${what}: the daemon is stopping`;
  if (shape === 'text') return new Response(message, { status: 503, headers: { 'content-type': 'text/plain; charset=utf-8' } });
  const id = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as { id?: unknown }).id : undefined;
  return Response.json({ jsonrpc: '2.0', error: { code: -32000, message }, id: typeof id === 'string' || typeof id === 'number' ? id : null }, { status: 503 });
}

/** `work`, counted in `running` until it settles. */
function counted<T>(running: Set<Promise<unknown>>, work: Promise<T>): Promise<T> {
  const done = (): void => void running.delete(work);
  running.add(work);
  work.then(done, done);
  return work;
}

/** What the stop cut, in the words its client is told. */
interface CutWork {
  action: string;
  noun: string;
  again: string;
}

const CUT_CALL: CutWork = { action: 'finish the call', noun: 'call', again: 'call again' };
const CUT_READ: CutWork = { action: 'read the session', noun: 'read', again: 'read it again' };

/** Why the stop cancelled `work`, still running `withinMs` after the stop began (0: the stop did not wait). */
function cutMessage(work: CutWork, withinMs: number): string {
  const late = withinMs > 0 ? `, and the ${work.noun} was still running ${withinMs / 1000} s after the stop began` : '';
  return `cannot ${work.action}: the daemon is stopping${late}; it was cancelled, ${work.again} once the daemon is back`;
}

/** The stop's reason for cancelling what still runs: a call's words; {@link cutMessage} gives another request's. */
class CutAtStop extends Error {
  /** How long after the stop began the work was cut (0: the stop did not wait). */
  readonly withinMs: number;

  constructor(withinMs: number) {
    super(cutMessage(CUT_CALL, withinMs));
    this.withinMs = withinMs;
  }
}

/**
 * `directory` whose calls (an agent's turn, a tool) are counted in `running` while they run, and
 * whose calls and session reads end when `stop` aborts (its reason a {@link CutAtStop}): cancelled,
 * and failed at once with the reason, which the client gets as the call's tool error (a read's
 * error, in a read's words).
 */
function stoppableDirectory(directory: AgentDirectory, stop: AbortSignal, running: Set<Promise<unknown>>): AgentDirectory {
  const untilStop = async <T>(signal: AbortSignal, call: (signal: AbortSignal) => Promise<T>, work: CutWork): Promise<T> => {
    const cut = (): Error => (work === CUT_CALL ? (stop.reason as Error) : new Error(cutMessage(work, (stop.reason as CutAtStop).withinMs)));
    if (stop.aborted) throw cut();
    let onStop: () => void = () => undefined;
    const stopped = new Promise<never>((_resolve, reject) => {
      onStop = () => reject(cut());
      stop.addEventListener('abort', onStop, { once: true });
    });
    try {
      return await Promise.race([call(AbortSignal.any([signal, stop])), stopped]);
    } finally {
      stop.removeEventListener('abort', onStop);
    }
  };
  return {
    ...wrapCalls(directory, (signal, call) => counted(running, untilStop(signal, call, CUT_CALL))),
    // A read of a session (a database round trip) is its request's: the request is counted.
    session: (agentName, principal, signal, thread) =>
      untilStop(signal ?? new AbortController().signal, (joined) => directory.session(agentName, principal, joined, thread), CUT_READ),
  };
}

/** Whether `work` settles within `ms` of `clock`. */
function within(clock: Clock, ms: number, work: Promise<unknown>): Promise<boolean> {
  return new Promise((resolve) => {
    const cancel = clock.timer(ms, () => resolve(false));
    void work.then(() => {
      cancel();
      resolve(true);
    });
  });
}

/** Resolves once no request or call of `running` runs, those started while it waits included. */
async function allEnded(running: ReadonlySet<Promise<unknown>>): Promise<void> {
  while (running.size > 0) await Promise.allSettled([...running]);
}

/** Whether a POST's body (parsed) holds a JSON-RPC request, one waiting for an answer; one holding only notifications or answers does not. */
const holdsRequest = (body: unknown): boolean => (Array.isArray(body) ? body : [body]).some((message) => isJSONRPCRequest(message));

function originOfContext(ctx: McpRequestContext): McpRequestOrigin {
  const origin = originOfAuthInfo(ctx.authInfo);
  if (origin === undefined) throw new Error('an MCP request reached the server factory without a principal');
  return origin;
}

/**
 * A POST's body for the SDK, read once: parsed, for the SDK to take as it is (`parsedBody`), or,
 * when it is no JSON, empty, or over the SDK's bound (which the SDK does not apply to a parsed
 * body), the request rebuilt around the text, for the SDK to read and answer as it answers such a
 * body (400 Parse error, 413). Without `body` (not a POST, or not read yet) the request as it is.
 */
async function bodyForSdk(request: Request, body: string | undefined): Promise<{ request: Request; parsed?: unknown }> {
  if (request.method !== 'POST') return { request };
  const text = body ?? (await request.text());
  const parsed = Buffer.byteLength(text, 'utf8') > DEFAULT_MAX_REQUEST_BODY_SIZE ? undefined : safeParseJson(text);
  if (parsed?.ok === true) return { request, parsed: parsed.value };
  const headers = new Headers(request.headers);
  headers.delete('content-length');
  return { request: new Request(request.url, { method: request.method, headers, body: text, signal: request.signal }) };
}

/**
 * Whether a POST (its body parsed) is a 2025-era `initialize` that names no session. A POST whose
 * `MCP-Protocol-Version` names a 2026 or later revision is not one (every modern request carries
 * it; a 2025 `initialize` does not).
 */
async function isLegacyInitialize(request: Request, body: unknown): Promise<boolean> {
  const version = request.headers.get('mcp-protocol-version');
  if (request.method !== 'POST' || (version !== null && !/^202[45]-/.test(version))) return false;
  const isInitialize = typeof body === 'object' && body !== null && !Array.isArray(body) && (body as { method?: unknown }).method === 'initialize';
  // The SDK's own classification decides the era, so the two legs never disagree.
  return isInitialize && (await isLegacyRequest(request, body));
}

/**
 * Builds the daemon's MCP endpoints over `kernel`: every live agent is a tool
 * `loom_agent_{name}` and two resources (its session, its last turn). The door mounting them (the
 * HTTP API) authenticates each request first, as it does every other; the principal's role and
 * agent patterns become the kernel caller. Spawns and kills are announced with
 * `notifications/tools/list_changed` and `notifications/resources/list_changed` on open modern
 * `subscriptions/listen` streams, 2025-era sessions (their `GET` streams) and legacy SSE streams
 * (the stateless 2025-era fallback, for requests outside a session, has no stream to announce on).
 */
export function createMcpHttpHandler(options: McpHttpHandlerOptions): McpHttpHandler {
  const logger = (options.logger ?? createSilentLogger()).child({ component: 'mcp-server' });
  const clock = options.clock ?? createSystemClock();
  /** Aborted when the close has waited for the calls admitted before it as long as it may. */
  const stopCalls = new AbortController();
  /**
   * The requests being handled (whatever their method: a `resources/read` too) and the calls
   * running in them (an agent's turn, a tool): the close lets them finish, for a while.
   */
  const running = new Set<Promise<unknown>>();
  const handling: RequestHandling = (handler) => counted(running, handler());
  const directory = stoppableDirectory(options.directory ?? kernelAgentDirectory(options.kernel, mcpPrincipal(options.config)), stopCalls.signal, running);
  const factory = (ctx: McpRequestContext) => createLoomMcpServer({ directory, ...originOfContext(ctx), version: options.version, handling });
  const onerror = (error: Error): void => logger.debug({ err: error }, 'an MCP request was rejected or failed');
  const modern = createMcpHandler(factory, { onerror });
  const sessions: McpSessions = createMcpSessions({
    directory,
    version: options.version,
    clock,
    ...options.sessions,
    handling,
    onerror,
  });
  const legacySse: LegacySseEndpoints = createLegacySseEndpoints({
    // Each stream is a client session with a conversation of its own.
    factory: (origin, sessionId) => createLoomMcpServer({ directory, ...origin, thread: mcpThread(sessionId), version: options.version, handling }),
    messagesPath: options.legacyMessagesPath ?? '/mcp/messages',
    onerror,
  });
  const unsubscribe = directory.subscribe(() => {
    modern.notify.toolsChanged();
    modern.notify.resourcesChanged();
    legacySse.listsChanged();
    sessions.listsChanged();
  });

  let closed = false;
  /** Sessions and streams being opened: the close waits for them, so that it ends them too. */
  const opening = new Set<Promise<unknown>>();
  const open = (work: Promise<Response>): Promise<Response> => {
    opening.add(work);
    const done = (): void => void opening.delete(work);
    work.then(done, done);
    return work;
  };
  return {
    async fetch(request, origin, body) {
      const sdk = await bodyForSdk(request, body);
      const stopping = (): Response => daemonStopping(request.method === 'GET' ? 'open an MCP stream' : 'answer an MCP request', 'json-rpc', sdk.parsed);
      const parsed = 'parsed' in sdk ? { parsedBody: sdk.parsed } : {};
      if (request.headers.has(MCP_SESSION_HEADER)) {
        // While the stop lets the calls under way finish, a client may still end its session (and
        // cancel its call) or cancel a call (a POST of notifications); once it has ended the
        // sessions, these are answered 404 Session not found, as the SDK answers a session it has ended.
        const stillServed = request.method === 'DELETE' || (request.method === 'POST' && 'parsed' in sdk && !holdsRequest(sdk.parsed));
        return closed && !stillServed ? stopping() : sessions.serve(sdk.request, origin, parsed);
      }
      if ('parsed' in sdk && (await isLegacyInitialize(request, sdk.parsed))) {
        return closed ? daemonStopping('open an MCP session', 'json-rpc', sdk.parsed) : open(sessions.open(sdk.request, origin, sdk.parsed));
      }
      return closed ? stopping() : modern.fetch(sdk.request, { authInfo: authInfoOf(origin), ...parsed });
    },
    sse: (request, origin) => (closed ? Promise.resolve(daemonStopping('open an MCP session', 'text')) : open(legacySse.open(request, origin))),
    async messages(request, origin, body) {
      if (!closed) return legacySse.post(request, origin.principal, body);
      // While the stop lets the calls under way finish, a notification (a call's cancel) still reaches its stream.
      const text = body ?? (await request.text());
      const message = safeParseJson(text);
      if (message.ok !== true || holdsRequest(message.value)) return daemonStopping('answer an MCP message', 'text');
      return legacySse.post(request, origin.principal, text);
    },
    async close(closeOptions = {}) {
      closed = true;
      await Promise.allSettled([...opening]);
      // The requests under way, whatever their method, and their calls (not their clients'
      // reading: the server writes out what is answered) end first; a call or session read still
      // running after `callsWithinMs` is cancelled, and fails at once with the reason, which its
      // client gets as a tool error (a read, as its error).
      const callsWithinMs = closeOptions.callsWithinMs ?? 0;
      if (!(callsWithinMs > 0 && (await within(clock, callsWithinMs, allEnded(running))))) {
        stopCalls.abort(new CutAtStop(callsWithinMs));
        await allEnded(running);
      }
      // The SDK writes a request's answer on its stream a few promise steps after its handler returned; a turn of the event loop lets it.
      await new Promise((resolve) => setImmediate(resolve));
      unsubscribe();
      await sessions.close();
      await legacySse.close();
      await modern.close();
    },
  };
}
