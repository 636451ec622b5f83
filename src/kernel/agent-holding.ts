import type { Capability, Logger } from '../contracts/index.ts';
import type { EmergentEngine } from '../forged-tools/index.ts';
import type { Manifest } from '../manifest/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { AgentLifecycleHook, StopReason } from './agent-lifecycle-hook.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { AutonomousGuard } from './autonomous-guard.ts';
import type { BudgetLedger } from './budget-ledger.ts';
import type { CapabilityManager } from './capability-manager.ts';
import type { MessageFlow } from './message-flow.ts';
import type { QuotaTracker } from './quota-tracker.ts';

/** What {@link AgentHolding} is built from: the kernel's parts an agent held in this process touches. */
export interface AgentHoldingParts {
  registry: AgentRegistry;
  capabilities: CapabilityManager;
  quotas: QuotaTracker;
  ledger: BudgetLedger;
  guard: AutonomousGuard;
  flow: Pick<MessageFlow, 'stopTurns' | 'resumeWork'>;
  forged: Pick<EmergentEngine, 'agentKilled'>;
  logger: Logger;
  /** Go on with an agent's background work (an executing workflow) when it runs again. */
  resumeBackgroundWork: boolean;
}

/**
 * Agents as this process holds them, in line with what is stored: granted and registered,
 * their lifecycle hooks started and stopped, their turns stopped. Whoever changed the store
 * (this kernel, or another node of the cluster) then calls one of these.
 */
export class AgentHolding {
  readonly #parts: AgentHoldingParts;
  readonly #hooks: AgentLifecycleHook[] = [];

  constructor(parts: AgentHoldingParts, hooks: readonly AgentLifecycleHook[]) {
    this.#parts = parts;
    this.#hooks.push(...hooks);
  }

  /** Adds a hook after those given at construction (in that order); it hears of agents started from then on. */
  addHook(hook: AgentLifecycleHook): void {
    this.#hooks.push(hook);
  }

  /**
   * Whether the agent may act unasked (its `unasked` hooks run: schedules, triggers, package
   * workflows): it runs, and so does every agent above it. A child acts unasked only while its
   * parent does (0015), so a suspended parent holds those hooks of its children too; their other
   * hooks (workspace, code module) and their turns are theirs.
   */
  actsUnasked(entry: AgentEntry): boolean {
    return [entry, ...this.#parts.registry.ancestors(entry)].every((current) => current.state === 'running');
  }

  /** Runs the agent's hooks (`only: 'unasked'`: those of its unasked work alone). A hook that throws is logged. */
  async runHooks(entry: AgentEntry, action: 'start' | StopReason, only?: 'unasked'): Promise<void> {
    const { registry, logger } = this.#parts;
    for (const hook of this.#hooks) {
      if (only === 'unasked' && hook.unasked !== true) continue;
      // A start racing a kill or suspend must not start anything once the agent has stopped.
      if (action === 'start' && (registry.find(entry.id) !== entry || entry.state !== 'running')) return;
      if (action === 'start' && hook.unasked === true && !this.actsUnasked(entry)) continue;
      try {
        if (action === 'start') await hook.start(entry);
        else await hook.stop(entry, action);
      } catch (error) {
        logger.error({ err: error, hook: hook.name, agentId: entry.id }, `lifecycle hook "${hook.name}" failed`);
      }
    }
  }

  /**
   * Holds an agent in the state just stored: its turns stop on suspend, its hooks stop or start,
   * and so do the unasked hooks of the descendants that act unasked only through it.
   */
  async applyState(entry: AgentEntry, state: AgentEntry['state'], at: number): Promise<void> {
    const { registry, flow } = this.#parts;
    const below = registry.subtree(entry).slice(1);
    const before = new Set(below.filter((child) => this.actsUnasked(child)));
    entry.state = state;
    entry.updatedAt = at;
    if (state === 'suspended') flow.stopTurns(entry, 'suspend');
    await this.runHooks(entry, state === 'running' ? 'start' : 'suspend');
    for (const child of below) {
      if (before.has(child) && !this.actsUnasked(child)) await this.runHooks(child, 'suspend', 'unasked');
      else if (!before.has(child) && this.actsUnasked(child)) await this.runHooks(child, 'start', 'unasked');
    }
    if (state === 'running' && this.#parts.resumeBackgroundWork) await flow.resumeWork(entry);
  }

  /** Holds an agent with the manifest just stored: its hooks start again with it (turns under way keep theirs). */
  async applyManifest(entry: AgentEntry, manifest: Manifest, granted: readonly Capability[], at: number): Promise<void> {
    const running = entry.state === 'running';
    if (running) await this.runHooks(entry, 'suspend');
    entry.manifest = manifest;
    entry.capabilities = granted;
    entry.updatedAt = at;
    this.#parts.capabilities.grant(entry.id, granted);
    if (running) await this.runHooks(entry, 'start');
  }

  /** Holds an agent restored at boot: registered and granted; its hooks start once every agent is held. */
  register(entry: AgentEntry): void {
    this.#parts.registry.add(entry);
    this.#parts.capabilities.grant(entry.id, entry.capabilities);
  }

  /** Holds an agent just stored (spawned here or by another node): granted, registered, started. */
  async adopt(entry: AgentEntry): Promise<void> {
    this.#parts.capabilities.grant(entry.id, entry.capabilities);
    this.#parts.registry.add(entry);
    if (entry.state === 'running') await this.runHooks(entry, 'start');
  }

  /**
   * Lets go of agents deleted from the store, children first, so no hook sees a child outliving
   * its parent: gone from the registry and their grants first, so nothing running can act for them
   * again; their turns here stopped, their hooks stopped. `retireTools` for a kill made here (the
   * node that killed them retires their forged tools in the store).
   */
  async forget(doomed: readonly AgentEntry[], retireTools: boolean): Promise<void> {
    const { capabilities, quotas, ledger, guard, registry, flow, forged } = this.#parts;
    for (const entry of [...doomed].reverse()) {
      capabilities.revoke(entry.id);
      quotas.forget(entry.id);
      ledger.lifetime?.forget(entry.id);
      guard.forget(entry.id);
      registry.remove(entry.id);
      flow.stopTurns(entry, 'kill');
      if (entry.state === 'running') await this.runHooks(entry, 'kill');
      if (retireTools) await forged.agentKilled(entry.id);
    }
  }
}
