import type { AgentRecord, Logger, Store } from '../contracts/index.ts';
import type { EmergentEngine } from '../forged-tools/index.ts';
import type { AgentHolding } from './agent-holding.ts';
import type { AgentRegistry } from './agent-registry.ts';
import { type AgentRestorer, storedAncestors } from './agent-restorer.ts';
import type { ApprovalService } from './approval-service.ts';
import type { EventBus, KernelEvent } from './event-bus.ts';

/** The events about an agent's record: another node's make this one read the agent again. */
const AGENT_EVENTS: ReadonlySet<KernelEvent['type']> = new Set(['agent-spawn', 'agent-kill', 'agent-suspend', 'agent-resume', 'agent-update']);

/** The events about a forged tool's record: another node's make this one read the tool again. */
const FORGED_TOOL_EVENTS: ReadonlySet<KernelEvent['type']> = new Set(['tool-forge', 'tool-promote', 'tool-demote', 'tool-retire']);

/** What {@link ClusterSync} is built from. */
export interface ClusterSyncParts {
  store: Store;
  registry: AgentRegistry;
  holding: AgentHolding;
  restorer: AgentRestorer;
  approvals: Pick<ApprovalService, 'heard'>;
  forged: Pick<EmergentEngine, 'sync'>;
  events: Pick<EventBus, 'publish'>;
  logger: Logger;
}

/**
 * The agents this kernel holds kept in line with a store other processes (nodes of the cluster)
 * change too: their events relayed here (`receive`), a full read after events may have been
 * missed (`reload`), and a fresh read of what a spawn or an update judges by (`refresh`).
 */
export class ClusterSync {
  readonly #parts: ClusterSyncParts;

  constructor(parts: ClusterSyncParts) {
    this.#parts = parts;
  }

  /**
   * Brings the agent `agentId` as this kernel holds it in line with the store, after another
   * process changed it: adopted when new, forgotten (with its descendants) when deleted, its state
   * and manifest taken when they changed.
   */
  async sync(agentId: string, record: AgentRecord | undefined): Promise<void> {
    const { registry, holding, store, logger } = this.#parts;
    const held = registry.find(agentId);
    if (record === undefined) {
      this.#parts.restorer.forget([agentId]);
      if (held !== undefined) await holding.forget(registry.subtree(held), false);
      return;
    }
    // An agent held here is never given another parent: its ancestors are read once, when it is adopted.
    const ancestors =
      held === undefined ? await storedAncestors(record.parentId, async (id) => registry.find(id) ?? (await store.agents.get(id))) : held.ancestors;
    const restored = this.#parts.restorer.restore(record, ancestors, 'adoption');
    if (typeof restored === 'string') {
      logger.error({ agentId, problem: restored }, `cannot hold agent "${record.name}" as another node stored it: its manifest is invalid`);
      return;
    }
    if (held === undefined) {
      // A name held here by another agent is one killed elsewhere whose event has not arrived yet.
      const holder = registry.holderOf(record.name);
      const stale = holder === undefined || holder === 'reserved' ? undefined : registry.find(holder);
      if (stale !== undefined && (await store.agents.get(stale.id)) === undefined) await holding.forget(registry.subtree(stale), false);
      if (registry.holderOf(record.name) !== undefined) return;
      await holding.adopt(restored);
      return;
    }
    // Compared whole, not by their times: two nodes may store a change in the same millisecond.
    // Both parsed by the manifest's schema, so in one key order whatever order the store kept (PostgreSQL's jsonb reorders keys).
    if (JSON.stringify(restored.manifest) !== JSON.stringify(held.manifest))
      await holding.applyManifest(held, restored.manifest, restored.capabilities, record.updatedAt);
    if (record.state !== held.state) await holding.applyState(held, record.state, record.updatedAt);
    held.updatedAt = record.updatedAt;
  }

  /**
   * What a spawn or an update judges by, read again from the store (see `AgentLifecycle`): the
   * agent `reference` (a name or an id), a spawn's parent; with `tree`, for an update of it, its
   * parent, itself and every agent below it. Each is taken as stored, adopted, or forgotten.
   */
  async refresh(reference: string, tree: boolean): Promise<void> {
    const { registry, store } = this.#parts;
    const held = registry.lookup(reference);
    if (held !== undefined && !tree) return this.sync(held.id, await store.agents.get(held.id));
    const records = await store.agents.list();
    const stored = new Map(records.map((record) => [record.id, record]));
    const root = held?.id ?? records.find((record) => record.id === reference || record.name === reference)?.id;
    if (root === undefined) return;
    if (!tree) return this.sync(root, stored.get(root));
    const children = new Map<string, string[]>();
    for (const record of records) if (record.parentId !== null) children.set(record.parentId, [...(children.get(record.parentId) ?? []), record.id]);
    // Its parent first, which the update is judged by; then it and every agent below it, parents
    // before children, by the store's links (not by creation times, which other nodes' clocks wrote).
    const parentId = stored.get(root)?.parentId ?? held?.parentId ?? null;
    // A set in insertion order: walked while it grows, each agent once.
    const order = new Set(parentId === null ? [root] : [parentId, root]);
    for (const id of order) for (const child of children.get(id) ?? []) if (id !== parentId) order.add(child);
    // Held here but gone from the store (killed on another node): forgotten.
    for (const entry of held === undefined ? [] : registry.subtree(held)) order.add(entry.id);
    for (const id of order) await this.sync(id, stored.get(id));
  }

  /** Takes in an event another node recorded (see `Kernel.receive`). */
  async receive(event: KernelEvent): Promise<void> {
    const { store, approvals, forged, events } = this.#parts;
    if (AGENT_EVENTS.has(event.type)) await this.sync(event.agentId as string, await store.agents.get(event.agentId as string));
    if (event.type === 'approval-decide') await approvals.heard(event.approvalId);
    if (FORGED_TOOL_EVENTS.has(event.type) && 'toolId' in event && event.toolId !== null) await forged.sync(event.toolId);
    events.publish(event);
  }

  /** Reads every agent from the store again and holds each as stored (see `Kernel.reload`). */
  async reload(): Promise<void> {
    const records = await this.#parts.store.agents.list();
    const stored = new Set(records.map((record) => record.id));
    for (const entry of this.#parts.registry.list()) if (!stored.has(entry.id)) await this.sync(entry.id, undefined);
    // In spawn order: a parent is held before its children.
    for (const record of records) await this.sync(record.id, record);
  }
}
