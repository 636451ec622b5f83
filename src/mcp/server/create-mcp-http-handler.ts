import { getConnInfo } from '@hono/node-server/conninfo';
import { type AuthInfo, createMcpHandler, type McpRequestContext } from '@modelcontextprotocol/server';
import { Hono } from 'hono';
import type { Config } from '../../config/index.ts';
import type { Logger } from '../../contracts/index.ts';
import { createAuthenticator, type HttpContext, type HttpEnv, type Principal, toErrorResponse } from '../../http/index.ts';
import type { Kernel } from '../../kernel/index.ts';
import { createSilentLogger } from '../../logging/index.ts';
import { type AgentDirectory, kernelAgentDirectory } from './agent-tools.ts';
import { createLoomMcpServer } from './create-loom-mcp-server.ts';
import { mcpPrincipal } from './mcp-principal.ts';
import { createLegacySseEndpoints, type LegacySseEndpoints } from './legacy-sse-endpoints.ts';

/** What the `/mcp` endpoints are built from. */
export interface McpHttpHandlerOptions {
  kernel: Kernel;
  /** `[[auth.keys]]` decide who may call (with `LOOM_API_KEY` from `env`). */
  config: Config;
  env: Readonly<Record<string, string | undefined>>;
  /** Reported as the MCP server's version. */
  version: string;
  logger?: Logger;
  /** Where the agents come from; defaults to `kernel`'s. */
  directory?: AgentDirectory;
  /** The client's address for the Hono routes; defaults to the socket's remote address. */
  clientAddress?: (c: HttpContext) => string;
  /** Where the legacy SSE endpoint tells clients to POST (default `/mcp/messages`). */
  legacyMessagesPath?: string;
}

/** Who a request comes from: its address, and its principal when the caller authenticated it already. */
export interface McpRequestOrigin {
  address: string;
  principal?: Principal | undefined;
}

/** The MCP endpoints of the daemon. */
export interface McpHttpHandler {
  /** `POST|GET|DELETE /mcp`: Streamable HTTP, modern (2026-07-28, stateless) and 2025-era (stateless fallback). */
  fetch(request: Request, origin: McpRequestOrigin): Promise<Response>;
  /** `GET /mcp/sse`: the 2024-11-05 HTTP+SSE transport's event stream. */
  sse(request: Request, origin: McpRequestOrigin): Promise<Response>;
  /** `POST /mcp/messages?sessionId=…`: the 2024-11-05 HTTP+SSE transport's message endpoint. */
  messages(request: Request, origin: McpRequestOrigin): Promise<Response>;
  /** The three routes above as a Hono app, to mount at the root: `app.route('/', handler.routes)`. */
  routes: Hono<HttpEnv>;
  /** Stops following the kernel, closes open streams and in-flight modern exchanges. */
  close(): Promise<void>;
}

const PRINCIPAL_KEY = 'loomPrincipal';

function principalOfContext(ctx: McpRequestContext): Principal {
  const principal = ctx.authInfo?.extra?.[PRINCIPAL_KEY] as Principal | undefined;
  if (principal === undefined) throw new Error('an MCP request reached the server factory without a principal');
  return principal;
}

function socketAddress(c: HttpContext): string {
  try {
    return getConnInfo(c).remote.address ?? '';
  } catch {
    return '';
  }
}

/**
 * Builds the daemon's MCP endpoints over `kernel`: every live agent is a tool
 * `loom_agent_{name}`. Each request is authenticated as the HTTP API's are (`createAuthenticator`:
 * an API key whenever keys are configured, else loopback clients only) unless the caller passes
 * the principal it already authenticated; the principal's role and agent patterns become the
 * kernel caller. Spawns and kills are announced with `notifications/tools/list_changed` on open
 * modern `subscriptions/listen` streams and legacy SSE streams (the stateless 2025-era
 * Streamable HTTP fallback has no stream to announce on: such clients re-list).
 */
export function createMcpHttpHandler(options: McpHttpHandlerOptions): McpHttpHandler {
  const logger = (options.logger ?? createSilentLogger()).child({ component: 'mcp-server' });
  const authenticator = createAuthenticator(options.config, options.env);
  const directory = options.directory ?? kernelAgentDirectory(options.kernel, mcpPrincipal(options.config));
  const factory = (ctx: McpRequestContext) => createLoomMcpServer({ directory, principal: principalOfContext(ctx), version: options.version });
  const onerror = (error: Error): void => logger.debug({ err: error }, 'an MCP request was rejected or failed');
  const modern = createMcpHandler(factory, { onerror });
  const legacySse: LegacySseEndpoints = createLegacySseEndpoints({
    factory: (principal) => createLoomMcpServer({ directory, principal, version: options.version }),
    messagesPath: options.legacyMessagesPath ?? '/mcp/messages',
    onerror,
  });
  const unsubscribe = directory.subscribe(() => {
    modern.notify.toolsChanged();
    legacySse.toolsChanged();
  });

  /** The principal of a request, or the error response refusing it. */
  const authenticate = (request: Request, origin: McpRequestOrigin): Principal | Response => {
    if (origin.principal !== undefined) return origin.principal;
    try {
      const principal = authenticator.authenticate(
        { authorization: request.headers.get('authorization') ?? undefined, apiKey: request.headers.get('x-api-key') ?? undefined, address: origin.address },
        { isPublic: false },
      );
      if (principal === undefined) throw new Error('unreachable: a non-public request always has a principal');
      return principal;
    } catch (error) {
      const { status, body, headers } = toErrorResponse(error, Date.now(), logger);
      return Response.json(body, { status, headers: { ...headers, ...(status === 401 ? { 'www-authenticate': 'Bearer realm="loom"' } : {}) } });
    }
  };
  const authInfoOf = (principal: Principal): AuthInfo => ({ token: '', clientId: principal.name, scopes: [principal.role], extra: { [PRINCIPAL_KEY]: principal } });

  const handler: Omit<McpHttpHandler, 'routes'> = {
    async fetch(request, origin) {
      const principal = authenticate(request, origin);
      if (principal instanceof Response) return principal;
      return modern.fetch(request, { authInfo: authInfoOf(principal) });
    },
    async sse(request, origin) {
      const principal = authenticate(request, origin);
      if (principal instanceof Response) return principal;
      return legacySse.open(request, principal);
    },
    async messages(request, origin) {
      const principal = authenticate(request, origin);
      if (principal instanceof Response) return principal;
      return legacySse.post(request, principal);
    },
    async close() {
      unsubscribe();
      await legacySse.close();
      await modern.close();
    },
  };

  const addressOf = options.clientAddress ?? socketAddress;
  const originOf = (c: HttpContext): McpRequestOrigin => ({ address: addressOf(c), principal: c.get('principal') });
  const routes = new Hono<HttpEnv>();
  routes.get('/mcp/sse', (c) => handler.sse(c.req.raw, originOf(c)));
  routes.post('/mcp/messages', (c) => handler.messages(c.req.raw, originOf(c)));
  routes.on(['POST', 'GET', 'DELETE'], '/mcp', (c) => handler.fetch(c.req.raw, originOf(c)));
  return { ...handler, routes };
}
