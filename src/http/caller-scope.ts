import { mayReachAgent, type Principal } from '../access/index.ts';
import { AccessDeniedError } from '../errors/index.ts';
import type { AgentDetailView, Kernel } from '../kernel/index.ts';

/**
 * What a principal may read: a `user` key only the live agents its `agents` patterns match (and
 * nothing of killed ones); owners and viewers everything. Every read route filters through here.
 */

/** The ids of the live agents `principal` may read, or `undefined` when it may read every row. */
export function readableAgentIds(kernel: Kernel, principal: Principal): ReadonlySet<string> | undefined {
  if (principal.role !== 'user') return undefined;
  return new Set(kernel.list().filter((agent) => mayReachAgent(principal, agent.name)).map((agent) => agent.id));
}

/**
 * The live agent `reference` names, when `principal` may reach it.
 * @throws {AgentNotFoundError} when there is no such live agent; {AccessDeniedError} when the
 *   key's `[[auth.keys]].agents` patterns do not match it.
 */
export function reachAgent(kernel: Kernel, principal: Principal, reference: string): AgentDetailView {
  const agent = kernel.get(reference);
  if (!mayReachAgent(principal, agent.name)) {
    throw new AccessDeniedError(`the key "${principal.name}" may not reach agent "${agent.name}"; its [[auth.keys]].agents patterns do not match it`);
  }
  return agent;
}
