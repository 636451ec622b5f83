import { isLoomError } from '../errors/index.ts';
import type { AgentEvent, AgentEventSink } from '../runtime/index.ts';

/** The `error` event that ends the stream of a run that failed with `error`. */
export function errorEvent(error: unknown): Extract<AgentEvent, { type: 'error' }> {
  return {
    type: 'error',
    code: isLoomError(error) ? error.code : 'INTERNAL',
    category: isLoomError(error) ? error.category : 'system',
    message: error instanceof Error ? error.message : String(error),
  };
}

/**
 * Turns a run that reports through a callback into an async iterable of its events. A failure
 * of the run becomes a final `error` event, so a stream always ends with `run-finish` or `error`.
 */
export async function* streamRun(run: (emit: AgentEventSink) => Promise<unknown>): AsyncGenerator<AgentEvent> {
  const queue: AgentEvent[] = [];
  let wake: (() => void) | undefined;
  let done = false;
  const push = (event: AgentEvent): void => {
    queue.push(event);
    wake?.();
  };
  run(push)
    .catch((error: unknown) => push(errorEvent(error)))
    .finally(() => {
      done = true;
      wake?.();
    });
  for (;;) {
    const event = queue.shift();
    if (event !== undefined) {
      yield event;
      continue;
    }
    if (done) return;
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
    wake = undefined;
  }
}
