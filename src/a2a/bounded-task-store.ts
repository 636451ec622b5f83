import { Task, TaskState, taskStateToJSON, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { StoreClosedError } from '../errors/index.ts';
import { callerOfContext, isTaskVisible, seesEveryTask } from './agent-executor.ts';
import type { Caller } from '../kernel/index.ts';
import type { A2aTaskRecord, A2aTaskRepository } from './task-repository.ts';
import { UNFINISHED_TASK_STATES } from './unfinished-tasks.ts';

/** Default bound of the task store (spec/05). */
export const DEFAULT_MAX_TASKS = 1000;

const TERMINAL = new Set<TaskState>([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

/** Whether a task state is final. */
export function isTerminalState(state: TaskState | undefined): boolean {
  return state !== undefined && TERMINAL.has(state);
}

/** Options of {@link BoundedTaskStore}. */
export interface BoundedTaskStoreOptions {
  repository: A2aTaskRepository;
  now: () => number;
  maxTasks?: number;
  /**
   * Aborted when the daemon stops: from then on a task's write that meets the store closed (it
   * closes after the kernel's shutdown ended the turns, and the executor's last write of a task may
   * come after) is dropped quietly, and a read that does answers the task as this process last
   * wrote it (see {@link BoundedTaskStore.load}). The next start gives such a task its turn's end
   * (task-recovery.ts). Any other failure is thrown, as before the stop.
   */
  stopping?: AbortSignal | undefined;
  /** Told of each task saved canceled (whoever canceled it). */
  canceled?: ((taskId: string) => void) | undefined;
}

/**
 * The SDK's `TaskStore` over a persisted {@link A2aTaskRepository}, bounded: inserting a new
 * task past `maxTasks` evicts the oldest finished task first (spec/05). Running tasks are never
 * evicted, so the bound can be exceeded while that many tasks run.
 */
export class BoundedTaskStore implements TaskStore {
  readonly #repository: A2aTaskRepository;
  readonly #now: () => number;
  readonly #max: number;
  readonly #stopping: AbortSignal | undefined;
  readonly #canceled: ((taskId: string) => void) | undefined;
  /**
   * The unfinished tasks this process wrote, as it last wrote them, the last written last: what a
   * read answers once the store closed (see `stopping`). At most `maxTasks` (the oldest forgotten
   * first); a task is forgotten at a save of its end that is dropped (another end came first) or
   * fails, and at one that succeeds unless the daemon stops (then it is kept, for the reads that come
   * after the store closed).
   */
  readonly #written = new Map<string, A2aTaskRecord['task']>();
  /** What to do when a task is saved canceled, by task id (see {@link onCanceled}). */
  readonly #cancelers = new Map<string, (task: Task, by: Caller | undefined) => void>();
  /** The last write of each task under way (see {@link update}): a task's writes run one after another. */
  readonly #writes = new Map<string, Promise<unknown>>();

  constructor(options: BoundedTaskStoreOptions) {
    this.#repository = options.repository;
    this.#now = options.now;
    this.#max = options.maxTasks ?? DEFAULT_MAX_TASKS;
    this.#stopping = options.stopping;
    this.#canceled = options.canceled;
  }

  /**
   * Saves the task, after the writes of it under way (see {@link update}), unless it has ended
   * meanwhile: the first end of a task wins (A2A holds an ended task final), a save that would give
   * an ended task another state is dropped (the SDK then answers a cancel of it `TaskNotCancelable`).
   * Dropped too when it meets the store closed while the daemon stops (see `stopping`).
   */
  async save(task: Task, context?: ServerCallContext): Promise<void> {
    try {
      await this.#inTurn(task.id, () => this.#save(task, callerOfContext(context)));
    } catch (error) {
      if (!this.#closedAtStop(error)) throw error;
    }
  }

  /**
   * Changes the task as `change` says and saves it, unless it is unknown or has ended (a client's
   * cancel, whichever binding made it); `change` returns false to leave it as it is. No other write
   * of the task (a cancel the SDK saves) lands between the load and the save: a cancel saved before
   * is kept, one made meanwhile comes after and finds the task ended (the first end wins, see
   * {@link save}). Resolves with the task saved, or undefined when none was.
   */
  update(taskId: string, change: (task: Task) => boolean): Promise<Task | undefined> {
    return this.#inTurn(taskId, async () => {
      const task = await this.load(taskId);
      if (task === undefined || isTerminalState(task.status?.state) || !change(task)) return undefined;
      await this.#save(task);
      return task;
    });
  }

  /** Runs `write` once the writes of the task before it have settled. */
  #inTurn<T>(taskId: string, write: () => Promise<T>): Promise<T> {
    const written = (this.#writes.get(taskId) ?? Promise.resolve()).then(write);
    const settled = written.catch(() => undefined);
    this.#writes.set(taskId, settled);
    void settled.then(() => {
      if (this.#writes.get(taskId) === settled) this.#writes.delete(taskId);
    });
    return written;
  }

  /** Whether `error` is the store closed while the daemon stops (see `stopping`). */
  #closedAtStop(error: unknown): boolean {
    return this.#stopping?.aborted === true && error instanceof StoreClosedError;
  }

  /**
   * Writes the task (see {@link save}), `by` the caller of the request that saves it, if any. A task
   * saved ended is no longer kept in `#written`, its save dropped or failed too; but for a save that
   * met the store closed at the stop, kept as it was.
   */
  async #save(task: Task, by?: Caller): Promise<void> {
    try {
      await this.#write(task, by);
    } catch (error) {
      if (isTerminalState(task.status?.state) && !this.#closedAtStop(error)) this.#written.delete(task.id);
      throw error;
    }
  }

  async #write(task: Task, by: Caller | undefined): Promise<void> {
    const state = task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED;
    const existing = await this.#repository.get(task.id);
    // The first end wins: an ended task is never given another state (a cancel the SDK read the
    // task for before the recovery saved it completed, say).
    if (existing?.finished === true && existing.state !== taskStateToJSON(state)) {
      this.#written.delete(task.id);
      return;
    }
    if (existing === undefined) {
      let count = await this.#repository.count();
      while (count >= this.#max) {
        const victim = await this.#repository.oldestFinished();
        if (victim === undefined) break;
        await this.#repository.delete(victim);
        count -= 1;
      }
    }
    const now = this.#now();
    const owner: unknown = task.metadata?.['loomAgent'];
    const agent = typeof owner === 'string' ? owner : (existing?.agent ?? '');
    const record: A2aTaskRecord = {
      id: task.id,
      contextId: task.contextId,
      agent,
      state: taskStateToJSON(state),
      finished: isTerminalState(state),
      task: Task.toJSON(task),
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    await this.#repository.put(record);
    // Once the daemon stops, an ended task is kept too: a request still open reads it back after the
    // store closed (the legacy tasks/send, its end saved just before).
    if (record.finished && this.#stopping?.aborted !== true) this.#written.delete(task.id);
    else this.#remember(task.id, record.task);
    if (state === TaskState.TASK_STATE_CANCELED) {
      const cancel = this.#cancelers.get(task.id);
      this.#cancelers.delete(task.id);
      this.#canceled?.(task.id);
      cancel?.(task, by);
    }
  }

  /** Keeps the task as last written (see `#written`), the oldest forgotten past `maxTasks`. */
  #remember(taskId: string, task: A2aTaskRecord['task']): void {
    this.#written.delete(taskId);
    this.#written.set(taskId, task);
    for (const oldest of this.#written.keys()) {
      if (this.#written.size <= Math.max(this.#max, 1)) break;
      this.#written.delete(oldest);
    }
  }

  /**
   * Calls `cancel` once, with the task saved and who canceled it (the caller of the request that saved it: undefined
   * when no request did), when the task is next saved canceled, whoever cancels it (the SDK marks a task canceled in
   * the store itself when no executor runs it: a task whose turn runs without one, resumed after a restart). Returns
   * the function that stops watching.
   */
  onCanceled(taskId: string, cancel: (task: Task, by: Caller | undefined) => void): () => void {
    this.#cancelers.set(taskId, cancel);
    return () => {
      if (this.#cancelers.get(taskId) === cancel) this.#cancelers.delete(taskId);
    };
  }

  /**
   * Every task left unfinished (submitted, working, input-required, auth-required), with its
   * agent's name: at start, those whose turns the process that ran them left (see
   * `recoverTasks`). Read whole before any is changed (bounded by the store's size).
   */
  async unfinished(): Promise<{ task: Task; agent: string }[]> {
    const found: { task: Task; agent: string }[] = [];
    for (const state of UNFINISHED_TASK_STATES) {
      for (let offset = 0; ; offset += 100) {
        const { records } = await this.#repository.list({ state, limit: 100, offset });
        for (const record of records) found.push({ task: Task.fromJSON(record.task), agent: record.agent });
        if (records.length < 100) break;
      }
    }
    return found;
  }

  /**
   * The task, or undefined when it is unknown or the context's caller may not see it
   * (`isTaskVisible`), or `agent` is given and the task is another agent's. Once the store closed
   * while the daemon stops (see `stopping`), the task as this process last wrote it (the executor's
   * last update of a task its turn's end canceled reads it); the store's failure is thrown for any
   * other task (not known missing).
   */
  async load(taskId: string, context?: ServerCallContext, agent?: string): Promise<Task | undefined> {
    let task: Task | undefined;
    let owner: unknown;
    try {
      const record = await this.#repository.get(taskId);
      task = record === undefined ? undefined : Task.fromJSON(record.task);
      owner = record?.agent;
    } catch (error) {
      const written = this.#written.get(taskId);
      if (!this.#closedAtStop(error) || written === undefined) throw error;
      task = Task.fromJSON(written);
      owner = task.metadata?.['loomAgent'];
    }
    if (task === undefined || (agent !== undefined && owner !== agent)) return undefined;
    return isTaskVisible(task, callerOfContext(context)) ? task : undefined;
  }

  /**
   * The store as the A2A endpoints of `agent` see it (`/a2a/{agent}/…`): a task is reached through
   * its own agent's endpoints only, another agent's is unknown there (loaded as none, listed by
   * none), whatever the request (a get, a message, a cancel, a subscription, a push config).
   */
  ofAgent(agent: string): TaskStore {
    return {
      save: (task, context) => this.save(task, context),
      load: (taskId, context) => this.load(taskId, context, agent),
      list: (params, context) => this.list(params, context, agent),
    };
  }

  /** A page of the tasks the context's caller may see (of `agent` only, when given), newest first. */
  async list(params: ListTasksRequest, context?: ServerCallContext, agent?: string): Promise<ListTasksResponse> {
    const pageSize = params.pageSize ?? 50;
    const offset = params.pageToken === '' ? 0 : Math.max(0, Number.parseInt(params.pageToken, 10) || 0);
    const updatedAfter = params.statusTimestampAfter === undefined ? undefined : Date.parse(params.statusTimestampAfter);
    const query = {
      ...(agent === undefined ? {} : { agent }),
      ...(params.contextId === '' ? {} : { contextId: params.contextId }),
      ...(params.status === TaskState.TASK_STATE_UNSPECIFIED ? {} : { state: taskStateToJSON(params.status) }),
      ...(updatedAfter === undefined || Number.isNaN(updatedAfter) ? {} : { updatedAfter }),
    };
    const caller = callerOfContext(context);
    let tasks: Task[];
    let total: number;
    if (seesEveryTask(caller)) {
      const page = await this.#repository.list({ ...query, limit: pageSize, offset });
      tasks = page.records.map((record) => Task.fromJSON(record.task));
      total = page.total;
    } else {
      // The store holds at most `maxTasks` (plus running ones): filter them all, then page.
      const all = await this.#repository.list({ ...query, limit: Math.max(this.#max, 1) * 2, offset: 0 });
      const visible = all.records.map((record) => Task.fromJSON(record.task)).filter((task) => isTaskVisible(task, caller));
      tasks = visible.slice(offset, offset + pageSize);
      total = visible.length;
    }
    const next = offset + tasks.length;
    return { tasks, nextPageToken: next < total ? String(next) : '', pageSize, totalSize: total };
  }
}
