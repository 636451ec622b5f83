import type { Config } from '../config/index.ts';
import type { McpPendingAction, McpProtocolEra, McpServerStatus } from '../mcp/index.ts';
import type { McpServerView as WireMcpServerView } from '../wire/index.ts';

/** One configured MCP server as `GET /api/mcp/servers` and `loom mcp servers` show it: src/wire's `McpServerView`, with the MCP client's own types. */
export interface McpServerView extends Omit<WireMcpServerView, 'status' | 'era' | 'action'> {
  status: McpServerStatus['status'] | 'not started';
  /** The protocol era of the connection (or of the last that worked). */
  era?: McpProtocolEra;
  /** What a person must do first, with the exact command (`loom mcp login <server>`). */
  action?: McpPendingAction;
}

/**
 * The configured MCP servers with their connection state and tools (spec/05: `configured`,
 * `connected`, `total_configured`, `total_connected`). Servers are connected by the daemon only.
 */
export function mcpServersView(
  config: Config,
  mcp: { servers(): McpServerStatus[] } | undefined,
): {
  configured: McpServerView[];
  connected: McpServerView[];
  total_configured: number;
  total_connected: number;
} {
  const live = new Map((mcp?.servers() ?? []).map((server) => [server.name, server]));
  const configured = config.mcp_servers.map((entry): McpServerView => {
    const state = live.get(entry.name);
    return state === undefined
      ? { name: entry.name, transport: entry.transport.type, status: 'not started', tools: [] }
      : {
          name: state.name,
          transport: state.transport,
          status: state.status,
          ...(state.error === undefined ? {} : { error: state.error }),
          tools: state.tools,
          ...(state.refusedTools === undefined ? {} : { refused_tools: state.refusedTools }),
          ...(state.era === undefined ? {} : { era: state.era }),
          ...(state.protocolVersion === undefined ? {} : { protocol_version: state.protocolVersion }),
          ...(state.eraReason === undefined ? {} : { era_reason: state.eraReason }),
          ...(state.action === undefined ? {} : { action: state.action }),
        };
  });
  const connected = configured.filter((server) => server.status === 'connected');
  return { configured, connected, total_configured: configured.length, total_connected: connected.length };
}
