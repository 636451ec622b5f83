import { randomUUID } from 'node:crypto';
import { type Server, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import { type Principal, principalKey } from '../../access/index.ts';
import type { Clock } from '../../contracts/index.ts';
import { isEventStream } from '../../wire/index.ts';
import { type AgentDirectory, mcpThread, wrapCalls } from './agent-tools.ts';
import { createLoomMcpServer, type RequestHandling } from './create-loom-mcp-server.ts';
import { createMcpSessionEventStore, type McpSessionEventLimits } from './mcp-session-event-store.ts';
import { authInfoOf, type McpRequestOrigin } from './mcp-principal.ts';

/** A session with no request, call or stream for this long is closed (on the injected clock). */
export const DEFAULT_MCP_SESSION_IDLE_MS = 30 * 60_000;

/** How many sessions one principal may hold open; past it, its least recently used idle one is closed. */
export const DEFAULT_MCP_SESSIONS_PER_PRINCIPAL = 32;

/** The `retry` field of the sessions' SSE streams: how long a client waits before it reconnects a lost stream. */
export const DEFAULT_MCP_SSE_RETRY_MS = 1000;

/** How often idle sessions are looked for (besides on every request); the idleness itself is judged on the clock. */
const SWEEP_INTERVAL_MS = 60_000;

/** The header naming a 2025-era Streamable HTTP session. */
export const MCP_SESSION_HEADER = 'mcp-session-id';

/** What the sessionful 2025-era leg is built from. */
export interface McpSessionsOptions {
  /** Where the agents come from. */
  directory: AgentDirectory;
  /** Reported as the MCP server's version. */
  version: string;
  /** Idle expiry runs on it (the kernel's clock). */
  clock: Clock;
  /** Default {@link DEFAULT_MCP_SESSION_IDLE_MS}. */
  idleMs?: number;
  /** Default {@link DEFAULT_MCP_SESSIONS_PER_PRINCIPAL}. */
  maxPerPrincipal?: number;
  /** Default {@link DEFAULT_MCP_SSE_RETRY_MS}. */
  retryMs?: number;
  /** The bounds of each session's event store. */
  events?: McpSessionEventLimits;
  /** Runs each request's handler (`LoomMcpServerOptions.handling`). */
  handling?: RequestHandling;
  onerror?: (error: Error) => void;
}

/** The sessionful leg of `/mcp` for 2025-era Streamable HTTP clients. */
export interface McpSessions {
  /** `POST /mcp` with a 2025-era `initialize` (no session yet): opens a session for `origin`'s principal. */
  open(request: Request, origin: McpRequestOrigin, parsedBody: unknown): Promise<Response>;
  /**
   * `POST|GET|DELETE /mcp` with `Mcp-Session-Id`: served by that session when `origin`'s principal
   * opened it, else 404. With `parsed.parsedBody`, a POST's body is that (the request's own is not read).
   */
  serve(request: Request, origin: McpRequestOrigin, parsed?: { parsedBody?: unknown }): Promise<Response>;
  /** Sends `notifications/tools/list_changed` and `notifications/resources/list_changed` to every session. */
  listsChanged(): void;
  /** Closes every session (their running calls are cancelled). */
  close(): Promise<void>;
}

interface Session {
  id: string;
  principal: Principal;
  owner: string;
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  /** When it last saw a request, or a call or stream of it ended (clock time). */
  lastActive: number;
  /** Agent turns and tool calls running for it. */
  running: number;
  /** Its SSE responses still open (POST streams, the `GET` stream, replays). */
  streams: number;
  closed: boolean;
}

const jsonRpcError = (status: number, code: number, message: string): Response =>
  Response.json({ jsonrpc: '2.0', error: { code, message }, id: null }, { status, headers: { 'content-type': 'application/json' } });

/** The SDK transport's own answer to an unknown session, given also to a session of another principal so ids cannot be probed. */
export const sessionNotFound = (): Response => jsonRpcError(404, -32001, 'Session not found');

/** `body` with `onEnd` called once when it ends, fails or is cancelled (the client went away). */
function watchBody(body: ReadableStream<Uint8Array>, onEnd: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await reader.read();
        if (next.done) {
          end();
          controller.close();
        } else {
          controller.enqueue(next.value);
        }
      } catch (error) {
        end();
        controller.error(error);
      }
    },
    async cancel(reason) {
      end();
      await reader.cancel(reason);
    },
  });
}

/**
 * Builds the sessionful leg of `/mcp` for 2025-era Streamable HTTP clients (decision 0027): an
 * `initialize` opens a session (`Mcp-Session-Id`, a random UUID) bound to the principal that
 * sent it, with its own MCP server instance (so `notifications/cancelled` reaches the running
 * call), its own event store (so POST streams start with a priming event and a `retry` field, and
 * a lost stream is resumed with `GET` + `Last-Event-ID`) and a standalone `GET` stream (where
 * `list_changed` notifications go). Every later request must come from the same principal: any
 * other is answered 404 exactly as an unknown session is. A client going away cancels nothing;
 * `DELETE` ends the session and cancels what still runs in it.
 *
 * A session with no request, no running call and no open stream for `idleMs` is closed (judged on
 * `clock`: on every request and once a minute). A principal holds at most `maxPerPrincipal`
 * sessions: a new one closes its least recently used idle session, and is refused (429) when all
 * of them are busy. Sessions live in this process: behind a load balancer, route by
 * `Mcp-Session-Id` to one node.
 */
export function createMcpSessions(options: McpSessionsOptions): McpSessions {
  const { clock } = options;
  const idleMs = options.idleMs ?? DEFAULT_MCP_SESSION_IDLE_MS;
  const maxPerPrincipal = options.maxPerPrincipal ?? DEFAULT_MCP_SESSIONS_PER_PRINCIPAL;
  const retryMs = options.retryMs ?? DEFAULT_MCP_SSE_RETRY_MS;
  const sessions = new Map<string, Session>();
  let sweeper: ReturnType<typeof setInterval> | undefined;

  const report = (error: unknown): void => options.onerror?.(error instanceof Error ? error : new Error(String(error)));
  const isBusy = (session: Session): boolean => session.running > 0 || session.streams > 0;
  const isExpired = (session: Session): boolean => !isBusy(session) && clock.now() - session.lastActive >= idleMs;

  const closeSession = async (session: Session): Promise<void> => {
    if (session.closed) return;
    session.closed = true;
    sessions.delete(session.id);
    if (sessions.size === 0 && sweeper !== undefined) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
    // Closing the transport closes its streams and aborts the calls still running (the SDK's teardown).
    await session.transport.close().catch(report);
    await session.server.close().catch(report);
  };

  const sweep = (): void => {
    for (const session of sessions.values()) if (isExpired(session)) void closeSession(session);
  };

  /** A directory that counts the session's running calls, so a session waiting for a turn is never idle. */
  const trackedDirectory = (session: () => Session | undefined): AgentDirectory =>
    wrapCalls(options.directory, async (signal, call) => {
      const current = session();
      if (current !== undefined) current.running += 1;
      try {
        return await call(signal);
      } finally {
        if (current !== undefined) {
          current.running -= 1;
          current.lastActive = clock.now();
        }
      }
    });

  /** `response` with its SSE body counted among `session`'s open streams until it ends. */
  const watched = (session: Session, response: Response): Response => {
    if (response.body === null || !isEventStream(response)) return response;
    session.streams += 1;
    const body = watchBody(response.body, () => {
      session.streams -= 1;
      session.lastActive = clock.now();
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  /** Initializes under way, per owner: they count against the cap before their session exists. */
  const opening = new Map<string, number>();

  /**
   * Makes room for one more session of `owner`, deciding at once (no await between the count and
   * the reservation, so concurrent initializes cannot overshoot): closes its least recently used
   * idle session when it is at the cap; false when every one of them is busy.
   */
  const makeRoom = (owner: string): boolean => {
    const own = [...sessions.values()].filter((session) => session.owner === owner);
    if (own.length + (opening.get(owner) ?? 0) < maxPerPrincipal) return true;
    const idle = own.filter((session) => !isBusy(session)).sort((a, b) => a.lastActive - b.lastActive)[0];
    if (idle === undefined) return false;
    void closeSession(idle); // leaves the map at once
    return true;
  };

  /**
   * Serves an `initialize` with a new transport and server; the session exists once the transport
   * accepts it, and then `settled` is called (the reservation becomes the session).
   */
  const openSession = async (request: Request, origin: McpRequestOrigin, owner: string, parsedBody: unknown, settled: () => void): Promise<Response> => {
    let session: Session | undefined;
    // Known before the server is made: the session's turns go into a conversation of its own.
    const sessionId = randomUUID();
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => sessionId,
      eventStore: createMcpSessionEventStore(options.events),
      retryInterval: retryMs,
      onsessioninitialized: (id) => {
        // Registered before the initialize is answered, so the client's next request finds it.
        session = { id, principal: origin.principal, owner, transport, server, lastActive: clock.now(), running: 0, streams: 0, closed: false };
        sessions.set(id, session);
        settled();
        sweeper ??= setInterval(sweep, SWEEP_INTERVAL_MS);
        sweeper.unref();
      },
    });
    // The principal is fixed for the session's life; what a turn is charged to comes with each request (see `authInfoOf`).
    const server = createLoomMcpServer({
      directory: trackedDirectory(() => session),
      principal: origin.principal,
      thread: mcpThread(sessionId),
      version: options.version,
      ...(options.handling === undefined ? {} : { handling: options.handling }),
    });
    server.onclose = () => {
      if (session !== undefined) void closeSession(session);
    };
    server.onerror = report;
    await server.connect(transport);
    let response: Response;
    try {
      response = await transport.handleRequest(request, { authInfo: authInfoOf(origin), parsedBody });
    } catch (error) {
      await transport.close().catch(report);
      throw error;
    }
    // Set by `onsessioninitialized` once the transport accepted the initialize.
    const opened = session;
    if (opened === undefined) {
      // Refused before a session existed (not acceptable, a bad body…): nothing to keep.
      await transport.close().catch(report);
      await server.close().catch(report);
      return response;
    }
    return watched(opened, response);
  };

  return {
    async open(request, origin, parsedBody) {
      sweep();
      const owner = principalKey(origin.principal);
      if (!makeRoom(owner)) {
        return jsonRpcError(
          429,
          -32000,
          `cannot open an MCP session for "${origin.principal.name}": it has ${maxPerPrincipal} sessions open and each is running a call or holding a stream; end one (DELETE /mcp with its Mcp-Session-Id) or try again once one is idle`,
        );
      }
      opening.set(owner, (opening.get(owner) ?? 0) + 1);
      let reserved = true;
      const release = (): void => {
        if (!reserved) return;
        reserved = false;
        const left = (opening.get(owner) ?? 1) - 1;
        if (left === 0) opening.delete(owner);
        else opening.set(owner, left);
      };
      try {
        return await openSession(request, origin, owner, parsedBody, release);
      } finally {
        release();
      }
    },

    async serve(request, origin, parsed) {
      sweep();
      const session = sessions.get(request.headers.get(MCP_SESSION_HEADER) ?? '');
      // Another principal's session is answered as one that does not exist: an id is no capability of its own.
      if (session === undefined || session.closed || session.owner !== principalKey(origin.principal)) return sessionNotFound();
      session.lastActive = clock.now();
      return watched(session, await session.transport.handleRequest(request, { authInfo: authInfoOf(origin), ...parsed }));
    },

    listsChanged() {
      for (const session of sessions.values()) {
        void session.server.sendToolListChanged().catch(report);
        void session.server.sendResourceListChanged().catch(report);
      }
    },

    async close() {
      await Promise.all([...sessions.values()].map((session) => closeSession(session)));
    },
  };
}
