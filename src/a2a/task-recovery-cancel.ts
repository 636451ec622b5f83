/**
 * The cancel of the turn of an A2A task the recovery watches (task-recovery.ts): a client canceled
 * the task, and its turn, resumed here or to be taken over, is cancelled as that client, whom the
 * kernel judges and names.
 */
import type { Task } from '@a2a-js/sdk';
import { AgentNotFoundError } from '../errors/index.ts';
import { type Caller, kernelAs, principalOfCaller } from '../kernel/index.ts';
import { cancellerByline } from './agent-executor.ts';
import { atTurnPlaces, creatorOf, type TurnLookupParts } from './task-turn-lookup.ts';
import { kernelOfTask, lastMessageOf, type TaskTurnPlace } from './task-turn-places.ts';

/**
 * Who a recovered task's turn is canceled by, when the task is found canceled with no request that
 * canceled it known (canceled on another node, or before the recovery watched it).
 */
const CANCELED_BY = 'a client of its A2A task';

/**
 * A task found canceled: `by` the caller of the request here that saved it so, whose cancel of its
 * turn the kernel judges and names; undefined when none is known (see {@link CANCELED_BY}).
 */
export interface Canceled {
  by: Caller | undefined;
}

/** What the recovery logs when it could not cancel the turn of a task canceled while it watched. */
export const CANCEL_FAILED = 'could not cancel the resumed turn of a canceled A2A task';

/**
 * Cancels the task's turn (that turn, by its journal id: not a later task's in the same
 * conversation), if it runs here: as `canceled.by` (the caller of the request that canceled the
 * task), through the kernel, which judges whether a key may and names it at the turn's end
 * (`CallerKernel.cancelKeyedTurn`). An agent (its creator: it reaches only the tasks it made) ends
 * it as the task's creator, named; with no such request known, Loom ends it as the task is
 * (canceled), found as its creator, naming {@link CANCELED_BY}. A look-up or cancel the kernel
 * refuses (the canceller, or the creator, may no longer reach the agent; its agent gone) cancels
 * nothing and is logged as refused, never taken for a task with no turn. Resolves whether nothing
 * is left to cancel (canceled here, ended, none, or refused): false while it runs elsewhere.
 */
export async function cancelTurnOf(parts: TurnLookupParts, task: Task, agent: string, canceled: Canceled): Promise<boolean> {
  const { by } = canceled;
  const creator = creatorOf(task);
  const message = lastMessageOf(task);
  if (creator === undefined || message === undefined || agent === '') return true;
  const cancel = by?.kind === 'user' ? asCanceller(parts, agent, by, creator) : asCreator(parts, task, agent, creator, by);
  const done = await atTurnPlaces(task, message, cancel, (error) => {
    const who = by === undefined ? "the task's creator" : 'its canceller';
    const why = error instanceof AgentNotFoundError ? 'an agent it names is gone' : `the kernel refused ${who}`;
    parts.logger.warn({ err: error, taskId: task.id, agent }, `the turn of a canceled A2A task is not cancelled: ${why}`);
  });
  return done ?? true;
}

/** Whether the turn at a place was canceled or has ended (undefined: none there; false: it runs elsewhere). */
type CancelAt = (place: TaskTurnPlace) => Promise<boolean | undefined>;

/** The cancel of the turn at a place by `by`, a key, through its own face (see `CallerKernel.cancelKeyedTurn`). */
function asCanceller(parts: TurnLookupParts, agent: string, by: Caller & { kind: 'user' }, creator: Caller): CancelAt {
  const face = kernelAs(parts.kernel, principalOfCaller(by));
  return async ({ key, thread }) => {
    const turn = await face.cancelKeyedTurn(agent, key, { caller: creator, thread });
    return turn === 'none' ? undefined : turn !== 'elsewhere';
  };
}

/** The cancel of the turn at a place as the task's creator, naming `by` (the creator itself), or {@link CANCELED_BY} with none. */
function asCreator(parts: TurnLookupParts, task: Task, agent: string, creator: Caller, by: Caller | undefined): CancelAt {
  const kernel = kernelOfTask(parts.kernel, creator, task.contextId);
  const byline = by === undefined ? CANCELED_BY : cancellerByline(parts.kernel, by);
  return async ({ key, thread }) => {
    const turn = await kernel.keyedTurn(agent, key, thread);
    return turn === undefined ? undefined : turn.state !== 'running' || turn.cancel(byline);
  };
}
