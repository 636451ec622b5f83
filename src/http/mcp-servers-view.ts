import type { Config } from '../config/index.ts';
import type { McpPendingAction, McpProtocolEra, McpServerStatus } from '../mcp/index.ts';

/** One configured MCP server as `GET /api/mcp/servers` and `loom mcp servers` show it. */
export interface McpServerView {
  name: string;
  transport: 'stdio' | 'sse' | 'http';
  status: McpServerStatus['status'] | 'not started';
  error?: string;
  tools: { name: string; description: string }[];
  /** The server's tools left out of agents' tools, with why (a schema Loom refuses); absent when none. */
  refused_tools?: { name: string; reason: string }[];
  /** The protocol era of the connection (or of the last that worked): `modern` is 2026-07-28 and later, `legacy` the 2025 revisions. */
  era?: McpProtocolEra;
  /** The protocol revision negotiated, e.g. `2026-07-28`. */
  protocol_version?: string;
  /** Why the 2025 era was chosen. */
  era_reason?: string;
  /** What a person must do first, with the exact command (`loom mcp login <server>`). */
  action?: McpPendingAction;
}

/**
 * The configured MCP servers with their connection state and tools (spec/05: `configured`,
 * `connected`, `total_configured`, `total_connected`). Servers are connected by the daemon only.
 */
export function mcpServersView(config: Config, mcp: { servers(): McpServerStatus[] } | undefined): {
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
