/**
 * The cancel of the turn of an A2A task the recovery watches (task-recovery.ts): a client canceled
 * the task, and its turn, resumed here or to be taken over, is cancelled as that client, whom the
 * kernel judges and names.
 */
import type { Task } from '@a2a-js/sdk';
import { AgentNotFoundError } from '../errors/index.ts';
import { type Caller, kernelAs, principalOfCaller } from '../kernel/index.ts';
import { cancellerByline } from './agent-executor.ts';
import { atTurnPlaces, creatorOf, lastMessageOf, turnOf, type TurnLookupParts } from './task-turn-lookup.ts';

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
 * (`CallerKernel.cancelKeyedTurn`); a cancel the kernel refuses cancels nothing. An agent (its
 * creator) ends it as the task's creator, named; with no such request known, Loom ends it as the
 * task is (canceled), found as its creator, naming {@link CANCELED_BY}. Resolves whether nothing is
 * left to cancel (canceled here, ended, none, or refused): false while it runs elsewhere.
 */
export async function cancelTurnOf(parts: TurnLookupParts, task: Task, agent: string, canceled: Canceled): Promise<boolean> {
  const { by } = canceled;
  if (by?.kind !== 'user') {
    // An agent reaches only the tasks it made: the turn is its own.
    const turn = await turnOf(parts, task, agent);
    return turn?.state !== 'running' || turn.cancel(by === undefined ? CANCELED_BY : cancellerByline(parts.kernel, by));
  }
  const creator = creatorOf(task);
  const message = lastMessageOf(task);
  if (creator === undefined || message === undefined || agent === '') return true;
  const face = kernelAs(parts.kernel, principalOfCaller(by));
  const done = await atTurnPlaces(
    task,
    message,
    async ({ key, thread }) => {
      const turn = await face.cancelKeyedTurn(agent, key, { caller: creator, thread });
      return turn === 'none' ? undefined : turn !== 'elsewhere';
    },
    // Its agent gone, or the canceller refused: nothing it may cancel.
    (error) =>
      parts.logger.warn(
        { err: error, taskId: task.id, agent },
        `the turn of a canceled A2A task is not cancelled: ${error instanceof AgentNotFoundError ? 'its agent is gone' : 'the kernel refused its canceller'}`,
      ),
  );
  return done ?? true;
}
