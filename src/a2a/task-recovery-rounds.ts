/**
 * The retry rounds of the recovery of unfinished A2A tasks (task-recovery.ts): the tasks the store
 * could not say what became of (or whose turns run, not here) are met with their turns again,
 * together, one round every 30 s, 20 times at most each.
 */
import { type Task, TaskState } from '@a2a-js/sdk';
import { StoreError } from '../errors/index.ts';
import { isTerminalState } from './bounded-task-store.ts';
import { CANCEL_FAILED, type Canceled, cancelTurnOf } from './task-recovery-cancel.ts';
import type { TaskRecoveryParts } from './task-recovery.ts';

/** How long after the store could not say what became of a task's turn the recovery asks again (on the injected clock). */
export const TASK_RECOVERY_RETRY_MS = 30_000;
/** How many times it asks again before it leaves the task unfinished, for the next start (10 minutes). */
export const TASK_RECOVERY_ATTEMPTS = 20;

/**
 * Why the store could not say what became of a task's turn: it failed (`store`: out of reach), or
 * the turn does not run here and no other node runs now (one may take it over: its lease lapses).
 */
export interface Unanswered {
  error: unknown;
  store: boolean;
}

/** The turn runs, not here, and no node may run it now. */
export const NOT_HERE: Unanswered = { error: undefined, store: false };

/** The reason to tell of two: the store's failure before a turn not here. */
export function worse(kept: Unanswered | undefined, next: Unanswered): Unanswered {
  return kept === undefined || (next.store && !kept.store) ? next : kept;
}

/**
 * What became of a task the recovery met: failed (its turn cannot be found), settled (its turn had
 * ended), waiting (its turn runs: settled when it ends), left (an unexpected failure, logged: left
 * for the next start), or unanswered (asked again later).
 */
export type Recovered = 'failed' | 'settled' | 'waiting' | 'left' | Unanswered;

/**
 * A task the recovery meets, and how many times it was asked for again; `unwatch` stops the watch of
 * a round on it (see {@link UnansweredTasks.add}) as its end is written (the recovery's own cancel is
 * not a client's).
 */
export interface Met {
  task: Task;
  agent: string;
  tries: number;
  unwatch?: (() => void) | undefined;
}

/** A task waiting for the next round: `canceled` when a client canceled it and its turn is to be canceled once here. */
interface Waiting extends Met {
  canceled: Canceled | undefined;
  unwatch: () => void;
}

/**
 * The tasks the store could not say what became of, asked for again together: one round every
 * {@link TASK_RECOVERY_RETRY_MS} on the clock meets each with its turn again, one after another,
 * and stops at the first the store fails for (the rest wait for the next round); a round counts
 * as one try for each task in it, and logs one line. A task is asked for
 * {@link TASK_RECOVERY_ATTEMPTS} times at most, then left unfinished for the next start. A
 * client's cancel of a task waiting here cancels its turn (that turn, by its journal id) once it
 * runs here: at once, or in a later round. The rounds stop when the server closes.
 */
export class UnansweredTasks {
  readonly #parts: TaskRecoveryParts;
  /** Meets a task with its turn again (the recovery's `recoverTask`, giving it to these rounds). */
  readonly #recover: (met: Met) => Promise<Recovered>;
  readonly #waiting = new Map<string, Waiting>();
  /** Whether the rounds run (until no task waits). */
  #running = false;
  /** The tasks given up in the round under way (logged together at its end). */
  #gaveUp: GaveUp[] | undefined;

  constructor(parts: TaskRecoveryParts, recover: (met: Met) => Promise<Recovered>) {
    this.#parts = parts;
    this.#recover = recover;
  }

  /**
   * Keeps the task for the next round (`canceled`, or canceled while it waited, when its turn is to
   * be canceled), unless it was asked for as many times as it may be. Returns `why`.
   */
  add(task: Task, agent: string, tries: number, why: Unanswered = NOT_HERE, canceled?: Canceled): Unanswered {
    const { clock, closing, logger, store } = this.#parts;
    const earlier = this.#waiting.get(task.id);
    const cancel = canceled ?? earlier?.canceled;
    if (clock === undefined || closing.aborted || tries >= TASK_RECOVERY_ATTEMPTS) {
      earlier?.unwatch();
      if (clock === undefined || closing.aborted) return why;
      const given = { taskId: task.id, canceled: cancel !== undefined };
      if (this.#gaveUp !== undefined) this.#gaveUp.push(given);
      else this.#tellGaveUp([given], why.error, { agent, tries });
      return why;
    }
    const waiting: Waiting = { task, agent, tries, canceled: cancel, unwatch: () => undefined };
    // Its client may cancel it while it waits here: its turn is canceled then, if it runs here, else in a later round.
    const stop = store.onCanceled(task.id, (saved, by) => {
      waiting.canceled = { by };
      this.#parts.notifier?.notifyStored(agent, saved);
      void cancelTurnOf(this.#parts, task, agent, waiting.canceled).then(
        (done) => {
          if (done) waiting.unwatch();
        },
        (error: unknown) => logger.warn({ err: error, taskId: task.id, agent }, CANCEL_FAILED),
      );
    });
    waiting.unwatch = () => {
      stop();
      if (this.#waiting.get(task.id) === waiting) this.#waiting.delete(task.id);
    };
    this.#waiting.set(task.id, waiting);
    // Its watcher is replaced above: no cancel is missed in between.
    earlier?.unwatch();
    this.#start();
    return why;
  }

  /** Logs, once, the tasks the start could not settle (`why`: the store's failure, else a turn not here). */
  told(why: Unanswered | undefined): void {
    if (why !== undefined && this.#waiting.size > 0) this.#log(why.store ? 'error' : 'info', why, this.#waiting.size);
  }

  /** Logs the tasks given up (`err`: why the last try failed), one line for those left unfinished, one for those canceled. */
  #tellGaveUp(gaveUp: GaveUp[], err: unknown, bindings: Record<string, unknown> = {}): void {
    for (const canceled of [false, true]) {
      const taskIds = gaveUp.filter((given) => given.canceled === canceled).map((given) => given.taskId);
      if (taskIds.length === 0) continue;
      const one = taskIds.length === 1;
      const why = canceled
        ? `${GAVE_UP_CANCELED}: ${one ? 'the task is canceled; its turn was' : 'the tasks are canceled; their turns were'} not found here to stop`
        : `${GAVE_UP}: ${one ? 'the task is' : 'the tasks are'} left unfinished for the next start`;
      this.#parts.logger.error({ err, ...bindings, tasks: taskIds.length, taskIds: taskIds.slice(0, 10) }, why);
    }
  }

  #log(level: 'error' | 'warn' | 'info', why: Unanswered, asked: number): void {
    const tasks = this.#waiting.size;
    this.#parts.logger[level](
      { err: why.error, asked, tasks, taskIds: [...this.#waiting.keys()].slice(0, 10) },
      `could not yet say what became of the turns of ${tasks} unfinished A2A task(s) (the store ${why.store ? 'could not answer' : 'says they run, not here'}); asked again in ${TASK_RECOVERY_RETRY_MS / 1000} s`,
    );
  }

  #start(): void {
    if (this.#running) return;
    this.#running = true;
    void this.#run();
  }

  async #run(): Promise<void> {
    try {
      await this.#rounds();
    } catch (error) {
      this.#parts.logger.error({ err: error }, 'could not ask again what became of the turns of unfinished A2A tasks');
    } finally {
      this.#running = false;
    }
    // A task added after the rounds found none waiting, before they ended.
    if (this.#waiting.size > 0 && !this.#parts.closing.aborted) this.#start();
  }

  async #rounds(): Promise<void> {
    const { clock, closing } = this.#parts;
    while (clock !== undefined && this.#waiting.size > 0) {
      try {
        await clock.sleep(TASK_RECOVERY_RETRY_MS, { signal: closing });
      } catch {
        for (const waiting of [...this.#waiting.values()]) waiting.unwatch();
        return; // closing
      }
      const gaveUp: GaveUp[] = [];
      this.#gaveUp = gaveUp;
      let asked = 0;
      let failed: Unanswered | undefined;
      try {
        for (const waiting of [...this.#waiting.values()]) {
          if (closing.aborted) break;
          const met = { task: waiting.task, agent: waiting.agent, tries: waiting.tries + 1 };
          // Out of reach: the rest wait for the next round where they are (this one counted).
          if (failed?.store === true) {
            waiting.tries = met.tries;
            if (met.tries < TASK_RECOVERY_ATTEMPTS) continue;
            waiting.unwatch();
            gaveUp.push({ taskId: met.task.id, canceled: waiting.canceled !== undefined });
            continue;
          }
          asked += 1;
          const recovered = await this.#meet(waiting, met);
          if (typeof recovered === 'object') failed = worse(failed, recovered);
          // Met (its own watcher, if any, registered): watched here no longer, unless canceled meanwhile.
          else if (waiting.canceled === undefined) waiting.unwatch();
        }
      } finally {
        this.#gaveUp = undefined;
      }
      if (gaveUp.length > 0) this.#tellGaveUp(gaveUp, failed?.error);
      // Stopping: nothing is asked again.
      if (failed !== undefined && this.#waiting.size > 0 && !closing.aborted) this.#log(failed.store ? 'warn' : 'info', failed, asked);
    }
  }

  /** Meets a waiting task again: with its turn, or, canceled, cancels its turn once it runs here. */
  async #meet(waiting: Waiting, met: Met): Promise<Recovered> {
    const { store } = this.#parts;
    if (waiting.canceled === undefined) {
      let task: Task | undefined;
      try {
        task = await store.load(met.task.id);
      } catch (error) {
        return this.add(met.task, met.agent, met.tries, { error, store: true });
      }
      if (task === undefined) return 'left';
      // Canceled elsewhere, or by a client before it was watched: its turn is canceled too.
      if (task.status?.state !== TaskState.TASK_STATE_CANCELED) {
        return isTerminalState(task.status?.state) ? 'settled' : this.#recover({ ...met, task, unwatch: waiting.unwatch });
      }
    }
    // Who canceled it, when a request here did.
    const by = waiting.canceled ?? { by: undefined };
    try {
      if (await cancelTurnOf(this.#parts, met.task, met.agent, by)) {
        waiting.unwatch();
        return 'settled';
      }
    } catch (error) {
      if (error instanceof StoreError) return this.add(met.task, met.agent, met.tries, { error, store: true }, by);
      // As `recoverTask` leaves a task it could not settle: asked for no more.
      waiting.unwatch();
      this.#parts.logger.error(
        { err: error, taskId: met.task.id, agent: met.agent },
        'could not stop the turn of a canceled A2A task the previous daemon left unfinished; its turn is left as it is',
      );
      return 'left';
    }
    return this.add(met.task, met.agent, met.tries, NOT_HERE, by);
  }
}

/** A task the rounds no longer ask for: `canceled` when its client canceled it, its turn to be canceled once here. */
interface GaveUp {
  taskId: string;
  canceled: boolean;
}

/** The start of the line logged when a task is no longer asked for. */
const GAVE_UP = `gave up asking what became of the turn of an unfinished A2A task after ${TASK_RECOVERY_ATTEMPTS} tries`;
/** The start of the line logged when the turn of a canceled task is no longer looked for. */
const GAVE_UP_CANCELED = `gave up looking for the turn of a canceled A2A task to stop after ${TASK_RECOVERY_ATTEMPTS} tries`;
