/**
 * Where the turn of an A2A task's message is journaled: its idempotency key and its conversation,
 * as this version names them and as the versions before it did (decision 0045), and the kernel as
 * the task's creator in that conversation (`TaskKernel`).
 */
import { createHash } from 'node:crypto';
import { type Message, Role, type Task } from '@a2a-js/sdk';
import { type Caller, type Kernel, kernelAs, type KeyedTurn, principalOfCaller, type SendOptions } from '../kernel/index.ts';
import type { AgentEvent as LoomEvent } from '../runtime/index.ts';

/** Past this length a client's id (a message's, a context's) goes into a key as its SHA-256 (keys are indexed: a few KB at most). */
const CLIENT_ID_IN_KEY_MAX = 128;

/**
 * The idempotency key of the turn a message to a task starts (`a2a:<task id>:<message id>`): after
 * a restart the task finds its turn by it (decision 0045), and the same message sent to the task
 * again gets that turn rather than a second one.
 */
export function taskTurnKey(taskId: string, messageId: string): string {
  return `a2a:${boundedId(taskId)}:${boundedId(messageId)}`;
}

/** A client's id as it goes into a key: as it is, or past {@link CLIENT_ID_IN_KEY_MAX} characters its SHA-256. */
function boundedId(id: string): string {
  return id.length <= CLIENT_ID_IN_KEY_MAX ? id : `sha256:${createHash('sha256').update(id).digest('hex')}`;
}

/**
 * The conversation of an A2A context, within its caller's (an owner's, a key's): each context is
 * one of its own. A client's context id past 128 characters is named by its SHA-256 (it goes into
 * indexed keys, as a message id does: see {@link taskTurnKey}).
 */
export function taskThread(contextId: string): string {
  return `a2a:${boundedId(contextId)}`;
}

/** The task's last message from its client: the one whose turn the task waits for. */
export const lastMessageOf = (task: Task): Message | undefined => task.history.findLast((entry) => entry.role === Role.ROLE_USER);

/** Where the turn of a task's message is journaled: its key, in the conversation `thread` (see {@link TaskKernel.keyedTurn}). */
export interface TaskTurnPlace {
  key: string;
  thread: string;
}

/**
 * Where the turn of the task's message may be journaled: first where this version puts it
 * ({@link taskTurnKey}, {@link taskThread}), then where a daemon before it did, for a task it left
 * unfinished at the upgrade: a message id past 128 characters went into the key whole before its
 * SHA-256 did, and a task's and a context's ids whole for a while after. One place when no id is
 * that long (every version put it there).
 */
export function taskTurnPlaces(taskId: string, messageId: string, contextId: string): TaskTurnPlace[] {
  const places = [
    { key: taskTurnKey(taskId, messageId), thread: taskThread(contextId) },
    { key: `a2a:${taskId}:${boundedId(messageId)}`, thread: `a2a:${contextId}` },
    { key: `a2a:${taskId}:${messageId}`, thread: `a2a:${contextId}` },
  ];
  return places.filter((place, at) => places.findIndex((other) => other.key === place.key && other.thread === place.thread) === at);
}

/** What the A2A server asks of the kernel as a task's creator, in the task's conversation (see {@link kernelOfTask}). */
export interface TaskKernel {
  /**
   * Sends the task's message to `agent`, its turn streamed, in the conversation `thread` (the
   * context's by default: another where an earlier version put the turn of the same message, see
   * {@link taskTurnPlaces}).
   */
  stream(agent: string, text: string, options: Pick<SendOptions, 'signal' | 'door' | 'idempotencyKey'> & { thread?: string }): AsyncIterable<LoomEvent>;
  /**
   * The turn the task's message with `key` started (see `Kernel.keyedTurn`), in the conversation
   * `thread` (the context's by default: another where an earlier version put it, see {@link taskTurnPlaces}).
   */
  keyedTurn(agent: string, key: string, thread?: string): Promise<KeyedTurn | undefined>;
}

/**
 * The kernel as `caller`, in the conversation of the A2A context `contextId` (see
 * {@link taskThread}): a key's principal through the kernel's caller-scoped face (whose rights
 * and conversations are its own), an agent as the kernel's caller.
 */
export function kernelOfTask(kernel: Kernel, caller: Caller, contextId: string): TaskKernel {
  const thread = taskThread(contextId);
  if (caller.kind === 'user') {
    const face = kernelAs(kernel, principalOfCaller(caller));
    return {
      stream: (agent, text, { thread: where = thread, ...options }) => face.stream(agent, text, { ...options, thread: where }),
      keyedTurn: (agent, key, where = thread) => face.keyedTurn(agent, key, { thread: where }),
    };
  }
  return {
    stream: (agent, text, { thread: where = thread, ...options }) => kernel.stream(agent, text, { ...options, caller, conversation: where }),
    keyedTurn: (agent, key, where = thread) => kernel.keyedTurn(agent, key, { caller, conversation: where }),
  };
}

/**
 * Where the turn of the task's message `messageId` is journaled (see {@link taskTurnPlaces}):
 * where a daemon before an upgrade journaled it, when one did (a message sent again after the
 * upgrade gets the turn it started, as the recovery finds it), else where this version does. Looked
 * up only when an id is past 128 characters (else every version put it in one place), and never for
 * a task the message makes (`isNew`: its id is new, no daemon before journaled a turn of it).
 * @throws what `TaskKernel.keyedTurn` throws (the caller may not message the agent, say).
 */
export async function placeOfTaskTurn(
  kernel: TaskKernel,
  agent: string,
  task: { taskId: string; messageId: string; contextId: string; isNew: boolean },
): Promise<TaskTurnPlace> {
  // The first of the places is this version's.
  const earlier = task.isNew ? [] : taskTurnPlaces(task.taskId, task.messageId, task.contextId).slice(1);
  for (const place of earlier) {
    if ((await kernel.keyedTurn(agent, place.key, place.thread)) !== undefined) return place;
  }
  return { key: taskTurnKey(task.taskId, task.messageId), thread: taskThread(task.contextId) };
}
