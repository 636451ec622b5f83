import { LoomError } from '../errors/index.ts';
import type { CallerKernel, SessionChoice } from '../kernel/index.ts';
import type { AgentEvent } from '../runtime/index.ts';

/** A streamed turn whose first event is already read. */
export interface TurnStream {
  first: IteratorResult<AgentEvent>;
  events: AsyncIterator<AgentEvent>;
}

/**
 * Starts the caller's `stream` for a streamed HTTP reply and reads its first event. A turn refused
 * before it starts (suspended agent, quota) throws its error, to be answered as an error
 * response rather than as a stream. `signal` is what the turn runs under: the agent API's, its
 * time limit (its turns outlive the client); the OpenAI-compatible API's, its client too.
 * @throws {LoomError} the refusal.
 */
export async function startTurnStream(
  caller: CallerKernel,
  reference: string,
  message: string,
  signal: AbortSignal,
  where: SessionChoice & { idempotencyKey?: string } = {},
): Promise<TurnStream> {
  const events = caller.stream(reference, message, { ...where, signal })[Symbol.asyncIterator]();
  const first = await events.next();
  if (!first.done && first.value.type === 'error') {
    // With its details: a refused quota's `retryAt` becomes the 429's Retry-After, as for a reply that is not streamed.
    const { code, category, message: text, details } = first.value;
    throw new LoomError(code, category, text, details === undefined ? {} : { details });
  }
  return { first, events };
}
