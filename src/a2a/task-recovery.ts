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
   * not answer; without it, such a task is failed saying so, and one the store could not answer
   * is left for the next start.
   */
  clock: Clock | undefined;
  /** Aborted when the A2A server closes: a task still waiting for its turn is left as it is, for the next start. */
  closing: AbortSignal;
}

/**
 * Settles the unfinished tasks of the store (see the file's comment). Resolves once every task
 * whose turn cannot be found is failed and every task whose turn ended has that turn's outcome;
 * the tasks whose turns still run are settled in the background when they end, and those the
 * store could not answer for are asked for again in the background.
 */
export async function recoverTasks(parts: TaskRecoveryParts): Promise<void> {
  const { store, logger } = parts;
  let failed = 0;
  let waiting = 0;
  for (const { task, agent } of await store.unfinished()) {
    const recovered = await recoverTask(parts, task, agent);
    if (recovered === 'failed') failed += 1;
    else if (recovered === 'waiting') waiting += 1;
    else if (recovered === 'unanswered') void recoverLater(parts, task.id, agent);
  }
  if (failed > 0) logger.warn({ tasks: failed }, 'failed the A2A tasks the previous daemon left unfinished whose turns cannot be found');
  if (waiting > 0) logger.info({ tasks: waiting }, 'A2A tasks the previous daemon left unfinished go on with their resumed turns');
}

/**
 * What became of a task the recovery met: failed (its turn cannot be found), settled (its turn
 * had ended), waiting (its turn runs: settled when it ends), or unanswered (the store could not
 * say: asked again later).
 */
type Recovered = 'failed' | 'settled' | 'waiting' | 'unanswered';

/** Meets one unfinished task with its turn (see the file's comment). */
async function recoverTask(parts: TaskRecoveryParts, task: Task, agent: string): Promise<Recovered> {
  const { logger } = parts;
  let turn: KeyedTurn | undefined;
  try {
    turn = await turnOf(parts, task, agent);
  } catch (error) {
    // Not known not to exist (the store out of reach): asked again later.
    logger.error({ err: error, taskId: task.id, agent }, 'could not look up the turn of an unfinished A2A task; it is left unfinished for now');
    return 'unanswered';
  }
  if (turn === undefined) {
    await settle(parts, task, agent, { state: TaskState.TASK_STATE_FAILED, text: INTERRUPTED_TASK_TEXT });
    return 'failed';
  }
  if (turn.state === 'done') {
    const outcome = await outcomeOf(parts, turn);
    if (outcome === undefined) return 'unanswered';
    await settle(parts, task, agent, outcome);
    return 'settled';
  }
  // Its client may cancel it meanwhile: no executor runs it now, so its turn is canceled here.
  const unwatch = parts.store.onCanceled(task.id, () => {
    void cancelTurnOf(parts, task, agent).catch((error: unknown) =>
      logger.warn({ err: error, taskId: task.id, agent }, 'could not cancel the resumed turn of a canceled A2A task'),
    );
  });
  void showApprovals(parts, task, agent, turn).catch((error: unknown) =>
    logger.warn({ err: error, taskId: task.id, agent }, 'could not show an A2A task waiting for an approval of its resumed turn'),
  );
  void outcomeOf(parts, turn)
    .then((outcome) => {
      // Watched no longer: the task's own end (canceled with its turn) is not a client's cancel.
      unwatch();
      if (outcome !== undefined) return settle(parts, task, agent, outcome);
      // The store could not say how it ended: asked again later.
      if (!parts.closing.aborted) void recoverLater(parts, task.id, agent);
      return undefined;
    })
    .catch((error: unknown) => logger.warn({ err: error, taskId: task.id, agent }, 'could not give an A2A task the outcome of its resumed turn'))
    .finally(unwatch);
  return 'waiting';
}

/**
 * Meets the task with its turn again, every {@link TASK_RECOVERY_RETRY_MS} on the clock, while the
 * store cannot say what became of it, {@link TASK_RECOVERY_ATTEMPTS} times at most: then it is
 * left unfinished, for the next start. Stops when the server closes, or the task has ended.
 */
async function recoverLater(parts: TaskRecoveryParts, taskId: string, agent: string): Promise<void> {
  const { clock, logger } = parts;
  if (clock === undefined) return;
  for (let attempt = 0; attempt < TASK_RECOVERY_ATTEMPTS; attempt += 1) {
    try {
      await clock.sleep(TASK_RECOVERY_RETRY_MS, { signal: parts.closing });
    } catch {
      return; // closing
    }
    let task: Task | undefined;
    try {
      task = await parts.store.load(taskId);
    } catch (error) {
      logger.warn({ err: error, taskId, agent }, 'could not read an unfinished A2A task again');
      continue;
    }
    if (task === undefined || isTerminalState(task.status?.state)) return;
    if ((await recoverTask(parts, task, agent)) !== 'unanswered') return;
  }
  logger.error({ taskId, agent }, 'gave up asking what became of the turn of an unfinished A2A task; it is left unfinished for the next start');
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
    written = written.then(async () => {
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
 * The outcome of the task of `turn`, once the turn ends (a running turn asked again while it runs
 * on another node); undefined when the store could not say or the server closes meanwhile: the
 * task is left unfinished, for the next start.
 */
async function outcomeOf(parts: TaskRecoveryParts, turn: KeyedTurn): Promise<TaskOutcome | undefined> {
  const { clock } = parts;
  let result: TurnResult;
  try {
    result = clock === undefined || turn.state === 'done' ? await turn.result() : await untilTurnHere(() => turn.result(), clock, parts.closing);
  } catch (error) {
    if (parts.closing.aborted) return undefined;
    if (error instanceof StoreError) {
      parts.logger.error({ err: error }, 'could not read the outcome of the turn of an unfinished A2A task; it is left unfinished');
      return undefined;
    }
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
