import type { AgentRecord, MemoryRecord, SessionRecord, Store, UsageRecord } from '../../../src/contracts/index.ts';

/** Gives the contract's domain suites the store of the running test. */
export interface StoreContext {
  /** The fresh store of the running test; read it in a test or hook, not while describing. */
  readonly store: Store;
  /**
   * On a database several nodes share (PostgreSQL): the store of another node on it, that node
   * alive (its heartbeat fresh in `loom_nodes`), gone silent, or stopped; its id is `id` (a random
   * UUID by default). Absent alone (SQLite).
   */
  readonly otherNode?: ((state: OtherNodeState, id?: string) => Promise<Store>) | undefined;
  /** On a database several nodes share: the id the store leases the turns it records to (its origin). Absent alone (SQLite). */
  readonly origin?: string | undefined;
}

/** How another node on a shared database stands, as its row of `loom_nodes` says. */
export type OtherNodeState = 'alive' | 'silent' | 'stopped';

/** An agent record for tests; its session id is `session-<id>`. */
export function agentRecord(id: string, overrides: Partial<AgentRecord> = {}): AgentRecord {
  return {
    id,
    name: `agent-${id}`,
    state: 'running',
    parentId: null,
    sessionId: `session-${id}`,
    manifest: { name: `agent-${id}`, model: { provider: 'anthropic', name: 'claude' } },
    createdAt: 1_000,
    updatedAt: 1_000,
    ...overrides,
  };
}

/** The first session of `agent`, as `agents.create()` takes it. */
export function sessionOf(agent: AgentRecord, overrides: Partial<SessionRecord> = {}): SessionRecord {
  return {
    id: agent.sessionId,
    agentId: agent.id,
    messages: [],
    createdAt: agent.createdAt,
    updatedAt: agent.createdAt,
    conversation: null,
    ...overrides,
  };
}

/** A usage record for tests. */
export function usageRecord(agentId: string, at: number, overrides: Partial<UsageRecord> = {}): UsageRecord {
  return { agentId, at, model: 'claude', inputTokens: 100, outputTokens: 10, costUsd: 0.25, ...overrides };
}

/** A memory record for tests; the value defaults to the key. */
export function memoryRecord(agentId: string, key: string, value: MemoryRecord['value'] = key): MemoryRecord {
  return { agentId, key, value, updatedAt: 2_000 };
}

/** Creates agent `id` in `store` with its first session, and returns the record. */
export async function createAgentIn(store: Store, id: string, overrides: Partial<AgentRecord> = {}): Promise<AgentRecord> {
  const agent = agentRecord(id, overrides);
  await store.agents.create(agent, sessionOf(agent));
  return agent;
}
