import type { Clock } from '../contracts/index.ts';
import { isLoomError } from '../errors/index.ts';

/** How often a message whose turn runs on another node (taken over there, decision 0061) asks for its reply again. */
export const TURN_ELSEWHERE_RETRY_MS = 2000;
/** How long it asks at most before it is answered as failed. */
export const TURN_ELSEWHERE_WAIT_MS = 600_000;

/**
 * Runs `ask` (a message with an idempotency key, or the look-up of its turn) again, every
 * {@link TURN_ELSEWHERE_RETRY_MS}, while its turn runs on another node (decision 0061):
 * `TURN_RUNNING` (a node that died left it, and another node took it over) or `TURN_TAKEN_OVER`
 * (this node ran it, and its lease on it lapsed). Once that node finishes it, its reply comes back
 * here. Gives up {@link TURN_ELSEWHERE_WAIT_MS} after it was first told so, or when `stopping` aborts.
 * @throws what `ask` last threw.
 */
export async function untilTurnHere<T>(ask: () => Promise<T>, clock: Clock, stopping: AbortSignal): Promise<T> {
  // Counted from the first answer that the turn is elsewhere: `ask` may be the whole turn, run here first.
  let deadline: number | undefined;
  for (;;) {
    try {
      return await ask();
    } catch (error) {
      const elsewhere = isLoomError(error) && (error.code === 'TURN_RUNNING' || error.code === 'TURN_TAKEN_OVER');
      deadline ??= clock.now() + TURN_ELSEWHERE_WAIT_MS;
      if (!elsewhere || stopping.aborted || clock.now() >= deadline) throw error;
      await clock.sleep(TURN_ELSEWHERE_RETRY_MS, { signal: stopping });
    }
  }
}
