import type { AuthInfo } from '@modelcontextprotocol/server';
import { capabilitiesFromManifest } from '../../manifest/index.ts';
import type { Config } from '../../config/index.ts';
import type { Principal } from '../../access/index.ts';
import type { ToolPrincipal } from '../../kernel/index.ts';

/** The principal's name: its workspace is `LOOM_HOME/workspaces/mcp-clients`. */
export const MCP_PRINCIPAL_NAME = 'mcp-clients';

/**
 * The identity MCP clients act as when they call tools other than the agents:
 * `[mcp_server.capabilities]`. Undefined when it grants no tool (the default: agents only).
 */
export function mcpPrincipal(config: Pick<Config, 'mcp_server'>): ToolPrincipal | undefined {
  const capabilities = capabilitiesFromManifest(config.mcp_server.capabilities);
  if (!capabilities.some((capability) => capability.kind === 'tool_invoke' || capability.kind === 'tool_all')) return undefined;
  return { name: MCP_PRINCIPAL_NAME, capabilities };
}

/** Who a request comes from, as the door that received it authenticated it. */
export interface McpRequestOrigin {
  principal: Principal;
  /**
   * Charges the caller for a call that runs an agent's turn, beyond what the request itself cost
   * (protocol messages cost like reads); throws, with the time to wait, when the caller is out.
   */
  chargeTurn?: () => void;
}

/** Where a request's origin rides to the server instance: `AuthInfo.extra[ORIGIN_KEY]` (the SDK passes `authInfo` through untouched). */
const ORIGIN_KEY = 'loomOrigin';

/** The SDK's `AuthInfo` carrying `origin`, for the handlers and factories of the MCP server. */
export function authInfoOf(origin: McpRequestOrigin): AuthInfo {
  return { token: '', clientId: origin.principal.name, scopes: [origin.principal.role], extra: { [ORIGIN_KEY]: origin } };
}

/** The origin {@link authInfoOf} put in `authInfo`; undefined when there is none. */
export function originOfAuthInfo(authInfo: AuthInfo | undefined): McpRequestOrigin | undefined {
  return authInfo?.extra?.[ORIGIN_KEY] as McpRequestOrigin | undefined;
}
