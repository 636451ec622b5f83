/**
 * MCP tool namespacing (spec/05): a tool `tool` of server `server` is the agent tool
 * `mcp_{server}_{tool}`, lower case, with every `-` turned into `_`.
 */

/** The prefix every MCP tool name starts with. */
export const MCP_TOOL_PREFIX = 'mcp_';

/** A name part as it appears in a namespaced tool name: lower case, `-` → `_`. */
export function normalizeMcpName(name: string): string {
  return name.toLowerCase().replaceAll('-', '_');
}

/** The namespaced name of tool `tool` of server `server`: `mcp_{server}_{tool}`. */
export function formatMcpToolName(server: string, tool: string): string {
  return `${MCP_TOOL_PREFIX}${normalizeMcpName(server)}_${normalizeMcpName(tool)}`;
}

/** Whether `name` is a namespaced MCP tool name (it starts with `mcp_`). */
export function isMcpTool(name: string): boolean {
  return name.startsWith(MCP_TOOL_PREFIX) && name.length > MCP_TOOL_PREFIX.length;
}

/**
 * Splits a namespaced tool name into its server and tool parts (both normalized), or undefined
 * when it is not one. Server names may hold `_` themselves, so when the configured server names
 * are given the longest one that matches wins (and the server is returned as configured);
 * without them the server part ends at the first `_` after the prefix.
 */
export function parseMcpToolName(name: string, servers?: readonly string[]): { server: string; tool: string } | undefined {
  if (!isMcpTool(name)) return undefined;
  const rest = name.slice(MCP_TOOL_PREFIX.length);
  if (servers !== undefined) {
    let best: { server: string; tool: string } | undefined;
    for (const server of servers) {
      const prefix = `${normalizeMcpName(server)}_`;
      if (rest.startsWith(prefix) && rest.length > prefix.length && (best === undefined || server.length > best.server.length)) {
        best = { server, tool: rest.slice(prefix.length) };
      }
    }
    return best;
  }
  const split = rest.indexOf('_');
  if (split <= 0 || split === rest.length - 1) return undefined;
  return { server: rest.slice(0, split), tool: rest.slice(split + 1) };
}

/** The server part of a namespaced tool name (see {@link parseMcpToolName}), or undefined. */
export function extractMcpServer(name: string, servers?: readonly string[]): string | undefined {
  return parseMcpToolName(name, servers)?.server;
}
