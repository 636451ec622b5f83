import type { ServerResponse } from 'node:http';
import { getConnInfo } from '@hono/node-server/conninfo';
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Config } from '../config/index.ts';
import { LOOM_VERSION } from '../config/installation.ts';
import type { Clock, Logger } from '../contracts/index.ts';
import { callerOf, type Kernel, type OfferedSkills } from '../kernel/index.ts';
import { createAgentRoutes } from './agent-routes.ts';
import { createManifestRoutes } from './manifest-routes.ts';
import { createApprovalRoutes } from './approval-routes.ts';
import { answerWebhook, createChannelRoutes } from './channel-routes.ts';
import { createForgedToolRoutes } from './forged-tool-routes.ts';
import { createPackageRoutes } from './package-routes.ts';
import type { PackageService } from '../packages/index.ts';
import type { ChannelService } from '../channels/index.ts';
import { createAuthenticator, isLoopbackBind, type Principal } from '../access/index.ts';
import { type HttpContext, type HttpEnv, kernelOf, principalOf } from './http-context.ts';
import { createHostGuard, createProxySign } from './host-guard.ts';
import { RateLimiter } from './rate-limiter.ts';
import { API_SECURITY_HEADERS } from './security-headers.ts';
import { startRequestDeadline } from './request-deadline.ts';
import { plainPath, serveDashboard } from './serve-dashboard.ts';
import { ALREADY_SENT_HEADER } from './response-already-sent.ts';
import { headContentLength } from './head-content-length.ts';
// An entry past the index: the SDKs load on first use (test/architecture/lazy-sdks.test.ts).
import { listExternalAgents } from '../a2a/external-agents.ts';
import { isPublicA2aPath } from '../a2a/public-paths.ts';
import { hasUnfinishedTasks } from '../a2a/unfinished-tasks.ts';
import type { A2aPushConfigRepository, ClusterReader, EventRepository, Leadership, TaskRepository } from '../contracts/index.ts';
import type { McpServerStatus } from '../mcp/index.ts';
import { mcpServersView } from './mcp-servers-view.ts';
import { createOpenAiRoutes, toOpenAiErrorResponse } from './openai/index.ts';
import { createSystemRoutes } from './system-routes.ts';
import { createOpenApiRoutes } from './openapi-routes.ts';
import { createMetricsRoutes } from './metrics-routes.ts';
import type { LoomMetrics } from '../telemetry/index.ts';
// The light half of the telemetry module: the SDK loads only when tracing starts.
import { withRemoteParent } from '../telemetry/spans.ts';
import { jsonTextDepth, MAX_JSON_DEPTH, safeDecodeUriComponent, tooDeepMessage, trimTrailingSlashes } from '../validation/index.ts';
import { HttpRequestError, toErrorResponse } from '../errors/index.ts';
import { answeredMethod, isEventStream, type McpServerView } from '../wire/index.ts';

/** What the HTTP API is built from. It reads no globals: the environment is passed in. */
export interface HttpAppOptions {
  kernel: Kernel;
  config: Config;
  /** Where API keys' secrets are read (`[[auth.keys]].key_env`, `LOOM_API_KEY`). */
  env: Readonly<Record<string, string | undefined>>;
  /** Rate limits and request timeouts run on it. */
  clock: Clock;
  logger: Logger;
  /** Reported by `/api/health`; defaults to package.json's. */
  version?: string;
  /** The client's address; defaults to the socket's remote address (tests inject others). */
  clientAddress?: (c: HttpContext) => string;
  /** The daemon's metrics, served at `GET /metrics` (made and disposed of by whoever runs the daemon); without them no such route. */
  metrics?: LoomMetrics;
  /** The MCP servers' connections, for `GET /api/mcp/servers`. */
  mcp?: { servers(): McpServerStatus[]; reconnect(server: string): boolean };
  /** Where A2A tasks are kept (the store's `tasks`); in memory when omitted. */
  tasks?: TaskRepository;
  /** Where A2A push-notification configs are kept (the store's `a2aPushConfigs`); in memory when omitted. */
  a2aPushConfigs?: A2aPushConfigRepository;
  /** The audit log A2A push deliveries are recorded in (the store's `events`); not recorded when omitted. */
  events?: EventRepository;
  /** The address the server binds, which decides the names it answers; defaults to `[daemon].host`. */
  bindHost?: string;
  /** Agent packages, for `/api/packages`; without them those routes answer 404. */
  packages?: PackageService;
  /** Channels, for `/api/channels` and the webhooks' `/hooks/<name>`; without them those answer 404. */
  channels?: ChannelService;
  /** The installed skills a manifest's `skills` offer (the runtime's), shown in an agent's detail; without it, not shown. */
  skills?: ((allowlist: readonly string[]) => Promise<OfferedSkills>) | undefined;
  /** The nodes sharing the store, for `/api/cluster` (without them that answers 404), and whether others run now. */
  cluster?: ClusterReader & Pick<Leadership, 'othersAlive'>;
  /** Each running turn is leased to its node (`Host.leasesTurns`): A2A's recovery leaves a task's turn to its lease. */
  leasesTurns?: boolean;
  /**
   * Aborted when the daemon stops: the MCP endpoints, if built, close (the calls running in them
   * get {@link MCP_CALLS_DRAIN_MS} to finish, then are cancelled; then their sessions and streams
   * end); the A2A server, if built, stops waiting for the turns of tasks a previous daemon left
   * (those tasks stay as they are, for the next start); the tasks it runs end with the kernel's
   * shutdown.
   */
  closing?: AbortSignal;
}

/** Loom's HTTP API (a Hono app), and when its doors have closed at the daemon's stop. */
export interface HttpApp extends Hono<HttpEnv> {
  /**
   * Resolves once the doors that `closing` closes have closed and their answers have been written
   * out (the MCP endpoints: their sessions and streams ended, so that their clients read each
   * stream to its end before the server cuts the connections left), and at most
   * {@link MCP_DRAIN_MS} of the clock after it is called (a client that reads too slowly); at once
   * when none was open or `closing` is not aborted.
   */
  doorsClosed(): Promise<void>;
  /**
   * Resolves once what the doors still deliver of work done is delivered, or its time is up (the
   * A2A webhooks of tasks that ended: `A2aServer.drain`, 10 s at most): the daemon's stop, before
   * the store closes.
   */
  deliveriesDone(): Promise<void>;
}

/** How long the daemon's stop waits at most for the MCP endpoints to close and their last answers to be written out, before it cuts their connections. */
export const MCP_DRAIN_MS = 2000;

/**
 * Of {@link MCP_DRAIN_MS}, how long an MCP call admitted before the stop (a `tools/call` under way)
 * may run on to give its client its result; then it is cancelled and answered that the daemon is
 * stopping, in the time left.
 */
export const MCP_CALLS_DRAIN_MS = 1500;

/** Resolves once every response of `responses` has been written out or cut (Node's `close`). */
function writtenOut(responses: ReadonlySet<ServerResponse>): Promise<void> {
  return Promise.all([...responses].map((response) => new Promise((resolve) => response.once('close', resolve)))).then(() => undefined);
}

/** Builds a value on first use, once (concurrent first uses share the build). */
function once<T>(build: () => Promise<T>): () => Promise<T> {
  let built: Promise<T> | undefined;
  return () => (built ??= build());
}

/** Where the API's principal travels to the A2A app (in its env, next to the Node request and response). */
const A2A_PRINCIPAL = 'loomPrincipal';
/** Where the request's `chargeTurn` travels to the A2A app, next to its principal. */
const A2A_CHARGE_TURN = 'loomChargeTurn';
/** Where the POST body the API read for the A2A app travels to it (see `withDoorBody`), next to its principal. */
const A2A_BODY = 'loomBody';
type A2aEnv = { [A2A_PRINCIPAL]?: Principal | undefined; [A2A_CHARGE_TURN]?: (() => void) | undefined; [A2A_BODY]?: string | undefined };

/** A2A requests that may stream (JSON-RPC to an agent, `message:stream`, `:subscribe`): no request deadline. */
function isA2aStream(method: string, path: string, listenPath: string): boolean {
  if (method !== 'POST' && method !== 'GET') return false;
  // At `/`, an agent's endpoint is `/<agent>` (a one-segment path of the API's own, such as
  // /metrics, is let through untimed too: none of them is slow).
  const base = listenPath === '/' ? '' : listenPath;
  if (!path.startsWith(`${base}/`)) return false;
  // As the bindings read it: decoded (`%3Asubscribe`), without trailing slashes.
  const rest = trimTrailingSlashes(safeDecodeUriComponent(path.slice(base.length + 1)) ?? '');
  return !rest.includes('/') || rest.endsWith('message:stream') || rest.endsWith(':subscribe');
}

/**
 * A door whose SDK parses the body itself (MCP's endpoints, A2A's), handed its POST body as text,
 * read here once: the door parses that text (or hands it on parsed), never the request again. The
 * text is measured first, as readJsonBody does for Loom's own routes, so nothing nested past
 * MAX_JSON_DEPTH reaches a walker: that is answered 400 with a JSON-RPC error. Other methods are
 * handed no body.
 */
function withDoorBody(serve: (c: HttpContext, body: string | undefined) => Promise<Response>): (c: HttpContext) => Promise<Response> {
  return async (c) => {
    if (c.req.method !== 'POST') return serve(c, undefined);
    const body = await c.req.text();
    if (jsonTextDepth(body) <= MAX_JSON_DEPTH) return serve(c, body);
    return c.json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: `cannot read the request body: ${tooDeepMessage('it')}` } }, 400);
  };
}

/**
 * Whether a path no route took names A2A's listen path once read plainly (`plainPath`: `/a2a%2Fx`,
 * `//a2a/x`), as the dashboard reads such a path: then its 404 is A2A's. Never with A2A off, nor at
 * `/`, where A2A takes every path.
 */
function a2aPathSpelling(listenPath: string | undefined): (path: string) => boolean {
  if (listenPath === undefined || listenPath === '/') return () => false;
  return (path) => {
    const plain = plainPath(path);
    return plain !== undefined && (plain === listenPath || plain.startsWith(`${listenPath}/`));
  };
}

/**
 * Rate-limit costs by route (spec: message 30, spawn 50, health 1, anything else 5). A request
 * that starts a turn costs a message however it is spelled: the API's own routes by their paths
 * (see `costOf`), MCP and A2A by `chargeTurn` where the turn starts, once their servers have
 * read the request.
 */
export const ROUTE_COSTS = { message: 30, spawn: 50, health: 1, other: 5 } as const;

const PUBLIC_PATHS = new Set(['/api/health']);

/** A webhook channel's inbound POST (`/hooks/<name>`). */
function isWebhookPath(method: string, path: string): boolean {
  return method === 'POST' && /^\/hooks\/[a-z0-9][a-z0-9_-]*$/.test(path);
}
/** Long-lived streams with no request timeout. */
// Streams that stay open: the event log, and MCP's SSE and subscription streams.
const UNTIMED_PATHS = new Set(['/api/events', '/mcp', '/mcp/sse']);

/** The API's own routes that start a turn (a message, a workflow command, a package binding's run, a chat completion). */
const TURN_ROUTES: readonly RegExp[] = [
  /^\/api\/agents\/[^/]+\/messages$/,
  /^\/api\/agents\/[^/]+\/workflow\/[^/]+$/,
  /^\/api\/packages\/[^/]+\/bindings\/[^/]+\/run$/,
  /^\/v1\/chat\/completions$/,
];

/**
 * What a request costs at the door. The API's routes are priced by path (trailing slashes
 * dropped, so no spelling of a turn's route is priced as a read). MCP and A2A requests are
 * protocol messages, priced like reads: one that starts a turn pays the rest where the turn
 * starts, once their servers have read it (see `chargeTurn`), whatever path or binding it came by.
 */
function costOf(method: string, rawPath: string): number {
  const path = trimTrailingSlashes(rawPath);
  if (path === '/api/health') return ROUTE_COSTS.health;
  if (method !== 'POST') return ROUTE_COSTS.other;
  if (path === '/api/agents' || path === '/api/packages') return ROUTE_COSTS.spawn;
  if (TURN_ROUTES.some((route) => route.test(path))) return ROUTE_COSTS.message;
  return ROUTE_COSTS.other;
}

function socketAddress(c: HttpContext): string {
  try {
    return getConnInfo(c).remote.address ?? '';
  } catch {
    // Not served by @hono/node-server (e.g. `app.request()` in-process): no address is known.
    return '';
  }
}

/**
 * Builds Loom's HTTP API (a Hono app; serve it with {@link startHttpServer}). Every error,
 * from the kernel or from the request itself, is answered as `{ error: { code, message } }`
 * by {@link toErrorResponse}. Order of checks: the Host and Origin (see `createHostGuard`), who
 * is asking (loopback or API key), their
 * rate, the body size, then the route, which asks the kernel what the caller may do.
 *
 * @example
 * const app = createHttpApp({ kernel, config, env: process.env, clock, logger });
 * const server = await startHttpServer(app, { host: '127.0.0.1', port: 4200 });
 */
export function createHttpApp(options: HttpAppOptions): HttpApp {
  const { kernel, config, clock } = options;
  const logger = options.logger.child({ component: 'http' });
  const authenticator = createAuthenticator(config, options.env);
  const limiter = new RateLimiter(config.rate_limit.per_minute, () => clock.now());
  const addressOf = options.clientAddress ?? socketAddress;
  const timeoutMs = config.daemon.request_timeout_seconds * 1000;

  /** @throws {HttpRequestError} `RATE_LIMITED` (429, with Retry-After) when `client` is out of units. */
  const takeUnits = (client: string, cost: number): void => {
    const decision = limiter.take(client, cost);
    if (decision.allowed) return;
    const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    throw new HttpRequestError(
      'RATE_LIMITED',
      `too many requests from ${client.replace(':', ' ')}: the limit is ${config.rate_limit.per_minute} units per minute; retry in ${seconds} s`,
      {
        details: { retryAfterSeconds: seconds },
      },
    );
  };

  const app = new Hono<HttpEnv>();

  const respond = (c: Context, error: unknown): Response => {
    // The OpenAI-compatible routes answer errors in OpenAI's shape, so its clients raise their own errors.
    const toResponse = c.req.path === '/v1' || c.req.path.startsWith('/v1/') ? toOpenAiErrorResponse : toErrorResponse;
    const { status, body, headers } = toResponse(error, clock.now(), logger);
    return c.json(body, status as 400, headers);
  };
  app.onError((error, c) => respond(c, error));
  /**
   * A2A's answer to a path under its listen path that no A2A route takes; one spelled with
   * percent-escaped or doubled slashes is told how to write it.
   */
  const a2aNotFound = (c: Context): Response => {
    const { path } = c.req;
    const method = answeredMethod(c.req.method);
    const plain = plainPath(path);
    // Only a slash escaped or doubled: another escape (`%3A`, `%25`) is a path written as it should be.
    const fix =
      plain === undefined || !/%2F|\/\//i.test(path)
        ? ''
        : `; write A2A's paths with single, unescaped slashes under ${config.a2a.listen_path}: ${method} ${plain}`;
    return respond(c, new HttpRequestError('ROUTE_NOT_FOUND', `no A2A route ${method} ${path}${fix}`));
  };
  const namesA2aPath = a2aPathSpelling(config.a2a.enabled ? config.a2a.listen_path : undefined);
  app.notFound((c) =>
    // The listen path spelled with percent-escapes or doubled slashes (`/a2a%2Fx`, `//a2a/x`) reaches no A2A route, but is A2A's 404.
    namesA2aPath(c.req.path)
      ? a2aNotFound(c)
      : respond(
          c,
          new HttpRequestError('ROUTE_NOT_FOUND', `no route ${answeredMethod(c.req.method)} ${c.req.path}; the API lives under /api (e.g. GET /api/agents)`),
        ),
  );

  // A caller's W3C `traceparent` makes the spans of its request (a turn's) children of its span.
  app.use('*', (c, next) => withRemoteParent(c.req.raw.headers, next));
  // Around every answer, refusals and errors included: a HEAD tells the length its GET would have.
  app.use('*', headContentLength);
  // Around everything, so that refusals (a forged Host, 401, 429) and errors carry them too; the
  // dashboard's files carry their own, wider policy.
  app.use('*', async (c, next) => {
    await next();
    // An answer a route wrote on Node's response has them there: a turn's stream (sse-reply.ts), the A2A 0.3 router's (`forward` below).
    if (c.res.headers.has('content-security-policy') || c.res.headers.has(ALREADY_SENT_HEADER)) return;
    for (const [name, value] of API_SECURITY_HEADERS) c.res.headers.set(name, value);
  });
  // First of all: a request a web page could have forged reaches nothing, not even the dashboard.
  const bindHost = options.bindHost ?? config.daemon.host;
  app.use('*', createHostGuard({ bindHost, allowedHosts: config.http.allowed_hosts, allowedOrigins: config.http.allowed_origins, keyed: authenticator.keyed }));
  if (!authenticator.keyed && !isLoopbackBind(bindHost)) {
    // Served, as documented (e.g. in a container): only loopback clients asking for a loopback name or the bound address are the owner.
    logger.warn(
      { host: bindHost },
      `listening on "${bindHost}" with no API key: only clients on this machine are served, as the owner, and only for the names localhost, 127.0.0.1, [::1] and "${bindHost}"; to serve other machines, set LOOM_API_KEY or add [[auth.keys]] to config.toml`,
    );
  }
  if (!authenticator.keyed && config.http.allowed_hosts.length > 0) {
    logger.warn(
      { allowedHosts: config.http.allowed_hosts },
      "serving [http].allowed_hosts with no API key: requests for those names, or carrying a proxy's forwarding headers, reach only the public routes (health, webhooks, the agent card), since a proxy on this machine would make every client it serves the owner; a proxy that adds no such header and passes a loopback Host is not seen: behind a proxy, set LOOM_API_KEY or add [[auth.keys]] to config.toml",
    );
  }
  // Static files only (no data): public, like /api/health. Under A2A's listen path A2A answers,
  // unknown paths with its own 404; at `/` it answers every path that is not a dashboard file.
  const a2aPaths = config.a2a.listen_path === '/' ? [] : [config.a2a.listen_path];
  const a2aAtRoot = config.a2a.enabled && config.a2a.listen_path === '/';
  app.use('*', serveDashboard(options.env['LOOM_DASHBOARD_DIR'], { apiPaths: [...a2aPaths, '/metrics'], filesOnly: a2aAtRoot }));
  // With no key, what looks forwarded by a proxy is not the local owner (see `createProxySign`).
  const proxySign = authenticator.keyed ? undefined : createProxySign(config.http.allowed_hosts);
  app.use('*', async (c: HttpContext, next) => {
    const address = addressOf(c);
    const cost = costOf(c.req.method, c.req.path);
    let principal: Principal | undefined;
    try {
      principal = authenticator.authenticate(
        {
          authorization: c.req.header('authorization'),
          apiKey: c.req.header('x-api-key'),
          address,
          ...(proxySign === undefined ? {} : { proxied: proxySign((name) => c.req.header(name)) }),
        },
        // A webhook is authenticated by its signature, not a key (see `answerWebhook`).
        {
          isPublic:
            PUBLIC_PATHS.has(c.req.path) ||
            isWebhookPath(c.req.method, c.req.path) ||
            (config.a2a.enabled && isPublicA2aPath(c.req.method, c.req.path, config.a2a.listen_path)) ||
            (config.telemetry.metrics_public && c.req.path === '/metrics'),
        },
      );
    } catch (error) {
      // A refused request still costs its address, so keys cannot be guessed at full speed.
      takeUnits(`ip:${address}`, cost);
      throw error;
    }
    c.set('principal', principal);
    // The local user (a loopback client when no key is configured) is not limited unless asked.
    const limited = authenticator.keyed || principal === undefined || config.rate_limit.loopback;
    const client = principal !== undefined && authenticator.keyed ? `key:${principal.name}` : `ip:${address}`;
    c.set('charge', limited ? (units) => takeUnits(client, units) : () => undefined);
    c.get('charge')(cost);
    await next();
  });

  const maxBodyBytes = config.daemon.body_limit_bytes;
  const bodyTooLarge = (c: Context): Response =>
    respond(c, new HttpRequestError('BODY_TOO_LARGE', `the request body is larger than ${maxBodyBytes} bytes ([daemon].body_limit_bytes)`));
  const limitStreamedBody = bodyLimit({ maxSize: maxBodyBytes, onError: bodyTooLarge });
  const checkBodySize: MiddlewareHandler = (c, next) => {
    // Hono's check reads the request's `body` first, which makes the Node adapter build a web
    // Request and a stream around the socket for every request (profiled under http-turn: 2-3 % of
    // the daemon's CPU). A body of declared length is checked from its header (Node's parser
    // delivers exactly that many bytes), as Hono's check does next; a GET or HEAD without one has
    // no body; a chunked body is counted by Hono's check as it arrives.
    if (c.req.header('transfer-encoding') === undefined) {
      const length = c.req.header('content-length');
      if (length !== undefined) return Number.parseInt(length, 10) > maxBodyBytes ? Promise.resolve(bodyTooLarge(c)) : next();
      if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    }
    return limitStreamedBody(c, next);
  };
  app.use('*', checkBodySize);

  app.use('*', async (c, next) => {
    if (UNTIMED_PATHS.has(c.req.path) || isA2aStream(c.req.method, c.req.path, config.a2a.listen_path)) {
      c.set('deadline', {
        signal: c.req.raw.signal,
        timeLimit: new AbortController().signal,
        expired: new Promise<never>(() => undefined),
        dispose: () => undefined,
      });
      await next();
      return;
    }
    const deadline = startRequestDeadline(clock, timeoutMs, () => c.req.raw.signal);
    c.set('deadline', deadline);
    try {
      await Promise.race([next(), deadline.expired]);
    } finally {
      // A streamed reply keeps its deadline until the stream ends (its handler disposes it). A HEAD's
      // answer is its headers alone, whatever its type: no stream follows to let the deadline go.
      if (c.req.method === 'HEAD' || !isEventStream(c.res)) deadline.dispose();
    }
  });

  app.route(
    '/api',
    createSystemRoutes({
      kernel,
      clock,
      version: options.version ?? LOOM_VERSION,
      timezone: options.config.scheduler.timezone,
      ...(options.cluster === undefined ? {} : { cluster: options.cluster }),
    }),
  );
  app.route('/api', createOpenApiRoutes({ version: options.version ?? LOOM_VERSION, a2aPath: config.a2a.enabled ? config.a2a.listen_path : null }));
  if (options.metrics !== undefined) app.route('/', createMetricsRoutes({ kernel, metrics: options.metrics, metricsPublic: config.telemetry.metrics_public }));
  // Read at each request: a running daemon follows [default_model] in config.toml.
  const readiness = {
    get defaultModel() {
      return config.default_model;
    },
    env: options.env,
  };
  app.route('/api/agents', createAgentRoutes({ kernel, clock, readiness, skills: options.skills }));
  app.route('/api/manifests', createManifestRoutes({ readiness }));
  app.route('/api/approvals', createApprovalRoutes({ kernel }));
  app.route('/api/tools/forged', createForgedToolRoutes({ kernel }));
  if (options.packages !== undefined) app.route('/api/packages', createPackageRoutes({ packages: options.packages, kernel }));
  if (options.channels !== undefined) app.route('/api/channels', createChannelRoutes({ channels: options.channels, kernel }));
  app.post('/hooks/:channel', (c) => answerWebhook(options.channels, c.req.param('channel'), c.req.raw));
  app.get('/api/mcp/servers', (c) => {
    kernelOf(c, kernel).require('list the MCP servers');
    return c.json(mcpServersView(options.config, options.mcp) satisfies { configured: McpServerView[]; connected: McpServerView[] });
  });
  // `loom mcp login` calls this once it has the tokens, so the server connects without waiting for its backoff.
  app.post('/api/mcp/servers/:name/reconnect', (c) => {
    const name = c.req.param('name');
    kernelOf(c, kernel).require('reconnect MCP servers');
    if (!config.mcp_servers.some((entry) => entry.name === name))
      throw new HttpRequestError('MCP_SERVER_NOT_FOUND', `no MCP server named "${name}" is configured ([[mcp_servers]] in config.toml)`);
    if (options.mcp === undefined)
      throw new HttpRequestError('MCP_SERVER_NOT_FOUND', `MCP server "${name}" is configured but this daemon does not connect MCP servers`);
    if (!options.mcp.reconnect(name)) {
      const refused = options.mcp.servers().find((server) => server.name === name)?.error;
      throw new HttpRequestError(
        'MCP_SERVER_REFUSED',
        `MCP server "${name}" was refused and is not retried${refused === undefined ? '' : ` (${refused})`}: fix its [[mcp_servers]] entry and restart the daemon`,
      );
    }
    return c.body(null, 204);
  });
  app.route('/v1', createOpenAiRoutes({ kernel, clock, logger }));
  const version = options.version ?? LOOM_VERSION;
  let mcpClosed: Promise<void> | undefined;
  let a2aDrain: (() => Promise<void>) | undefined;
  const mcp = once(async () => {
    const { createMcpHttpHandler } = await import('../mcp/server/index.ts');
    const handler = createMcpHttpHandler({ kernel, config, version, logger, clock });
    // The daemon's stop (maybe while this was built): its calls get a while to finish, then its sessions and streams end, and it stops following the kernel.
    const close = (): void => {
      mcpClosed = handler
        .close({ callsWithinMs: MCP_CALLS_DRAIN_MS })
        .catch((error: unknown) => logger.warn({ err: error }, 'could not close the MCP endpoints'));
    };
    if (options.closing?.aborted === true) close();
    else options.closing?.addEventListener('abort', close, { once: true });
    return handler;
  });
  /** Charges the request's client for the turn it starts, beyond the read its request was priced as at the door. */
  const chargeTurn = (c: HttpContext) => () => c.get('charge')(ROUTE_COSTS.message - ROUTE_COSTS.other);
  const mcpOrigin = (c: HttpContext) => ({ principal: principalOf(c), chargeTurn: chargeTurn(c) });
  /** Node's responses to MCP requests not yet written out, which the daemon's stop lets finish (`doorsClosed`). */
  const mcpResponses = new Set<ServerResponse>();
  const mcpDoor = (serve: (c: HttpContext, body: string | undefined) => Promise<Response>) =>
    withDoorBody((c, body) => {
      const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
      if (outgoing !== undefined) {
        mcpResponses.add(outgoing);
        outgoing.once('close', () => mcpResponses.delete(outgoing));
      }
      return serve(c, body);
    });
  app.get(
    '/mcp/sse',
    mcpDoor(async (c) => (await mcp()).sse(c.req.raw, mcpOrigin(c))),
  );
  app.post(
    '/mcp/messages',
    mcpDoor(async (c, body) => (await mcp()).messages(c.req.raw, mcpOrigin(c), body)),
  );
  app.on(
    ['POST', 'GET', 'DELETE'],
    '/mcp',
    mcpDoor(async (c, body) => (await mcp()).fetch(c.req.raw, mcpOrigin(c), body)),
  );
  app.get('/api/a2a/external', (c) => {
    kernelOf(c, kernel).require('list the external A2A agents');
    return c.json(listExternalAgents());
  });
  if (config.a2a.enabled) {
    // The A2A routes are an app of their own, built on the first A2A request (or at start, when tasks wait
    // for recovery: below); the caller rides in its env.
    const a2a = once(async () => {
      const { createA2aServer, InMemoryA2aPushConfigRepository, InMemoryA2aTaskRepository } = await import('../a2a/index.ts');
      const { events, cluster } = options;
      const server = createA2aServer({
        kernel,
        config,
        repository: options.tasks ?? new InMemoryA2aTaskRepository(),
        logger,
        now: () => clock.now(),
        push: {
          repository: options.a2aPushConfigs ?? new InMemoryA2aPushConfigRepository(),
          clock,
          record: events === undefined ? undefined : (event) => events.append(event),
        },
        clock,
        othersAlive: cluster === undefined ? undefined : () => cluster.othersAlive(),
        leasesTurns: options.leasesTurns,
        keyed: authenticator.keyed,
        callerOf: (c) => {
          const principal = (c.env as A2aEnv | undefined)?.[A2A_PRINCIPAL];
          return principal === undefined ? undefined : callerOf(principal);
        },
        chargeTurn: (c) => (c.env as A2aEnv | undefined)?.[A2A_CHARGE_TURN]?.(),
        bodyOf: (c) => (c.env as A2aEnv | undefined)?.[A2A_BODY],
      });
      const inner = new Hono();
      // A HEAD the A2A app answers itself (its Hono answers it without the body) tells its GET's length too.
      inner.use('*', headContentLength);
      inner.route('/', server.publicRoutes);
      inner.route('/', server.routes);
      inner.notFound(a2aNotFound);
      inner.onError((error, c) => respond(c, error));
      a2aDrain = () => server.drain();
      // The daemon's stop (maybe while this was built): no more waiting on turns of tasks a previous daemon left.
      if (options.closing?.aborted === true) server.stopRecovery();
      else options.closing?.addEventListener('abort', () => server.stopRecovery(), { once: true });
      return inner;
    });
    // Tasks a previous daemon left unfinished meet their turns at start (src/a2a/task-recovery.ts),
    // not at the first A2A request: a client that only waits for its webhook is told too, and a
    // turn's key is not forgotten first. A daemon with none builds the A2A server when asked.
    const { tasks } = options;
    if (tasks !== undefined) {
      void hasUnfinishedTasks(tasks)
        .then((some) => (some && options.closing?.aborted !== true ? a2a() : undefined))
        .catch((error: unknown) => logger.error({ err: error }, 'could not look for the A2A tasks the previous daemon left unfinished'));
    }
    const forward = withDoorBody(async (c, body) => {
      // The SDK's 0.3 HTTP+JSON router answers on Node's response itself, past the middleware that
      // adds these: set there first, they go with its answers too (a Response's own take precedence).
      const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
      for (const [name, value] of API_SECURITY_HEADERS) outgoing?.setHeader(name, value);
      return (await a2a()).fetch(c.req.raw, { ...(c.env as object), [A2A_PRINCIPAL]: c.get('principal'), [A2A_CHARGE_TURN]: chargeTurn(c), [A2A_BODY]: body });
    });
    const base = config.a2a.listen_path === '/' ? '' : config.a2a.listen_path;
    app.all('/.well-known/agent-card.json', forward);
    app.all('/.well-known/agent.json', forward);
    app.all('/.well-known/agent-card.json/', forward);
    app.all('/.well-known/agent.json/', forward);
    app.all(base === '' ? '/*' : base, forward);
    if (base !== '') app.all(`${base}/*`, forward);
  }
  const doorsClosed = (): Promise<void> => {
    const closed = mcpClosed;
    if (closed === undefined) return Promise.resolve();
    return new Promise((resolve) => {
      const cancel = clock.timer(MCP_DRAIN_MS, resolve);
      void closed
        .then(() => writtenOut(mcpResponses))
        .then(() => {
          cancel();
          resolve();
        });
    });
  };
  return Object.assign(app, { doorsClosed, deliveriesDone: () => a2aDrain?.() ?? Promise.resolve() });
}
