import { matchesPattern } from '../capabilities/index.ts';

/** An agent's `[capabilities].tools` grants, as a shared tool's reach is read from them. */
export interface ToolGrants {
  name: string;
  tools: readonly string[];
}

/**
 * Which agents' tool grants would reach a tool named `name` once it is shared, each with the
 * grants that match it: what a person approving the promotion to shared should be shown. A
 * wildcard grant (`"*"`, `"file_*"`) reaches a shared forged tool whose name it matches, as it
 * reaches any tool of that name; only the `mcp_` namespace is kept from forged tools
 * (`forgedToolNameProblem`).
 *
 * @example
 * ```ts
 * grantsReaching('file_zip', [{ name: 'ops', tools: ['file_*'] }, { name: 'bob', tools: ['lookup'] }]);
 * // [{ agent: 'ops', grants: ['file_*'] }]
 * ```
 */
export function grantsReaching(name: string, agents: readonly ToolGrants[]): { agent: string; grants: string[] }[] {
  const reached: { agent: string; grants: string[] }[] = [];
  for (const agent of agents) {
    const grants = agent.tools.filter((grant) => matchesPattern(grant, name));
    if (grants.length > 0) reached.push({ agent: agent.name, grants });
  }
  return reached;
}

/** {@link grantsReaching} in words, for an approval request: `agent "ops" by "file_*"; agent "bob" by "lookup"`, or that none does. */
export function describeReach(name: string, agents: readonly ToolGrants[]): string {
  const reached = grantsReaching(name, agents);
  if (reached.length === 0) return `no agent's [capabilities].tools grants "${name}" now`;
  return reached.map(({ agent, grants }) => `agent "${agent}" by ${grants.map((grant) => `"${grant}"`).join(', ')}`).join('; ');
}
