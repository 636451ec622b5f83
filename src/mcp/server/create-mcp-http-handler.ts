import { type AuthInfo, createMcpHandler, type McpRequestContext } from '@modelcontextprotocol/server';
import type { Config } from '../../config/index.ts';
import type { Logger } from '../../contracts/index.ts';
import type { Kernel } from '../../kernel/index.ts';
import { createSilentLogger } from '../../logging/index.ts';
import { type AgentDirectory, kernelAgentDirectory } from './agent-tools.ts';
import { createLoomMcpServer } from './create-loom-mcp-server.ts';
import { mcpPrincipal, type McpRequestOrigin } from './mcp-principal.ts';
import { createLegacySseEndpoints, type LegacySseEndpoints } from './legacy-sse-endpoints.ts';

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
}


/** The MCP endpoints of the daemon. */
export interface McpHttpHandler {
  /** `POST|GET|DELETE /mcp`: Streamable HTTP, modern (2026-07-28, stateless) and 2025-era (stateless fallback). */
  fetch(request: Request, origin: McpRequestOrigin): Promise<Response>;
  /** `GET /mcp/sse`: the 2024-11-05 HTTP+SSE transport's event stream. */
  sse(request: Request, origin: McpRequestOrigin): Promise<Response>;
  /** `POST /mcp/messages?sessionId=…`: the 2024-11-05 HTTP+SSE transport's message endpoint. */
  messages(request: Request, origin: McpRequestOrigin): Promise<Response>;
  /** Stops following the kernel, closes open streams and in-flight modern exchanges. */
  close(): Promise<void>;
}

const PRINCIPAL_KEY = 'loomPrincipal';

function originOfContext(ctx: McpRequestContext): McpRequestOrigin {
  const origin = ctx.authInfo?.extra?.[PRINCIPAL_KEY] as McpRequestOrigin | undefined;
  if (origin === undefined) throw new Error('an MCP request reached the server factory without a principal');
  return origin;
}

/**
 * Builds the daemon's MCP endpoints over `kernel`: every live agent is a tool
 * `loom_agent_{name}` and two resources (its session, its last turn). The door mounting them (the
 * HTTP API) authenticates each request first, as it does every other; the principal's role and
 * agent patterns become the kernel caller. Spawns and kills are announced with
 * `notifications/tools/list_changed` and `notifications/resources/list_changed` on open modern
 * `subscriptions/listen` streams and legacy SSE streams (the stateless 2025-era Streamable HTTP
 * fallback has no stream to announce on: such clients re-list).
 */
export function createMcpHttpHandler(options: McpHttpHandlerOptions): McpHttpHandler {
  const logger = (options.logger ?? createSilentLogger()).child({ component: 'mcp-server' });
  const directory = options.directory ?? kernelAgentDirectory(options.kernel, mcpPrincipal(options.config));
  const factory = (ctx: McpRequestContext) => createLoomMcpServer({ directory, ...originOfContext(ctx), version: options.version });
  const onerror = (error: Error): void => logger.debug({ err: error }, 'an MCP request was rejected or failed');
  const modern = createMcpHandler(factory, { onerror });
  const legacySse: LegacySseEndpoints = createLegacySseEndpoints({
    factory: (origin) => createLoomMcpServer({ directory, ...origin, version: options.version }),
    messagesPath: options.legacyMessagesPath ?? '/mcp/messages',
    onerror,
  });
  const unsubscribe = directory.subscribe(() => {
    modern.notify.toolsChanged();
    modern.notify.resourcesChanged();
    legacySse.listsChanged();
  });

  const authInfoOf = (origin: McpRequestOrigin): AuthInfo => ({ token: '', clientId: origin.principal.name, scopes: [origin.principal.role], extra: { [PRINCIPAL_KEY]: origin } });

  return {
    fetch: (request, origin) => modern.fetch(request, { authInfo: authInfoOf(origin) }),
    sse: (request, origin) => legacySse.open(request, origin),
    messages: (request, origin) => legacySse.post(request, origin.principal),
    async close() {
      unsubscribe();
      await legacySse.close();
      await modern.close();
    },
  };
}
