/**
 * MCP both ways: agents use MCP servers' tools (client, `./client/index.ts`); MCP clients call
 * Loom's agents (server, `./server/index.ts`). Both load the MCP SDK, so other folders import them
 * where first used (test/architecture/lazy-sdks.test.ts); this index holds the client's types.
 */
export type { McpClientManager, McpPendingAction, McpProtocolEra, McpServerStatus } from './client/index.ts';
