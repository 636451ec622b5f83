/**
 * `recoverTasks`: at start, each A2A task the previous process left unfinished meets the turn its
 * message started (decision 0045): a turn resumed here finishes the task when it ends, a turn that
 * ended gives it its outcome, and only a task whose turn cannot be found is failed, its client told
 * to send the message again. Every webhook of the task is told what the task became.
 */
import { type Message, Role, type Task, TaskState } from '@a2a-js/sdk';
import type { Clock, Logger } from '../contracts/index.ts';
import { AccessDeniedError, AgentNotFoundError, CapabilityDeniedError, isLoomError, messageOf, StoreError } from '../errors/index.ts';
import { type Kernel, kernelAs, type KeyedTurn, principalOfCaller, untilTurnHere } from '../kernel/index.ts';
import type { TurnResult } from '../runtime/index.ts';
import { agentMessage, callerOfKey, responseArtifact, taskTurnKey, taskThread } from './agent-executor.ts';
import { type BoundedTaskStore, isTerminalState } from './bounded-task-store.ts';
import type { PushNotifier } from './push-notifier.ts';

/** The status message of a task whose turn cannot be found after a restart. */
export const INTERRUPTED_TASK_TEXT = 'The task was interrupted: the Loom daemon stopped while it ran. Send the message again.';

/** What {@link recoverTasks} works on. */
export interface TaskRecoveryParts {
  kernel: Kernel;
  store: BoundedTaskStore;
  notifier: PushNotifier | undefined;
  logger: Logger;
  now: () => number;
  /** Paces the asking again while a task's turn runs on another node; without it, such a task is failed saying so. */
  clock: Clock | undefined;
  /** Aborted when the A2A server closes: a task still waiting for its turn is left as it is, for the next start. */
  closing: AbortSignal;
}

/**
 * Settles the unfinished tasks of the store (see the file's comment). Resolves once every task
 * whose turn cannot be found is failed and every task whose turn ended has that turn's outcome;
 * the tasks whose turns still run are settled in the background when they end.
 */
export async function recoverTasks(parts: TaskRecoveryParts): Promise<void> {
  const { store, logger } = parts;
  let failed = 0;
  let waiting = 0;
  for (const { task, agent } of await store.unfinished()) {
    let turn: KeyedTurn | undefined;
    try {
      turn = await turnOf(parts, task, agent);
    } catch (error) {
      // Not known not to exist (the store out of reach): left unfinished, for the next start.
      logger.error({ err: error, taskId: task.id, agent }, 'could not look up the turn of an unfinished A2A task; it is left unfinished');
      continue;
    }
    if (turn === undefined) {
      await settle(parts, task, agent, { state: TaskState.TASK_STATE_FAILED, text: INTERRUPTED_TASK_TEXT });
      failed += 1;
    } else if (turn.state === 'done') {
      const outcome = await outcomeOf(parts, turn);
      if (outcome !== undefined) await settle(parts, task, agent, outcome);
    } else {
      waiting += 1;
      // Its client may cancel it meanwhile: no executor runs it now, so its turn is canceled here.
      const unwatch = store.onCanceled(task.id, () => {
        void cancelTurnOf(parts, task, agent).catch((error: unknown) =>
          logger.warn({ err: error, taskId: task.id, agent }, 'could not cancel the resumed turn of a canceled A2A task'),
        );
      });
      void outcomeOf(parts, turn)
        .then((outcome) => {
          // Watched no longer: the task's own end (canceled with its turn) is not a client's cancel.
          unwatch();
          return outcome === undefined ? undefined : settle(parts, task, agent, outcome);
        })
        .catch((error: unknown) => logger.warn({ err: error, taskId: task.id, agent }, 'could not give an A2A task the outcome of its resumed turn'))
        .finally(unwatch);
    }
  }
  if (failed > 0) logger.warn({ tasks: failed }, 'failed the A2A tasks the previous daemon left unfinished whose turns cannot be found');
  if (waiting > 0) logger.info({ tasks: waiting }, 'A2A tasks the previous daemon left unfinished go on with their resumed turns');
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

/** What the recovery asks of the kernel, as a task's creator, in the task's conversation. */
interface CreatorKernel {
  keyedTurn(agent: string, key: string): Promise<KeyedTurn | undefined>;
  cancelTurn(agent: string): Promise<unknown>;
}

/**
 * The kernel as the task's creator (its `loomCallerKey`), in the task's conversation: a key's
 * principal through the kernel's caller-scoped face, an agent as the kernel's caller; undefined when
 * the task names no creator Loom wrote.
 */
function asCreator(parts: TaskRecoveryParts, task: Task): CreatorKernel | undefined {
  const creator: unknown = task.metadata?.['loomCallerKey'];
  const caller = typeof creator === 'string' ? callerOfKey(creator) : undefined;
  if (caller === undefined) return undefined;
  const thread = taskThread(task.contextId);
  if (caller.kind === 'user') {
    const face = kernelAs(parts.kernel, principalOfCaller(caller));
    return { keyedTurn: (agent, key) => face.keyedTurn(agent, key, { thread }), cancelTurn: (agent) => face.cancelTurn(agent, { thread }) };
  }
  return {
    keyedTurn: (agent, key) => parts.kernel.keyedTurn(agent, key, { caller, conversation: thread }),
    cancelTurn: (agent) => parts.kernel.cancelTurn(agent, { caller, by: 'the client of its A2A task', conversation: thread }),
  };
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
 * artifact too), unless it ended meanwhile (its client canceled it) or the server closed; then
 * tells its webhooks.
 */
async function settle(parts: TaskRecoveryParts, stored: Task, agent: string, outcome: TaskOutcome): Promise<void> {
  if (parts.closing.aborted) return;
  const task = await parts.store.load(stored.id);
  if (task === undefined || isTerminalState(task.status?.state)) return;
  const message: Message = agentMessage(task.id, task.contextId, outcome.text);
  task.status = { state: outcome.state, message, timestamp: new Date(parts.now()).toISOString() };
  task.history = [...task.history, message];
  if (outcome.state === TaskState.TASK_STATE_COMPLETED) {
    const response = responseArtifact(task.id, outcome.text);
    task.artifacts = [...task.artifacts.filter((artifact) => artifact.artifactId !== response.artifactId), response];
  }
  await parts.store.save(task);
  parts.notifier?.notifyStored(agent, task);
}
