import { createMcpHandler, isLegacyRequest, type McpRequestContext, readRequestBody } from '@modelcontextprotocol/server';
import { createSystemClock } from '../../clock/index.ts';
import type { Config } from '../../config/index.ts';
import type { Clock, Logger } from '../../contracts/index.ts';
import type { Kernel } from '../../kernel/index.ts';
import { createSilentLogger } from '../../logging/index.ts';
import { type AgentDirectory, kernelAgentDirectory, mcpThread } from './agent-tools.ts';
import { createLoomMcpServer } from './create-loom-mcp-server.ts';
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
   * with neither is served by the SDK's stateless fallback).
   */
  fetch(request: Request, origin: McpRequestOrigin): Promise<Response>;
  /** `GET /mcp/sse`: the 2024-11-05 HTTP+SSE transport's event stream. */
  sse(request: Request, origin: McpRequestOrigin): Promise<Response>;
  /** `POST /mcp/messages?sessionId=…`: the 2024-11-05 HTTP+SSE transport's message endpoint. */
  messages(request: Request, origin: McpRequestOrigin): Promise<Response>;
  /** Stops following the kernel, closes open streams, sessions and in-flight modern exchanges. */
  close(): Promise<void>;
}

function originOfContext(ctx: McpRequestContext): McpRequestOrigin {
  const origin = originOfAuthInfo(ctx.authInfo);
  if (origin === undefined) throw new Error('an MCP request reached the server factory without a principal');
  return origin;
}

/**
 * The parsed body of a 2025-era `initialize` POST that names no session, else undefined. Reads a
 * clone, so `request` stays readable. A POST whose `MCP-Protocol-Version` names a 2026 or later
 * revision is not read (every modern request carries it; a 2025 `initialize` does not).
 */
async function legacyInitializeBody(request: Request): Promise<unknown> {
  const version = request.headers.get('mcp-protocol-version');
  if (request.method !== 'POST' || (version !== null && !/^202[45]-/.test(version))) return undefined;
  const read = await readRequestBody(request.clone()).catch(() => undefined);
  if (read === undefined || read.tooLarge) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(read.text);
  } catch {
    return undefined; // not JSON: the SDK's handler answers it
  }
  const isInitialize = typeof body === 'object' && body !== null && !Array.isArray(body) && (body as { method?: unknown }).method === 'initialize';
  // The SDK's own classification decides the era, so the two legs never disagree.
  return isInitialize && (await isLegacyRequest(request, body)) ? body : undefined;
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
  const directory = options.directory ?? kernelAgentDirectory(options.kernel, mcpPrincipal(options.config));
  const factory = (ctx: McpRequestContext) => createLoomMcpServer({ directory, ...originOfContext(ctx), version: options.version });
  const onerror = (error: Error): void => logger.debug({ err: error }, 'an MCP request was rejected or failed');
  const modern = createMcpHandler(factory, { onerror });
  const sessions: McpSessions = createMcpSessions({
    directory,
    version: options.version,
    clock: options.clock ?? createSystemClock(),
    ...options.sessions,
    onerror,
  });
  const legacySse: LegacySseEndpoints = createLegacySseEndpoints({
    // Each stream is a client session with a conversation of its own.
    factory: (origin, sessionId) => createLoomMcpServer({ directory, ...origin, thread: mcpThread(sessionId), version: options.version }),
    messagesPath: options.legacyMessagesPath ?? '/mcp/messages',
    onerror,
  });
  const unsubscribe = directory.subscribe(() => {
    modern.notify.toolsChanged();
    modern.notify.resourcesChanged();
    legacySse.listsChanged();
    sessions.listsChanged();
  });

  return {
    async fetch(request, origin) {
      if (request.headers.has(MCP_SESSION_HEADER)) return sessions.serve(request, origin);
      const initialize = await legacyInitializeBody(request);
      if (initialize !== undefined) return sessions.open(request, origin, initialize);
      return modern.fetch(request, { authInfo: authInfoOf(origin) });
    },
    sse: (request, origin) => legacySse.open(request, origin),
    messages: (request, origin) => legacySse.post(request, origin.principal),
    async close() {
      unsubscribe();
      await sessions.close();
      await legacySse.close();
      await modern.close();
    },
  };
}
