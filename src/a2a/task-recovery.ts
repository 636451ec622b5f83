/**
 * `recoverTasks`: at start, each A2A task the previous process left unfinished meets the turn its
 * message started (decision 0045): a turn resumed here finishes the task when it ends (the task
 * `input-required` while the turn waits for an approval, as a live task is), a turn that ended
 * gives it its outcome, and only a task whose turn cannot be found is failed, its client told to
 * send the message again. A task the store could not answer for is asked for again while the
 * server runs. Every webhook of the task is told what the task became.
 */
import { type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import type { Clock, Logger } from '../contracts/index.ts';
import { AccessDeniedError, AgentNotFoundError, CapabilityDeniedError, isLoomError, messageOf, StoreError } from '../errors/index.ts';
import { type Kernel, type KeyedTurn, untilTurnHere } from '../kernel/index.ts';
import type { TurnResult } from '../runtime/index.ts';
import { agentMessage, approvalMessage, callerOfKey, kernelOfTask, responseArtifact, type TaskKernel, taskTurnKey, textOf } from './agent-executor.ts';
import { type BoundedTaskStore, isTerminalState } from './bounded-task-store.ts';
import type { PushNotifier } from './push-notifier.ts';

/** The status message of a task whose turn cannot be found after a restart. */
export const INTERRUPTED_TASK_TEXT = 'The task was interrupted: the Loom daemon stopped while it ran. Send the message again.';
/** How long after the store could not say what became of a task's turn the recovery asks again (on the injected clock). */
export const TASK_RECOVERY_RETRY_MS = 30_000;
/** How many times it asks again before it leaves the task unfinished, for the next start (10 minutes). */
export const TASK_RECOVERY_ATTEMPTS = 20;

/** What {@link recoverTasks} works on. */
export interface TaskRecoveryParts {
  kernel: Kernel;
  store: BoundedTaskStore;
  notifier: PushNotifier | undefined;
  logger: Logger;
  now: () => number;
  /**
   * Paces the asking again while a task's turn runs on another node, and after the store could
   * not answer; without it, a task the store could not answer for is left for the next start.
   */
  clock: Clock | undefined;
  /** Aborted when the A2A server closes: a task still waiting for its turn is left as it is, for the next start. */
  closing: AbortSignal;
  /** Whether other nodes share the store now: only then may a turn that does not run here run on one of them. */
  othersAlive: () => Promise<boolean>;
}

/**
 * Settles the unfinished tasks of the store (see the file's comment). Resolves once every task
 * whose turn cannot be found is failed and every task whose turn ended has that turn's outcome;
 * the tasks whose turns still run are settled in the background when they end, and those the
 * store could not answer for are asked for again in the background.
 */
export async function recoverTasks(parts: TaskRecoveryParts): Promise<void> {
  const { store, logger } = parts;
  const later = new UnansweredTasks(parts);
  let failed = 0;
  let waiting = 0;
  let unanswered: Unanswered | undefined;
  for (const { task, agent } of await store.unfinished()) {
    // The store out of reach: the tasks after are asked for with it, in the shared retries.
    if (unanswered?.store === true) {
      later.add(task, agent, 0);
      continue;
    }
    const recovered = await recoverTask(parts, later, { task, agent, tries: 0 });
    if (recovered === 'failed') failed += 1;
    else if (recovered === 'waiting') waiting += 1;
    else if (typeof recovered === 'object') unanswered ??= recovered;
  }
  if (failed > 0) logger.warn({ tasks: failed }, 'failed the A2A tasks the previous daemon left unfinished whose turns cannot be found');
  if (waiting > 0) logger.info({ tasks: waiting }, 'A2A tasks the previous daemon left unfinished go on with their resumed turns');
  later.told(unanswered);
}

/**
 * Why the store could not say what became of a task's turn: it failed (`store`: out of reach), or
 * the turn does not run here and no other node runs now (one may take it over: its lease lapses).
 */
interface Unanswered {
  error: unknown;
  store: boolean;
}

/** What became of a task the recovery met: failed (its turn cannot be found), settled (its turn had ended), waiting (its turn runs: settled when it ends), or unanswered (asked again later). */
type Recovered = 'failed' | 'settled' | 'waiting' | Unanswered;

/** A task the recovery meets, and how many times it was asked for again. */
interface Met {
  task: Task;
  agent: string;
  tries: number;
}

/** Meets one unfinished task with its turn (see the file's comment); a task left unanswered is given to `later`. */
async function recoverTask(parts: TaskRecoveryParts, later: UnansweredTasks, met: Met): Promise<Recovered> {
  const { logger } = parts;
  const { task, agent } = met;
  let turn: KeyedTurn | undefined;
  try {
    turn = await turnOf(parts, task, agent);
  } catch (error) {
    // Not known not to exist (the store out of reach): asked again later.
    return later.add(task, agent, met.tries, { error, store: error instanceof StoreError });
  }
  if (turn === undefined) {
    await settle(parts, task, agent, { state: TaskState.TASK_STATE_FAILED, text: INTERRUPTED_TASK_TEXT });
    return 'failed';
  }
  if (turn.state === 'done') {
    const outcome = await outcomeOf(parts, turn, false);
    if (!('state' in outcome)) return later.add(task, agent, met.tries, outcome);
    await settle(parts, task, agent, outcome);
    return 'settled';
  }
  // Running, not here: only another node may run it (or take it over once its lease lapses).
  const elsewhere = !turn.here && parts.clock !== undefined && (await parts.othersAlive());
  if (!turn.here && !elsewhere) return later.add(task, agent, met.tries, { error: undefined, store: false });
  // Its client may cancel it meanwhile: no executor runs it now, so its turn is canceled here.
  const unwatch = watchCancel(parts, task, agent);
  void showApprovals(parts, task, agent, turn).catch((error: unknown) =>
    logger.warn({ err: error, taskId: task.id, agent }, 'could not show an A2A task waiting for an approval of its resumed turn'),
  );
  void outcomeOf(parts, turn, elsewhere)
    .then((outcome) => {
      // Watched no longer: the task's own end (canceled with its turn) is not a client's cancel.
      unwatch();
      if ('state' in outcome) return settle(parts, task, agent, outcome);
      logger.warn(
        { err: outcome.error, taskId: task.id, agent },
        `could not read how the turn of an unfinished A2A task ended; asked again in ${TASK_RECOVERY_RETRY_MS / 1000} s`,
      );
      // The try count goes on: a task is asked for again TASK_RECOVERY_ATTEMPTS times in all.
      later.add(task, agent, met.tries, outcome);
      return undefined;
    })
    .catch((error: unknown) => logger.warn({ err: error, taskId: task.id, agent }, 'could not give an A2A task the outcome of its resumed turn'))
    .finally(unwatch);
  return 'waiting';
}

/**
 * Cancels the task's turn when its client cancels the task (saved canceled: no executor runs it).
 * Returns the function that stops watching.
 */
function watchCancel(parts: TaskRecoveryParts, task: Task, agent: string): () => void {
  return parts.store.onCanceled(task.id, () => {
    void cancelTurnOf(parts, task, agent).catch((error: unknown) =>
      parts.logger.warn({ err: error, taskId: task.id, agent }, 'could not cancel the resumed turn of a canceled A2A task'),
    );
  });
}

/**
 * The tasks the store could not say what became of, asked for again together: one round every
 * {@link TASK_RECOVERY_RETRY_MS} on the clock meets each with its turn again, one after another,
 * and stops at the first the store fails for (the rest wait for the next round, the failed one
 * last); a round counts as one try for each task in it, and logs one line. A task is asked for
 * {@link TASK_RECOVERY_ATTEMPTS} times at most, then left unfinished for the next start. A
 * client's cancel of a task waiting here cancels its turn, as for a turn resumed here. The rounds
 * stop when the server closes.
 */
class UnansweredTasks {
  readonly #parts: TaskRecoveryParts;
  readonly #waiting = new Map<string, Met & { unwatch: () => void }>();
  /** Whether the rounds run (until no task waits). */
  #running = false;
  /** The tasks given up in the round under way (logged together at its end). */
  #gaveUp: string[] | undefined;

  constructor(parts: TaskRecoveryParts) {
    this.#parts = parts;
  }

  /** Keeps the task for the next round, unless it was asked for as many times as it may be. Returns `why`. */
  add(task: Task, agent: string, tries: number, why: Unanswered = { error: undefined, store: false }): Unanswered {
    const { clock, closing, logger } = this.#parts;
    this.#waiting.get(task.id)?.unwatch();
    if (clock === undefined || closing.aborted) return why;
    if (tries >= TASK_RECOVERY_ATTEMPTS) {
      if (this.#gaveUp !== undefined) this.#gaveUp.push(task.id);
      else logger.error({ err: why.error, taskId: task.id, agent, tries }, `${GAVE_UP}: the task is left unfinished for the next start`);
      return why;
    }
    // Its client may cancel it while it waits here: its turn is canceled then, if it runs here.
    const stop = this.#parts.store.onCanceled(task.id, () => {
      unwatch();
      void cancelTurnOf(this.#parts, task, agent).catch((error: unknown) =>
        logger.warn({ err: error, taskId: task.id, agent }, 'could not cancel the resumed turn of a canceled A2A task'),
      );
    });
    const unwatch = (): void => {
      stop();
      if (this.#waiting.get(task.id)?.unwatch === unwatch) this.#waiting.delete(task.id);
    };
    this.#waiting.set(task.id, { task, agent, tries, unwatch });
    if (!this.#running) {
      this.#running = true;
      void this.#run();
    }
    return why;
  }

  /** Logs, once, the tasks the start could not settle (`why`: the first reason). */
  told(why: Unanswered | undefined): void {
    if (why !== undefined && this.#waiting.size > 0) this.#log('error', why, this.#waiting.size);
  }

  #log(level: 'error' | 'warn', why: Unanswered, asked: number): void {
    const tasks = this.#waiting.size;
    this.#parts.logger[level](
      { err: why.error, asked, tasks, taskIds: [...this.#waiting.keys()].slice(0, 10) },
      `could not yet say what became of the turns of ${tasks} unfinished A2A task(s) (the store ${why.store ? 'could not answer' : 'says they run, not here'}); asked again in ${TASK_RECOVERY_RETRY_MS / 1000} s`,
    );
  }

  async #run(): Promise<void> {
    try {
      await this.#rounds();
    } catch (error) {
      this.#parts.logger.error({ err: error }, 'could not ask again what became of the turns of unfinished A2A tasks');
    } finally {
      this.#running = false;
    }
  }

  async #rounds(): Promise<void> {
    const { clock, closing, logger } = this.#parts;
    while (clock !== undefined && this.#waiting.size > 0) {
      try {
        await clock.sleep(TASK_RECOVERY_RETRY_MS, { signal: closing });
      } catch {
        for (const waiting of [...this.#waiting.values()]) waiting.unwatch();
        return; // closing
      }
      const gaveUp: string[] = [];
      this.#gaveUp = gaveUp;
      let asked = 0;
      let failed: Unanswered | undefined;
      for (const waiting of [...this.#waiting.values()]) {
        if (closing.aborted) break;
        const met = { task: waiting.task, agent: waiting.agent, tries: waiting.tries + 1 };
        // Out of reach: the rest wait for the next round where they are (this one counted).
        if (failed?.store === true) {
          waiting.tries = met.tries;
          if (met.tries < TASK_RECOVERY_ATTEMPTS) continue;
          waiting.unwatch();
          gaveUp.push(met.task.id);
          continue;
        }
        waiting.unwatch();
        asked += 1;
        let task: Task | undefined;
        try {
          task = await this.#parts.store.load(met.task.id);
        } catch (error) {
          failed = this.add(met.task, met.agent, met.tries, { error, store: true });
          continue;
        }
        if (task === undefined || isTerminalState(task.status?.state)) continue;
        const recovered = await recoverTask(this.#parts, this, { ...met, task });
        if (typeof recovered === 'object') failed ??= recovered;
      }
      this.#gaveUp = undefined;
      if (gaveUp.length > 0) {
        logger.error(
          { err: failed?.error, tasks: gaveUp.length, taskIds: gaveUp.slice(0, 10) },
          `${GAVE_UP}: the tasks are left unfinished for the next start`,
        );
      }
      if (failed !== undefined && this.#waiting.size > 0) this.#log('warn', failed, asked);
    }
  }
}

/** The start of the line logged when a task is no longer asked for. */
const GAVE_UP = `gave up asking what became of the turn of an unfinished A2A task after ${TASK_RECOVERY_ATTEMPTS} tries`;

/**
 * Shows the task as a live one is shown while its resumed turn runs here: `input-required`, with
 * the request as its status message, while a tool call of the turn waits for a human's approval,
 * and `working` again once that call has its result (approved or denied). Written as the turn
 * goes, never over the task's end.
 */
async function showApprovals(parts: TaskRecoveryParts, task: Task, agent: string, turn: KeyedTurn): Promise<void> {
  // The approval requests the turn waits on, by tool call.
  const asked = new Map<string, Message>();
  let written = Promise.resolve();
  let queued = false;
  const show = (): void => {
    if (queued) return;
    queued = true;
    // One write failed leaves the next to show the turn as it is by then.
    written = written.then(async () => {
      try {
        queued = false;
        const shown = await parts.store.update(task.id, (current) => {
          const message = [...asked.values()].at(-1);
          const state = message === undefined ? TaskState.TASK_STATE_WORKING : TaskState.TASK_STATE_INPUT_REQUIRED;
          if (current.status?.state === state && textOf(current.status.message) === textOf(message)) return false;
          current.status = { state, message, timestamp: new Date(parts.now()).toISOString() };
          if (message !== undefined) current.history = [...current.history, message];
          return true;
        });
        if (shown !== undefined) parts.notifier?.notifyStored(agent, shown);
      } catch (error) {
        parts.logger.warn({ err: error, taskId: task.id, agent }, 'could not show an A2A task waiting for an approval of its resumed turn');
      } finally {
        queued = false;
      }
    });
  };
  for await (const event of turn.follow()) {
    if (parts.closing.aborted) break;
    if (event.type === 'approval-request') asked.set(event.toolCallId, approvalMessage(task.id, task.contextId, event));
    else if (event.type !== 'tool-result' || !asked.delete(event.toolCallId)) continue;
    show();
  }
  await written;
}

/**
 * The turn the task's last message started, found as its creator (whose rights are checked), or
 * undefined when there is none: never journaled (an agent type whose steps are not, a task from
 * before turns were found so), forgotten, or its agent gone.
 */
async function turnOf(parts: TaskRecoveryParts, task: Task, agent: string): Promise<KeyedTurn | undefined> {
  const creator = asCreator(parts, task);
  const message = task.history.findLast((entry) => entry.role === Role.ROLE_USER);
  if (creator === undefined || message === undefined || agent === '') return undefined;
  try {
    return await creator.keyedTurn(agent, taskTurnKey(task.id, message.messageId));
  } catch (error) {
    // Its agent gone, or out of its creator's reach now: no turn of theirs to find.
    if (!(error instanceof AgentNotFoundError || error instanceof AccessDeniedError || error instanceof CapabilityDeniedError)) throw error;
    parts.logger.info({ err: error, taskId: task.id, agent }, 'the turn of an unfinished A2A task cannot be found');
    return undefined;
  }
}

/**
 * The kernel as the task's creator (its `loomCallerKey`), in the task's conversation (see
 * `kernelOfTask`); undefined when the task names no creator Loom wrote.
 */
function asCreator(parts: TaskRecoveryParts, task: Task): TaskKernel | undefined {
  const creator: unknown = task.metadata?.['loomCallerKey'];
  const caller = typeof creator === 'string' ? callerOfKey(creator) : undefined;
  return caller === undefined ? undefined : kernelOfTask(parts.kernel, caller, task.contextId);
}

/**
 * Cancels the task's turn, as its creator: the task's client canceled the task. Only while that turn
 * still runs (the conversation's current turn is the one canceled: not a later task's).
 */
async function cancelTurnOf(parts: TaskRecoveryParts, task: Task, agent: string): Promise<void> {
  const creator = asCreator(parts, task);
  if (creator === undefined || (await turnOf(parts, task, agent))?.state !== 'running') return;
  await creator.cancelTurn(agent);
}

/** How a task ends: its state, and the text of its status message (the reply, when it completed). */
interface TaskOutcome {
  state: TaskState;
  text: string;
}

/**
 * The outcome of the task of `turn`, once the turn ends (asked again every 2 s while it runs on
 * another node, when `elsewhere`); unanswered when the store could not say, the turn does not run
 * here (nor, after 10 minutes, ended elsewhere), or the server closes meanwhile: the task is asked
 * for again later, or left unfinished for the next start.
 */
async function outcomeOf(parts: TaskRecoveryParts, turn: KeyedTurn, elsewhere: boolean): Promise<TaskOutcome | Unanswered> {
  const { clock } = parts;
  let result: TurnResult;
  try {
    result = clock === undefined || !elsewhere ? await turn.result() : await untilTurnHere(() => turn.result(), clock, parts.closing);
  } catch (error) {
    if (parts.closing.aborted || error instanceof StoreError) return { error, store: true };
    // Not ended, not here: a turn only a lapsed lease gives to a node, or one still running elsewhere.
    if (isLoomError(error) && (error.code === 'TURN_RUNNING' || error.code === 'TURN_TAKEN_OVER')) return { error, store: false };
    if (isLoomError(error) && error.code === 'TURN_CANCELLED') return { state: TaskState.TASK_STATE_CANCELED, text: `The task was canceled: ${error.message}` };
    return { state: TaskState.TASK_STATE_FAILED, text: isLoomError(error) ? `${error.code}: ${error.message}` : messageOf(error) };
  }
  return { state: TaskState.TASK_STATE_COMPLETED, text: result.text };
}

/**
 * Gives the task `outcome` as the executor would have (a completed task's reply as its `response`
 * artifact too), unless it ended meanwhile (its client canceled it, even between this load and
 * save: see `BoundedTaskStore.update`) or the server closed; then tells its webhooks.
 */
async function settle(parts: TaskRecoveryParts, stored: Task, agent: string, outcome: TaskOutcome): Promise<void> {
  if (parts.closing.aborted) return;
  const settled = await parts.store.update(stored.id, (task) => {
    const message: Message = agentMessage(task.id, task.contextId, outcome.text);
    task.status = { state: outcome.state, message, timestamp: new Date(parts.now()).toISOString() };
    task.history = [...task.history, message];
    if (outcome.state === TaskState.TASK_STATE_COMPLETED) {
      const response = responseArtifact(task.id, outcome.text);
      task.artifacts = [...task.artifacts.filter((artifact) => artifact.artifactId !== response.artifactId), response];
    }
    return true;
  });
  if (settled !== undefined) parts.notifier?.notifyStored(agent, settled);
}
