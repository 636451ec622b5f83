/**
 * A2A tasks in other shapes: spec/05's legacy task (`{ id, sessionId, status, messages,
 * artifacts }`), and the text of a result, as the client and the legacy endpoints give them.
 */
import { type Message, Role, TaskState, type Task as TaskValue } from '@a2a-js/sdk';
import { textOf } from './agent-executor.ts';

/** The status string of spec/05's task shape. */
function legacyStatus(state: TaskState | undefined): string {
  switch (state) {
    case TaskState.TASK_STATE_SUBMITTED:
      return 'submitted';
    case TaskState.TASK_STATE_WORKING:
      return 'working';
    case TaskState.TASK_STATE_INPUT_REQUIRED:
    case TaskState.TASK_STATE_AUTH_REQUIRED:
      return 'input-required';
    case TaskState.TASK_STATE_COMPLETED:
      return 'completed';
    case TaskState.TASK_STATE_CANCELED:
      return 'cancelled';
    default:
      return 'failed';
  }
}

function legacyParts(message: Message): { type: 'text'; text: string }[] {
  return [{ type: 'text', text: textOf(message) }];
}

/** A task in spec/05's shape: `{ id, sessionId, status, messages, artifacts }`. */
export function toLegacyTask(task: TaskValue): unknown {
  const messages = [...task.history];
  const final = task.status?.message;
  if (final !== undefined && !messages.some((message) => message.messageId === final.messageId)) messages.push(final);
  const sessionId: unknown = task.metadata?.['sessionId'];
  return {
    id: task.id,
    sessionId: typeof sessionId === 'string' ? sessionId : null,
    status: legacyStatus(task.status?.state),
    messages: messages.map((message) => ({ role: message.role === Role.ROLE_AGENT ? 'agent' : 'user', parts: legacyParts(message) })),
    artifacts: task.artifacts.map((artifact) => ({
      name: artifact.name,
      parts: artifact.parts.map((part) => ({ type: 'text', text: part.content?.$case === 'text' ? part.content.value : '' })),
    })),
  };
}

/** The text of an A2A result (a task's final message or artifacts, or a message). */
export function resultText(result: TaskValue | Message): string {
  if ('messageId' in result) return textOf(result);
  const artifacts = result.artifacts.map((artifact) => textOf({ parts: artifact.parts } as Message)).join('\n\n');
  return artifacts !== '' ? artifacts : textOf(result.status?.message);
}
