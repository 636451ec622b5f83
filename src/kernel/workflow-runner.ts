import type { WorkflowRecord } from '../contracts/index.ts';
import { AgentStateError } from '../errors/index.ts';
import { executeWorkflow, type WorkflowPort } from '../agent-types/index.ts';
import type { ModelCallUsage } from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import { OWNER } from './agent-runtime.ts';
import type { FlowState } from './flow-state.ts';
import type { ModuleTurns } from './module-turns.ts';
import { noEvents } from './open-turn.ts';
import { UnloggedSpend } from './shared-totals.ts';

/**
 * The workflows of workflow agents: the port their module reads and changes them through (one
 * change at a time per agent, a state change published), and the background run of an approved
 * workflow, outside any turn, which stops with its agent and goes on at its next start.
 */
export class WorkflowRunner {
  readonly #flow: FlowState;
  readonly #modules: Pick<ModuleTurns, 'createModuleContext'>;
  /** Per agent: the last pending change of its workflow (changes apply one at a time). */
  readonly #changes = new Map<string, Promise<unknown>>();
  /** Per agent: its workflow running in the background, to stop it with the agent (and wait for it). */
  readonly #runs = new Map<string, AbortController>();
  readonly #done = new Set<Promise<void>>();

  constructor(flow: FlowState, modules: Pick<ModuleTurns, 'createModuleContext'>) {
    this.#flow = flow;
    this.#modules = modules;
  }

  /** How the workflow module of `entry` reads, changes and starts its workflow. */
  port(entry: AgentEntry): WorkflowPort {
    const { store, clock } = this.#flow;
    return {
      load: () => store.workflows.get(entry.id),
      update: (change) => {
        const previous = this.#changes.get(entry.id) ?? Promise.resolve();
        const next = previous.then(async () => {
          const before = await store.workflows.get(entry.id);
          const updated = change(before);
          await store.workflows.put(updated);
          if (before?.state !== updated.state)
            await this.#flow.publish({
              type: 'workflow-state-change',
              at: clock.now(),
              agentId: entry.id,
              name: entry.name,
              state: updated.state,
              note: updated.note,
            });
          return updated;
        });
        this.#changes.set(
          entry.id,
          next.catch(() => undefined),
        );
        return next;
      },
      execute: () => this.start(entry),
    };
  }

  /**
   * Runs an agent's approved workflow in the background (once per agent), outside any turn: its
   * model calls are recorded as they happen; killing, suspending or stopping the agent stops it,
   * and it goes on at the next start (a task under way then runs again).
   */
  start(entry: AgentEntry): void {
    const { runtime, clock, commits } = this.#flow;
    if (runtime === undefined || this.#runs.has(entry.id)) return;
    const controller = new AbortController();
    this.#runs.set(entry.id, controller);
    const runLogger = this.#flow.flowLogger.child({ agentId: entry.id, workflow: true });
    const port = this.port(entry);
    // Its calls are written as they are made, and what is left of them not counted once it stops.
    const spend = new UnloggedSpend();
    const record = (used: ModelCallUsage): void => {
      commits
        .record(runtime, entry, [used], runLogger, spend, { goesOn: true })
        .catch((error: unknown) => runLogger.error({ err: error }, 'could not record the usage of a workflow step'));
    };
    const done = (async () => {
      try {
        const { context } = this.#modules.createModuleContext(runtime, entry, {
          message: '',
          history: [],
          caller: OWNER,
          signal: controller.signal,
          emit: noEvents,
          logger: runLogger,
          onCall: record,
          resolver: this.#flow.models.resolver(runtime, entry, spend),
        });
        await executeWorkflow(context, port);
        // Said so that a test can tell that nothing more runs (a pause took effect) without a sleep.
        runLogger.debug({}, `the workflow of agent "${entry.name}" stopped running in the background`);
      } catch (error) {
        if (controller.signal.aborted) return;
        runLogger.error({ err: error }, `the workflow of agent "${entry.name}" stopped on an error`);
        await port
          .update((current) => ({
            ...(current as WorkflowRecord),
            state: 'stalled',
            note: `Stalled on an error: ${error instanceof Error ? error.message : String(error)}. Tell me how to go on, or "cancel".`,
            updatedAt: clock.now(),
          }))
          .catch(() => undefined);
      } finally {
        spend.end();
        this.#runs.delete(entry.id);
      }
    })();
    this.#done.add(done);
    void done.finally(() => this.#done.delete(done));
  }

  /** Goes on with the agent's workflow after a start or a resume, when it was executing. */
  async resume(agent: AgentEntry): Promise<void> {
    if (agent.manifest.module !== 'builtin:workflow') return;
    const current = await this.#flow.store.workflows.get(agent.id);
    if (current?.state !== 'executing') return;
    // A task under way when the process stopped runs again.
    await this.port(agent).update((record) => ({
      ...(record as WorkflowRecord),
      tasks: (record as WorkflowRecord).tasks.map((task) => (task.status === 'in_progress' ? { ...task, status: 'pending' } : task)),
    }));
    this.start(agent);
  }

  /** Stops the agent's workflow running in the background, if it runs. */
  stop(agent: AgentEntry): void {
    this.#runs.get(agent.id)?.abort(new AgentStateError(`agent "${agent.name}" stopped`));
  }

  /** Resolves once every background run started so far has ended. */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.#done]);
  }
}
