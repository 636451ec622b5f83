/** The HTTP API (Hono): routes, auth, rate limits, and the Node server that serves them. */
export { createAgentRoutes, MessageBodySchema } from './agent-routes.ts';
export type { AgentRoutesOptions, SpawnResponse } from './agent-routes.ts';
export { createAuthenticator, LOOM_API_KEY_NAME, mayReachAgent } from './create-authenticator.ts';
export type { Authenticator, Credentials, Principal } from './create-authenticator.ts';
export { createHttpApp, ROUTE_COSTS } from './create-http-app.ts';
export type { HttpAppOptions } from './create-http-app.ts';
export type { HttpContext, HttpEnv } from './http-context.ts';
export { HttpRequestError } from './http-request-error.ts';
export type { HttpErrorCode } from './http-request-error.ts';
export { isLoopbackAddress } from './is-loopback-address.ts';
export { RateLimiter } from './rate-limiter.ts';
export type { RateDecision } from './rate-limiter.ts';
export { startHttpServer } from './start-http-server.ts';
export type { FetchApp, RunningHttpServer } from './start-http-server.ts';
export { createSystemRoutes, EVENTS_HEARTBEAT_MS } from './system-routes.ts';
export type { SystemRoutesOptions } from './system-routes.ts';
export { toErrorResponse } from './to-error-response.ts';
export type { ErrorBody, ErrorResponse } from './to-error-response.ts';
