/** The roles a person may hold: `owner` everything, `user` its agents, `viewer` reads everything and changes nothing. */
export type PrincipalRole = 'owner' | 'user' | 'viewer';

/**
 * Who asks through a door, once authenticated: an API key's holder (its name, role and agent
 * patterns), `local` (the person at this machine, the owner, when no key is configured), a person
 * on a chat channel (a `user` reaching the channel's agent), or the `[mcp_server]` identity. The
 * kernel decides what a principal may do (`src/kernel/authority.ts`); the doors only say who it is.
 */
export interface Principal {
  /** The key's name; `local` for a loopback client when no keys are configured; `<channel>:<user id>` for a channel person. */
  name: string;
  role: PrincipalRole;
  /** Name patterns of the agents a `user` may read and message (`*` for owners and viewers). */
  agents: readonly string[];
  /**
   * Name patterns of the agents whose tool calls this principal may approve or deny whatever its
   * role: a channel's `approvers` for the channel's agent. None when left out.
   */
  approves?: readonly string[];
  /**
   * The conversation the principal speaks in when it is not one of its own: a channel person
   * speaks in the chat they wrote in (`channel:<channel>:<conversation>[:<thread>]`), which
   * everyone in that chat shares. Left out, a key's turns go into a session of its own.
   */
  conversation?: string;
}

/**
 * One string per principal, its name, role and agents together: what a principal owns (an A2A
 * task, an MCP session) is its own only when all three match, so a key renamed, or given
 * another role or other agents, owns nothing the old one made.
 */
export function principalKey(principal: Principal): string {
  return JSON.stringify([principal.name, principal.role, principal.agents]);
}
