import type { Clock, IdGenerator, JsonObject, Logger, Store, TurnJournalRecord } from '../contracts/index.ts';
import { AgentNameTakenError, AgentNotFoundError, LoomError, StoreConflictError, StoreNotFoundError } from '../errors/index.ts';
import type { EmergentEngine } from '../forged-tools/index.ts';
import type { Manifest } from '../manifest/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { AgentHolding } from './agent-holding.ts';
import type { AgentRegistry } from './agent-registry.ts';
import { type AgentRestorer, storedAncestors } from './agent-restorer.ts';
import type { AgentView } from './agent-view.ts';
import type { ApprovalService } from './approval-service.ts';
import type { AutonomousGuard } from './autonomous-guard.ts';
import { confineToStep } from './child-confinement.ts';
import type { ClusterSync } from './cluster-sync.ts';
import type { KernelEvent } from './event-bus.ts';
import type { BootReport, KernelNode, SpawnOptions } from './kernel-api.ts';
import type { Admitted, ManifestAdmission } from './manifest-admission.ts';
import type { MessageFlow } from './message-flow.ts';
import { createLineup } from './one-at-a-time.ts';
import { awaitedApprovals } from './turn-journal.ts';

/** What {@link AgentLifecycle} is built from. */
export interface AgentLifecycleParts {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  registry: AgentRegistry;
  holding: AgentHolding;
  cluster: ClusterSync;
  restorer: AgentRestorer;
  admission: ManifestAdmission;
  guard: AutonomousGuard;
  approvals: Pick<ApprovalService, 'expireInterrupted' | 'shutdown'>;
  flow: Pick<MessageFlow, 'resumeWork' | 'stopTurns' | 'idle'>;
  forged: Pick<EmergentEngine, 'load' | 'close'>;
  /** Records the event in the audit log, then tells subscribers. */
  publish: (event: KernelEvent) => Promise<void>;
  /** An agent's view as the doors show it. */
  viewOf: (entry: AgentEntry) => AgentView;
  /** Resumes the turns the last process left running in the journal (decision 0045). */
  resumeTurns: (journaled: readonly TurnJournalRecord[]) => Promise<void>;
  node: KernelNode | undefined;
  /** Go on with agents' background work and journaled turns at boot (the daemon does). */
  resumeBackgroundWork: boolean;
}

/**
 * Agents' lives as this kernel changes them: boot, spawn, update, suspend, resume, kill and
 * shutdown; each committed to the store first, then held (see `AgentHolding`), then published.
 */
export class AgentLifecycle {
  readonly #parts: AgentLifecycleParts;
  readonly #lineup = createLineup();

  constructor(parts: AgentLifecycleParts) {
    this.#parts = parts;
  }

  /** Restores the stored agents (see `Kernel.boot`). */
  async boot(): Promise<BootReport> {
    const { store, logger, registry, holding, approvals, node, flow } = this.#parts;
    const resumeBackgroundWork = this.#parts.resumeBackgroundWork;
    const report: BootReport = { running: 0, suspended: 0, skipped: [] };
    // Turns the last process stopped in go on (decision 0045): here, at start; where turns are
    // leased (decision 0061), on whichever node takes each over once its lease lapses.
    const journaled = resumeBackgroundWork ? await store.turns.running() : [];
    const resumes = journaled.length > 0 && node?.leasesTurns !== true && !((await node?.othersAlive()) ?? false);
    // Before any agent starts: a request no turn waits for could never run its call (those a
    // journaled turn waits on stay, for the node that resumes it).
    const interrupted = await approvals.expireInterrupted(new Set(journaled.flatMap(awaitedApprovals)));
    if (interrupted > 0) logger.info({ approvals: interrupted }, 'closed approval requests left pending by a previous process');
    const records = await store.agents.list();
    // Every stored agent's, those whose manifest no longer validates included: their caps still cover the agents below them.
    const stored = new Map(records.map((record) => [record.id, record]));
    for (const record of records) {
      const entry = this.#parts.restorer.restore(record, await storedAncestors(record.parentId, (id) => stored.get(id)), 'start');
      if (typeof entry === 'string') {
        report.skipped.push({ id: record.id, name: record.name, problem: entry });
        logger.error({ agentId: record.id, problem: entry }, `cannot restore agent "${record.name}": its stored manifest is invalid`);
        continue;
      }
      holding.register(entry);
      report[entry.state] += 1;
    }
    // Stored forged tools, before any agent runs a turn that could call them.
    await this.#parts.forged.load({ othersAlive: (await node?.othersAlive()) ?? false });
    for (const entry of registry.list()) {
      if (entry.state === 'running') await holding.runHooks(entry, 'start');
    }
    if (resumeBackgroundWork) {
      for (const entry of registry.list()) if (entry.state === 'running') await flow.resumeWork(entry);
      if (resumes) await this.#parts.resumeTurns(journaled);
    }
    logger.debug({ running: report.running, suspended: report.suspended, skipped: report.skipped.length }, 'kernel booted');
    return report;
  }

  /** Spawns an agent (see `Kernel.spawn`). */
  spawn(requested: Manifest, options: SpawnOptions = {}): Promise<AgentView> {
    return this.#oneAtATime(
      async () => {
        if (options.parent !== undefined) await this.#parts.cluster.refresh(options.parent, false);
      },
      async () => {
        const { registry, admission, clock, ids, store } = this.#parts;
        const { name } = requested;
        const holder = registry.holderOf(name);
        if (holder !== undefined) throw new AgentNameTakenError(name, holder === 'reserved' ? undefined : holder);
        const parent = options.parent === undefined ? undefined : registry.resolve(options.parent);
        const admitted = admission.admit(requested, parent, 'spawn');
        const { granted } = admitted;
        const manifest =
          options.limit === undefined
            ? admitted.manifest
            : confineToStep(admitted.manifest, granted, { limit: options.limit, mcpServers: options.limitMcpServers }, admission.confinementContext());
        await admission.checkCodeModule(manifest);
        // Another spawn of the name may have got in while the check waited.
        const taken = registry.holderOf(name);
        if (taken !== undefined) throw new AgentNameTakenError(name, taken === 'reserved' ? undefined : taken);

        const at = clock.now();
        const entry: AgentEntry = {
          id: ids.uuid(),
          name,
          state: 'running',
          parentId: parent?.id ?? null,
          ancestors: parent === undefined ? [] : [{ id: parent.id, name: parent.name }, ...parent.ancestors],
          children: new Set(),
          sessionId: ids.uuid(),
          manifest,
          capabilities: granted,
          createdAt: at,
          updatedAt: at,
        };
        // Commit first, register after: a failed commit leaves nothing to undo.
        registry.reserve(name);
        try {
          await store.agents.create(
            {
              id: entry.id,
              name,
              state: entry.state,
              parentId: entry.parentId,
              sessionId: entry.sessionId,
              manifest: manifest as unknown as JsonObject,
              createdAt: at,
              updatedAt: at,
            },
            { id: entry.sessionId, agentId: entry.id, messages: [], createdAt: at, updatedAt: at },
          );
        } catch (error) {
          if (error instanceof StoreConflictError) throw new AgentNameTakenError(name, undefined, { cause: error });
          if (error instanceof StoreNotFoundError && options.parent !== undefined) throw new AgentNotFoundError(options.parent, { cause: error });
          throw error;
        } finally {
          registry.release(name);
        }
        await this.#parts.holding.adopt(entry);
        await this.#parts.publish({ type: 'agent-spawn', at, agentId: entry.id, name, parentId: entry.parentId });
        return this.#parts.viewOf(entry);
      },
    );
  }

  /** Replaces a live agent's manifest (see `Kernel.update`). */
  update(reference: string, requested: Manifest): Promise<AgentView> {
    return this.#oneAtATime(
      () => this.#parts.cluster.refresh(reference, true),
      async () => {
        const { registry, admission, clock } = this.#parts;
        const entry = registry.resolve(reference);
        if (requested.name !== entry.name) {
          throw new LoomError(
            'AGENT_RENAME',
            'user',
            `cannot update "${entry.name}" with a manifest for "${requested.name}": an agent's name does not change (spawn a new agent for another name)`,
          );
        }
        const parent = entry.parentId === null ? undefined : registry.find(entry.parentId);
        const { manifest, granted } = admission.admit(requested, parent, 'update');
        await admission.checkCodeModule(manifest);
        // Its children must still fit inside it, and take on what it now restricts, before anything is stored.
        const descendants = admission.reconfined(entry.name, entry, manifest, granted);
        const at = clock.now();
        // The descendants first: each only narrows, so a failure midway leaves none wider than its parent.
        for (const { child, admitted } of descendants) {
          try {
            await this.#holdManifest(child, admitted, at);
          } catch (error) {
            // Killed meanwhile (here or on another node): nothing left to narrow.
            if (!(error instanceof StoreNotFoundError)) throw error;
          }
        }
        await this.#holdManifest(entry, { manifest, granted }, at);
        return this.#parts.viewOf(entry);
      },
    );
  }

  /** Kills the agent and its descendants (see `Kernel.kill`). */
  async kill(reference: string): Promise<AgentView[]> {
    const { registry, store, clock } = this.#parts;
    const root = registry.resolve(reference);
    const doomed = registry.subtree(root);
    const views = doomed.map(this.#parts.viewOf);
    await store.agents.delete(doomed.map((entry) => entry.id));
    const at = clock.now();
    await this.#parts.holding.forget(doomed, true);
    for (const entry of doomed) {
      await this.#parts.publish({ type: 'agent-kill', at, agentId: entry.id, name: entry.name, reason: entry === root ? 'requested' : 'parent-killed' });
    }
    return views;
  }

  /** Stores and holds the agent's new state (suspend, resume); `reason` says why in the audit log. */
  async setState(reference: string, state: AgentEntry['state'], reason?: string): Promise<AgentView> {
    const { registry, store, clock, viewOf } = this.#parts;
    const entry = registry.resolve(reference);
    if (entry.state === state) return viewOf(entry);
    const at = clock.now();
    try {
      await store.agents.setState(entry.id, state, at);
    } catch (error) {
      // Killed by another process since this kernel booted.
      if (error instanceof StoreNotFoundError) throw new AgentNotFoundError(reference, { cause: error });
      throw error;
    }
    if (registry.find(entry.id) !== entry) throw new AgentNotFoundError(reference);
    await this.#parts.holding.applyState(entry, state, at);
    // A resumed agent's idle time starts again.
    if (state === 'running') this.#parts.guard.forget(entry.id);
    await this.#parts.publish(
      state === 'running'
        ? { type: 'agent-resume', at, agentId: entry.id, name: entry.name }
        : { type: 'agent-suspend', at, agentId: entry.id, name: entry.name, ...(reason === undefined ? {} : { reason }) },
    );
    return viewOf(entry);
  }

  /**
   * After an unattended cycle: suspends the agent when its cycles have taken no action for its
   * `[autonomous].idle_timeout_seconds`, the reason in the audit log's `agent-suspend` and the log.
   */
  async suspendIfIdle(reference: string): Promise<void> {
    const entry = this.#parts.registry.lookup(reference);
    const reason = entry === undefined || entry.state !== 'running' ? undefined : this.#parts.guard.idleReason(entry);
    if (entry === undefined || reason === undefined) return;
    this.#parts.logger.warn({ agentId: entry.id }, `suspended agent "${entry.name}": ${reason}; resume it with loom agent resume ${entry.name}`);
    await this.setState(entry.id, 'suspended', reason);
  }

  /** Closes what waits for a person, stops turns and agents without changing the store (see `Kernel.shutdown`). */
  async shutdown(): Promise<void> {
    const { approvals, registry, flow, holding } = this.#parts;
    // First, so that what waits for a person reads as closed by the shutdown (not by its turn's
    // cancellation), and no approval's timeout holds the process once it has stopped.
    const closing = approvals.shutdown();
    for (const entry of registry.list()) {
      // In-flight turns are cancelled; what they did is saved as they unwind.
      flow.stopTurns(entry, 'shutdown');
      if (entry.state === 'running') await holding.runHooks(entry, 'shutdown');
    }
    await closing;
    await flow.idle();
    this.#parts.forged.close();
  }

  /** Stores `admitted` as the agent's manifest, holds it with it, and says so (`agent-update`). */
  async #holdManifest(entry: AgentEntry, admitted: Admitted, at: number): Promise<void> {
    await this.#parts.store.agents.updateManifest(entry.id, admitted.manifest as unknown as JsonObject, at);
    await this.#parts.holding.applyManifest(entry, admitted.manifest, admitted.granted, at);
    await this.#parts.publish({ type: 'agent-update', at, agentId: entry.id, name: entry.name });
  }

  /**
   * Spawns and updates, one at a time on this node and, with nodes sharing the store, in the
   * installation: a child is judged by its parent's manifest as it is, and an update confines the
   * children there are. Interleaved (each awaits the store), a child spawned while its parent's
   * update ran could keep what the update took away. `fresh` reads again from the store what the
   * work judges by, once no other node can change it: the node heard of other nodes' changes
   * through events, which may not have arrived yet.
   */
  #oneAtATime<T>(fresh: () => Promise<void>, work: () => Promise<T>): Promise<T> {
    const { node } = this.#parts;
    return this.#lineup(() =>
      node?.exclusive === undefined
        ? work()
        : node.exclusive(async () => {
            await fresh();
            return work();
          }),
    );
  }
}
