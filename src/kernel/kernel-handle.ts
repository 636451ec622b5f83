import { isGranted } from '../capabilities/index.ts';
import type { Capability, Clock, JsonValue, KernelHandle, MemoryEntry, Store, ToolAgent } from '../contracts/index.ts';
import { AgentChainError, UsageError } from '../errors/index.ts';
import type { TurnResult } from '../runtime/index.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { AgentView } from './agent-view.ts';
import type { CapabilityManager } from './capability-manager.ts';
import type { SendOptions } from './message-flow.ts';

/** The kernel operations the handle acts through. */
export interface KernelHandleParts {
  store: Store;
  clock: Clock;
  registry: AgentRegistry;
  capabilities: CapabilityManager;
  /** `limit`: the least privilege of the turn that asks (see `ToolAgent.limit`), which the child must stay within too. */
  spawn(
    manifestText: string,
    source: string,
    parent: string,
    limit: readonly Capability[] | undefined,
    limitMcpServers?: readonly string[],
  ): Promise<AgentView>;
  kill(reference: string): Promise<AgentView[]>;
  send(reference: string, message: string, options: SendOptions): Promise<TurnResult>;
  /** One model call as an agent, outside its turns (see `MessageFlow.callModel`). */
  /** `caller`: the agent as the asking turn sees it; a turn limited to less calls its step's model (see `ModelCallRequest.caller`). */
  generate(agentId: string, prompt: string, signal: AbortSignal, caller?: ToolAgent): Promise<string>;
}

interface ScopedKey {
  ownerId: string;
  /** `self` for the caller's own memory, else the owning agent's name. */
  scope: string;
  key: string;
}

/**
 * The kernel as tools see it. Every method checks the calling agent's capabilities again here,
 * so a tool (built-in, MCP or forged) cannot act beyond its agent's grants.
 */
export function createKernelHandle(parts: KernelHandleParts): KernelHandle {
  const { registry, capabilities, store } = parts;

  function scoped(caller: ToolAgent, key: string): ScopedKey {
    const dot = key.indexOf('.');
    if (dot <= 0 || dot === key.length - 1) throw new UsageError(`memory key "${key}" must be "<scope>.<name>", e.g. "self.notes"`);
    const scope = key.slice(0, dot);
    const rest = key.slice(dot + 1);
    if (scope === 'self' || scope === caller.name) return { ownerId: caller.id, scope: 'self', key: rest };
    const owner = registry.list().find((entry) => entry.name === scope);
    if (owner === undefined) throw new UsageError(`unknown memory scope "${scope}": use "self" or the name of a live agent`);
    return { ownerId: owner.id, scope, key: rest };
  }

  /**
   * Whether the caller may read `entry`: its grants match the entry's `<scope>.<key>`, a key that
   * leads back to the entry's agent. The scope of an agent whose name holds a dot (possible only
   * for agents spawned before names lost it) does not: `bob.vault.password` is agent `bob`'s key
   * `vault.password`, so `bob.*` must not read agent `bob.vault`'s memory by a search.
   */
  const readable = (caller: ToolAgent, entry: MemoryEntry): boolean =>
    !entry.scope.includes('.') && isGranted(caller.capabilities, { kind: 'memory_read', pattern: `${entry.scope}.${entry.key}` });

  async function entriesOf(ownerId: string, scope: string, prefix?: string): Promise<MemoryEntry[]> {
    const records = await store.memory.list(ownerId, prefix);
    return records.map((record) => ({ scope, key: record.key, value: record.value, updatedAt: record.updatedAt }));
  }

  return {
    async spawnAgent(caller, manifestText) {
      capabilities.require(caller.id, caller.name, { kind: 'agent_spawn' });
      const view = await parts.spawn(manifestText, `agent_spawn by "${caller.name}"`, caller.id, caller.limit, caller.limitMcpServers);
      return { id: view.id, name: view.name };
    },

    async messageAgent(caller, target, message, { signal }) {
      const reply = await parts.send(target, message, { caller: { kind: 'agent', agentId: caller.id, chain: caller.chain }, signal });
      return { text: reply.text, iterations: reply.iterations, costUsd: reply.costUsd };
    },

    async killAgent(caller, target) {
      const entry = registry.resolve(target);
      capabilities.require(caller.id, caller.name, { kind: 'agent_kill', pattern: entry.name });
      // A kill takes the target's descendants too: the caller and the agents waiting on it must not be among them.
      const doomed = new Set(registry.subtree(entry).map((agent) => agent.id));
      if (doomed.has(caller.id) || caller.chain.some((id) => doomed.has(id))) {
        throw new AgentChainError(`agent "${caller.name}" cannot kill "${entry.name}": that would kill itself or an agent waiting on this turn`);
      }
      return (await parts.kill(entry.id)).map((view) => view.name);
    },

    generateText(caller, prompt, { signal }) {
      return parts.generate(caller.id, prompt, signal, caller);
    },

    listAgents() {
      return registry.list().map((entry) => ({
        id: entry.id,
        name: entry.name,
        state: entry.state,
        description: entry.manifest.description,
        tags: [...entry.manifest.tags],
      }));
    },

    async memoryPut(caller, key, value: JsonValue) {
      const target = scoped(caller, key);
      capabilities.require(caller.id, caller.name, { kind: 'memory_write', pattern: `${target.scope}.${target.key}` });
      await store.memory.put({ agentId: target.ownerId, key: target.key, value, updatedAt: parts.clock.now() });
    },

    async memoryFind(caller, query) {
      if ('key' in query) {
        const target = scoped(caller, query.key);
        capabilities.require(caller.id, caller.name, { kind: 'memory_read', pattern: `${target.scope}.${target.key}` });
        const record = await store.memory.get(target.ownerId, target.key);
        return record === undefined ? [] : [{ scope: target.scope, key: record.key, value: record.value, updatedAt: record.updatedAt }];
      }
      if ('prefix' in query) {
        const dot = query.prefix.indexOf('.');
        const target = dot === -1 ? scoped(caller, `${query.prefix}.x`) : scoped(caller, `${query.prefix.slice(0, dot)}.x`);
        const rest = dot === -1 ? '' : query.prefix.slice(dot + 1);
        return (await entriesOf(target.ownerId, target.scope, rest)).filter((entry) => readable(caller, entry));
      }
      // A text search looks through every scope the caller may read.
      const needle = query.query.toLowerCase();
      const found: MemoryEntry[] = [];
      for (const entry of registry.list()) {
        const scope = entry.id === caller.id ? 'self' : entry.name;
        for (const memory of await entriesOf(entry.id, scope)) {
          const haystack = `${memory.key} ${JSON.stringify(memory.value)}`.toLowerCase();
          if (haystack.includes(needle) && readable(caller, memory)) found.push(memory);
        }
      }
      return found;
    },
  };
}
