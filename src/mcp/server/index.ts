/**
 * Loom as an MCP server: agents as tools `loom_agent_{name}` and as read-only resources
 * (`loom://agents/{name}/session`, `loom://agents/{name}/turns/last`), over stdio (`loom mcp`) and
 * HTTP (`/mcp`).
 */
export { AGENT_LAST_TURN_URI_TEMPLATE, AGENT_SESSION_URI_TEMPLATE, agentResources, agentResourceTemplates, readAgentResource } from './agent-resources.ts';
export { toLastTurnView } from './last-turn-view.ts';
export type { AgentSessionView, CommittedTurnView, LastTurnView, TraceStepView, TurnToolCallView } from './last-turn-view.ts';
export { agentToolName, daemonAgentDirectory, kernelAgentDirectory, mcpThread } from './agent-tools.ts';
export type { AgentDirectory, AgentSummary, DaemonDirectoryOptions } from './agent-tools.ts';
export { createLoomMcpServer, LOOM_MCP_SERVER_NAME } from './create-loom-mcp-server.ts';
export type { LoomMcpServerOptions } from './create-loom-mcp-server.ts';
export { createMcpHttpHandler } from './create-mcp-http-handler.ts';
export type { McpHttpHandler, McpHttpHandlerOptions } from './create-mcp-http-handler.ts';
export { createLegacySseEndpoints, MAX_MCP_MESSAGE_BYTES } from './legacy-sse-endpoints.ts';
export {
  createMcpSessions,
  DEFAULT_MCP_SESSION_IDLE_MS,
  DEFAULT_MCP_SESSIONS_PER_PRINCIPAL,
  DEFAULT_MCP_SSE_RETRY_MS,
  MCP_SESSION_HEADER,
} from './mcp-sessions.ts';
export type { McpSessions, McpSessionsOptions } from './mcp-sessions.ts';
export { createMcpSessionEventStore, DEFAULT_MCP_SESSION_EVENT_BYTES, DEFAULT_MCP_SESSION_EVENTS } from './mcp-session-event-store.ts';
export type { McpSessionEventLimits, McpSessionEventStore } from './mcp-session-event-store.ts';
export type { LegacySseEndpoints, LegacySseOptions } from './legacy-sse-endpoints.ts';
export { serveMcpStdio } from './serve-mcp-stdio.ts';
export type { McpStdioOptions, McpStdioServer } from './serve-mcp-stdio.ts';
export { authInfoOf, MCP_PRINCIPAL_NAME, mcpPrincipal, originOfAuthInfo } from './mcp-principal.ts';
export type { McpRequestOrigin } from './mcp-principal.ts';
export type { ServedTool } from './agent-tools.ts';
