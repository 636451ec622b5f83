import type { TaintSource } from '../runtime/index.ts';
import type { Caller } from './agent-runtime.ts';

/**
 * Where a turn's message comes from when taint tracking must treat it as untrusted: an A2A
 * message (`door` is `a2a`), or a person other than the owner (a channel's sender, a `user` or
 * `viewer` key) whom `[taint].trusted` does not name. The owner's messages, and another agent's
 * of this daemon (its own `agent_message` call was the sink that let the text through), are not.
 */
export function untrustedSenderOf(caller: Caller, door: 'a2a' | undefined, trusted: readonly string[]): TaintSource | undefined {
  const name = caller.kind === 'user' ? caller.name : undefined;
  if (door === 'a2a') return { tool: 'message', origin: `A2A message${name === undefined ? '' : ` from "${name}"`}` };
  if (caller.kind === 'agent' || caller.role === 'owner') return undefined;
  if (name !== undefined && trusted.includes(name)) return undefined;
  // A channel's sender is named "<channel>:<platform user id>"; a key by its name.
  const who = name === undefined ? `a ${caller.role} without a name` : name.includes(':') ? `channel sender "${name}"` : `${caller.role} key "${name}"`;
  return { tool: 'message', origin: `message from ${who}` };
}
