import { isLoomError } from '../errors/index.ts';
import type { AgentEvent, AgentEventSink } from '../runtime/index.ts';
import { PushQueue } from './push-queue.ts';

/** The `error` event that ends the stream of a run that failed with `error`. */
export function errorEvent(error: unknown): Extract<AgentEvent, { type: 'error' }> {
  return {
    type: 'error',
    code: isLoomError(error) ? error.code : 'INTERNAL',
    category: isLoomError(error) ? error.category : 'system',
    message: error instanceof Error ? error.message : String(error),
    ...(isLoomError(error) && Object.keys(error.details).length > 0 ? { details: error.details } : {}),
  };
}

/**
 * Turns a run that reports through a callback into an async iterable of its events. A failure
 * of the run becomes a final `error` event, so a stream always ends with `run-finish` or `error`.
 */
export async function* streamRun(run: (emit: AgentEventSink) => Promise<unknown>): AsyncGenerator<AgentEvent> {
  const queue = new PushQueue<AgentEvent>();
  run((event) => queue.push(event))
    .catch((error: unknown) => queue.push(errorEvent(error)))
    .finally(() => queue.close());
  yield* queue;
}
