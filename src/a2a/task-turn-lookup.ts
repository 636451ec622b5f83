/**
 * The lookup of the turn of an A2A task's message, as the recovery makes it (task-recovery.ts):
 * found as the task's creator, where this version journals it and where the daemon before an
 * upgrade did (`taskTurnPlaces`).
 */
import type { Message, Task } from '@a2a-js/sdk';
import type { Logger } from '../contracts/index.ts';
import { AccessDeniedError, AgentNotFoundError, CapabilityDeniedError } from '../errors/index.ts';
import type { Caller, Kernel, KeyedTurn } from '../kernel/index.ts';
import { callerOfKey } from './agent-executor.ts';
import { kernelOfTask, lastMessageOf, type TaskKernel, type TaskTurnPlace, taskTurnPlaces } from './task-turn-places.ts';

/** What the lookup of a task's turn asks of the kernel, and where it logs a turn out of reach. */
export interface TurnLookupParts {
  kernel: Kernel;
  logger: Logger;
}

/**
 * The turn the task's last message started, found as its creator (whose rights are checked), or
 * undefined when there is none: never journaled (an agent type whose steps are not, a task from
 * before turns were found so), forgotten, or its agent gone.
 */
export async function turnOf(parts: TurnLookupParts, task: Task, agent: string): Promise<KeyedTurn | undefined> {
  const creator = asCreator(parts, task);
  const message = lastMessageOf(task);
  if (creator === undefined || message === undefined || agent === '') return undefined;
  return atTurnPlaces(
    task,
    message,
    ({ key, thread }) => creator.keyedTurn(agent, key, thread),
    // Its agent gone, or out of its creator's reach now: no turn of theirs to find.
    (error) => parts.logger.info({ err: error, taskId: task.id, agent }, 'the turn of an unfinished A2A task cannot be found'),
  );
}

/** The kernel's refusals that a task's turn is out of reach: its agent gone, or its caller not allowed. */
type OutOfReach = AgentNotFoundError | AccessDeniedError | CapabilityDeniedError;

/**
 * The first answer `at` gives (not undefined) at the places the turn of the task's message
 * `message` may be journaled: where this version journals it, else where the daemon before an
 * upgrade did. The kernel saying the turn is out of reach ({@link OutOfReach}) is told to
 * `outOfReach`, and answers undefined.
 */
export async function atTurnPlaces<T>(
  task: Task,
  message: Message,
  at: (place: TaskTurnPlace) => Promise<T | undefined>,
  outOfReach: (error: OutOfReach) => void,
): Promise<T | undefined> {
  try {
    for (const place of taskTurnPlaces(task.id, message.messageId, task.contextId)) {
      const found = await at(place);
      if (found !== undefined) return found;
    }
  } catch (error) {
    if (!(error instanceof AgentNotFoundError || error instanceof AccessDeniedError || error instanceof CapabilityDeniedError)) throw error;
    outOfReach(error);
  }
  return undefined;
}

/**
 * The kernel as the task's creator (its `loomCallerKey`), in the task's conversation (see
 * `kernelOfTask`); undefined when the task names no creator Loom wrote.
 */
function asCreator(parts: TurnLookupParts, task: Task): TaskKernel | undefined {
  const caller = creatorOf(task);
  return caller === undefined ? undefined : kernelOfTask(parts.kernel, caller, task.contextId);
}

/** The task's creator (its `loomCallerKey`), or undefined when the task names none Loom wrote. */
export function creatorOf(task: Task): Caller | undefined {
  const creator: unknown = task.metadata?.['loomCallerKey'];
  return typeof creator === 'string' ? callerOfKey(creator) : undefined;
}
