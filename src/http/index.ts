/** The HTTP API (Hono): routes, auth, rate limits, and the Node server that serves them. */
export { createAgentRoutes } from './agent-routes.ts';
export type { AgentRoutesOptions } from './agent-routes.ts';
export { createApprovalRoutes, toApprovalView } from './approval-routes.ts';
export type { ApprovalRoutesOptions, ApprovalView } from './approval-routes.ts';
export { toPairingView } from './channel-routes.ts';
export { agentDetail, spawnedAgent } from './spawned-agent.ts';
export type { AgentLookup, SpawnCheckOptions } from './spawned-agent.ts';
export { createHttpApp, MCP_CALLS_DRAIN_MS, MCP_DRAIN_MS, ROUTE_COSTS } from './create-http-app.ts';
export type { HttpApp, HttpAppOptions } from './create-http-app.ts';
export type { HttpContext, HttpEnv } from './http-context.ts';
export { createHostGuard, LOOPBACK_HOST_NAMES } from './host-guard.ts';
export type { HostGuardOptions } from './host-guard.ts';
export { ChatCompletionRequestSchema, createOpenAiRoutes, lastUserMessage, toOpenAiErrorResponse } from './openai/index.ts';
export type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionRequest,
  OpenAiErrorBody,
  OpenAiErrorResponse,
  OpenAiModel,
  OpenAiRoutesOptions,
  OpenAiUsage,
} from './openai/index.ts';
export { RateLimiter } from './rate-limiter.ts';
export type { RateDecision } from './rate-limiter.ts';
export { startHttpServer } from './start-http-server.ts';
export type { FetchApp, RunningHttpServer } from './start-http-server.ts';
export { createSystemRoutes, EVENTS_HEARTBEAT_MS } from './system-routes.ts';
export type { SystemRoutesOptions } from './system-routes.ts';
export { createManifestRoutes } from './manifest-routes.ts';
export { mcpServersView } from './mcp-servers-view.ts';
export type { McpServerView } from './mcp-servers-view.ts';
