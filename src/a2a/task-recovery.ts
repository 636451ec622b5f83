/**
 * `recoverTasks`: at start, each A2A task the previous process left unfinished meets the turn its
 * message started (decision 0045): a turn resumed here finishes the task when it ends (the task
 * `input-required` while the turn waits for an approval, as a live task is), a turn that ended
 * gives it its outcome, and only a task whose turn cannot be found is failed, its client told to
 * send the message again. A task the store could not answer for is asked for again while the
 * server runs. Every webhook of the task is told what the task became. Its parts: the retry rounds
 * (task-recovery-rounds.ts), the cancel of a watched task's turn (task-recovery-cancel.ts), the
 * lookup of a task's turn (task-turn-lookup.ts, over task-turn-places.ts).
 */
import { type Message, type Task, TaskState } from '@a2a-js/sdk';
import type { Clock, Logger } from '../contracts/index.ts';
import { isLoomError, LoomError, messageOf, StoreError } from '../errors/index.ts';
import { type Kernel, type KeyedTurn, TURN_ELSEWHERE_RETRY_MS, untilTurnHere } from '../kernel/index.ts';
import type { TurnResult } from '../runtime/index.ts';
import { agentMessage, approvalMessage, responseArtifact, textOf, turnCanceledText, turnWasCanceled } from './agent-executor.ts';
import type { BoundedTaskStore } from './bounded-task-store.ts';
import type { PushNotifier } from './push-notifier.ts';
import { CANCEL_FAILED, type Canceled, cancelTurnOf } from './task-recovery-cancel.ts';
import { type Met, NOT_HERE, type Recovered, type Unanswered, UnansweredTasks, worse } from './task-recovery-rounds.ts';
import { turnOf } from './task-turn-lookup.ts';

/** The status message of a task whose turn cannot be found after a restart. */
export const INTERRUPTED_TASK_TEXT = 'The task was interrupted: the Loom daemon stopped while it ran. Send the message again.';

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
  /**
   * Whether the store leases each running turn to its node (PostgreSQL, decision 0061): a turn that
   * does not run here is taken over by a node once its lease lapses, this one included, so it is
   * waited for as one running elsewhere.
   */
  leasesTurns?: boolean | undefined;
}

/**
 * Settles the unfinished tasks of the store (see the file's comment). Resolves once every task
 * whose turn cannot be found is failed and every task whose turn ended has that turn's outcome;
 * the tasks whose turns still run are settled in the background when they end, and those the
 * store could not answer for are asked for again in the background.
 */
export async function recoverTasks(parts: TaskRecoveryParts): Promise<void> {
  const { store, logger } = parts;
  const later: UnansweredTasks = new UnansweredTasks(parts, (met) => recoverTask(parts, later, met));
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
    else if (typeof recovered === 'object') unanswered = worse(unanswered, recovered);
  }
  if (failed > 0) logger.warn({ tasks: failed }, 'failed the A2A tasks the previous daemon left unfinished whose turns cannot be found');
  if (waiting > 0) logger.info({ tasks: waiting }, 'A2A tasks the previous daemon left unfinished go on with their resumed turns');
  later.told(unanswered);
}

/**
 * Meets one unfinished task with its turn (see the file's comment); a task left unanswered, or
 * whose outcome the store failed to write, is given to `later`.
 */
async function recoverTask(parts: TaskRecoveryParts, later: UnansweredTasks, met: Met): Promise<Recovered> {
  const { task, agent } = met;
  try {
    return await meetTurn(parts, later, met);
  } catch (error) {
    if (parts.closing.aborted) return 'left';
    // Not known not to exist, or its outcome not written (the store out of reach): asked again later.
    if (error instanceof StoreError) return later.add(task, agent, met.tries, { error, store: true });
    parts.logger.error(
      { err: error, taskId: task.id, agent },
      'could not settle an A2A task the previous daemon left unfinished; it is left for the next start',
    );
    return 'left';
  }
}

/** {@link recoverTask}, its failures thrown. */
async function meetTurn(parts: TaskRecoveryParts, later: UnansweredTasks, met: Met): Promise<Recovered> {
  const { logger } = parts;
  const { task, agent } = met;
  const turn = await turnOf(parts, task, agent);
  if (turn === undefined) {
    await settle(parts, task, agent, { state: TaskState.TASK_STATE_FAILED, text: INTERRUPTED_TASK_TEXT }, met.unwatch);
    return 'failed';
  }
  if (turn.state === 'done') {
    const outcome = await outcomeOf(parts, () => turn.result());
    if (!('state' in outcome)) return later.add(task, agent, met.tries, outcome);
    await settle(parts, task, agent, outcome, met.unwatch);
    return 'settled';
  }
  // Running, not here: only another node may run it, or take it over once its lease lapses.
  const elsewhere = !turn.here && parts.clock !== undefined && (parts.leasesTurns === true || (await parts.othersAlive()));
  if (!turn.here && !elsewhere) return later.add(task, agent, met.tries, NOT_HERE);
  // Its client may cancel it meanwhile: no executor runs it now, so its turn is canceled here, at
  // once, or once it runs here (taken over).
  let canceled: Canceled | undefined;
  const unwatch = parts.store.onCanceled(task.id, (saved, by) => {
    canceled = { by };
    parts.notifier?.notifyStored(agent, saved);
    // At once when it runs here, else once it does (see `endOf`).
    void cancelTurnOf(parts, task, agent, canceled).catch((error: unknown) => logger.warn({ err: error, taskId: task.id, agent }, CANCEL_FAILED));
  });
  void endOf(parts, task, agent, turn, () => canceled)
    .then((outcome) => {
      if (parts.closing.aborted) return undefined;
      // Watched no longer once its end is written: the task's own end (canceled with its turn) is not a client's cancel.
      if ('state' in outcome) return settle(parts, task, agent, outcome, unwatch);
      unwatch();
      // Told of in the next round's line; the try count goes on (TASK_RECOVERY_ATTEMPTS in all).
      later.add(task, agent, met.tries, outcome, canceled);
      return undefined;
    })
    .catch((error: unknown) => {
      if (parts.closing.aborted) return;
      if (error instanceof StoreError) later.add(task, agent, met.tries, { error, store: true }, canceled);
      else logger.warn({ err: error, taskId: task.id, agent }, 'could not give an A2A task the outcome of its resumed turn');
    })
    .finally(unwatch);
  return 'waiting';
}

/**
 * The outcome of the task of `found`, a running turn, once it ends. A turn not here (running on
 * another node, or to be taken over once its lease lapses, this node included) is looked up again
 * every 2 s until it runs here or has ended (10 minutes at most: then unanswered). While it runs
 * here, the task shows its approvals; a task a client canceled before (`canceled`: who) has its
 * turn canceled then, asked again until it is or it ends.
 */
async function endOf(
  parts: TaskRecoveryParts,
  task: Task,
  agent: string,
  found: KeyedTurn,
  canceled: () => Canceled | undefined,
): Promise<TaskOutcome | Unanswered> {
  const { clock, closing, logger } = parts;
  let turn: KeyedTurn | undefined = found;
  if (!found.here && clock !== undefined) {
    try {
      turn = await untilTurnHere(() => hereOrEnded(parts, task, agent), clock, closing);
    } catch (error) {
      if (closing.aborted || error instanceof StoreError) return { error, store: true };
      if (isLoomError(error) && error.code === 'TURN_RUNNING') return { error, store: false };
      throw error;
    }
  }
  if (turn === undefined) return { state: TaskState.TASK_STATE_FAILED, text: INTERRUPTED_TASK_TEXT };
  const here = turn;
  if (here.state === 'running') {
    void showApprovals(parts, task, agent, here).catch((error: unknown) =>
      logger.warn({ err: error, taskId: task.id, agent }, 'could not show an A2A task waiting for an approval of its resumed turn'),
    );
  }
  let ended = false;
  const outcome = outcomeOf(parts, () => here.result()).finally(() => (ended = true));
  // Whether nothing is left to cancel: not canceled, or its turn canceled now.
  const cancel = async (): Promise<boolean> => {
    const by = canceled();
    return by === undefined || (await cancelTurnOf(parts, task, agent, by));
  };
  while (here.state === 'running' && !ended && !(await cancel()) && clock !== undefined && !closing.aborted) {
    const waited = new AbortController();
    await Promise.race([outcome, clock.sleep(TURN_ELSEWHERE_RETRY_MS, { signal: AbortSignal.any([waited.signal, closing]) }).catch(() => undefined)]);
    waited.abort();
  }
  return outcome;
}

/**
 * The task's turn once it runs here or has ended, or undefined when none is found (see {@link turnOf}).
 * @throws `TURN_RUNNING` while it runs, not here (see `untilTurnHere`).
 */
async function hereOrEnded(parts: TaskRecoveryParts, task: Task, agent: string): Promise<KeyedTurn | undefined> {
  const turn = await turnOf(parts, task, agent);
  if (turn?.state === 'running' && !turn.here) throw new LoomError('TURN_RUNNING', 'user', `the turn of the A2A task ${task.id} runs, not on this node`);
  return turn;
}

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

/** How a task ends: its state, and the text of its status message (the reply, when it completed). */
interface TaskOutcome {
  state: TaskState;
  text: string;
}

/**
 * The outcome of the task of a turn (`ask`: its result), once the turn ends; unanswered when the
 * store could not say, the turn does not run here (its lease lapsed: taken over), or the server
 * closes meanwhile: the task is asked for again later, or left unfinished for the next start.
 */
async function outcomeOf(parts: TaskRecoveryParts, ask: () => Promise<TurnResult>): Promise<TaskOutcome | Unanswered> {
  let result: TurnResult;
  try {
    result = await ask();
  } catch (error) {
    if (parts.closing.aborted || error instanceof StoreError) return { error, store: true };
    // Not ended, not here: a turn only a lapsed lease gives to a node, or one still running elsewhere.
    if (isLoomError(error) && (error.code === 'TURN_RUNNING' || error.code === 'TURN_TAKEN_OVER')) return { error, store: false };
    if (isLoomError(error) && turnWasCanceled(error.code, error.details))
      return { state: TaskState.TASK_STATE_CANCELED, text: turnCanceledText(error.message) };
    return { state: TaskState.TASK_STATE_FAILED, text: isLoomError(error) ? `${error.code}: ${error.message}` : messageOf(error) };
  }
  return { state: TaskState.TASK_STATE_COMPLETED, text: result.text };
}

/**
 * Gives the task `outcome` as the executor would have (a completed task's reply as its `response`
 * artifact too), unless it ended meanwhile (its client canceled it, even between this load and
 * save: see `BoundedTaskStore.update`) or the server closed; then tells its webhooks. `unwatch`
 * stops the watch for its client's cancel in the write itself: a cancel saved before is told of by
 * that watch, this end only here.
 */
async function settle(parts: TaskRecoveryParts, stored: Task, agent: string, outcome: TaskOutcome, unwatch?: () => void): Promise<void> {
  if (parts.closing.aborted) return;
  const settled = await parts.store.update(stored.id, (task) => {
    unwatch?.();
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
