/** MCP both ways: agents use MCP servers' tools (client); MCP clients call Loom's agents (server). */
export { createMcpClientManager, formatMcpToolName, MAX_MCP_MESSAGE_BYTES, parseMcpToolName } from './client/index.ts';
export type { McpClientManager, McpPendingAction, McpProtocolEra, McpServerStatus } from './client/index.ts';
export {
  agentToolName,
  createLegacySseEndpoints,
  createLoomMcpServer,
  createMcpHttpHandler,
  daemonAgentDirectory,
  kernelAgentDirectory,
  serveMcpStdio,
} from './server/index.ts';
export type { McpHttpHandler, McpHttpHandlerOptions } from './server/index.ts';
