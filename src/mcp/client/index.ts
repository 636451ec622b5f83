/** The MCP client (spec/05, Part 1): MCP servers' tools become agents' tools. */
export { createMcpClientManager, MCP_RETRY_BASE_MS, MCP_RETRY_MAX_MS } from './mcp-client-manager.ts';
export type { McpClientManager, McpClientManagerOptions, McpPendingAction, McpProtocolEra, McpServerStatus } from './mcp-client-manager.ts';
export { McpServerRefusedError } from './mcp-server-refused-error.ts';
export { createPinnedFetch } from './pinned-fetch.ts';
export type { PinnedFetch } from './pinned-fetch.ts';
export { checkStdioCommand, expandHeaders, MAX_MCP_MESSAGE_BYTES, sizeLimitedFetch, stdioEnvironment, vetMcpUrl } from './security.ts';
export type { McpFetch, McpServerEntry, VetMcpUrlOptions, VettedMcpUrl } from './security.ts';
export { extractMcpServer, formatMcpToolName, isMcpTool, MCP_TOOL_PREFIX, normalizeMcpName, parseMcpToolName } from '../../tools/index.ts';
export { loginMcpServer, McpLoginRequiredError, mcpOAuthFile } from './mcp-oauth.ts';
export type { McpLoginOptions, McpOAuthOptions } from './mcp-oauth.ts';
