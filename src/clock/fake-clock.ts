import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Clock } from '../contracts/index.ts';

/** A clock that moves only when told to. For tests of time-based behaviour: nothing sleeps. */
export interface FakeClock extends Clock {
  /**
   * Moves time forward by `ms`, waking each sleeper at its due time in order and letting the
   * code it resumes run (and start new sleeps) before moving on.
   */
  advance(ms: number): Promise<void>;
  /** How many sleeps (and timers) are waiting. */
  pending(): number;
}

interface Sleeper {
  at: number;
  order: number;
  resolve: () => void;
}

/** A fake clock starting at `start` (milliseconds since the epoch). */
export function createFakeClock(start = Date.UTC(2026, 0, 1)): FakeClock {
  let now = start;
  let order = 0;
  const sleepers: Sleeper[] = [];

  const removeSleeper = (sleeper: Sleeper): void => {
    const index = sleepers.indexOf(sleeper);
    if (index !== -1) sleepers.splice(index, 1);
  };

  return {
    now: () => now,
    sleep: (ms, options) =>
      new Promise<void>((resolve, reject) => {
        const signal = options?.signal;
        if (signal?.aborted === true) {
          reject(signal.reason as Error);
          return;
        }
        const onAbort = (): void => {
          removeSleeper(sleeper);
          reject(signal?.reason as Error);
        };
        const sleeper: Sleeper = {
          at: now + Math.max(0, ms),
          order: order++,
          resolve: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        sleepers.push(sleeper);
      }),
    advance: async (ms) => {
      const target = now + ms;
      for (;;) {
        await nextTurn();
        let next: Sleeper | undefined;
        for (const sleeper of sleepers) {
          if (sleeper.at <= target && (next === undefined || sleeper.at < next.at || (sleeper.at === next.at && sleeper.order < next.order))) {
            next = sleeper;
          }
        }
        if (next === undefined) break;
        removeSleeper(next);
        now = next.at;
        next.resolve();
      }
      now = target;
      await nextTurn();
    },
    timer: (ms, fire) => {
      const sleeper: Sleeper = { at: now + Math.max(0, ms), order: order++, resolve: fire };
      sleepers.push(sleeper);
      return () => removeSleeper(sleeper);
    },
    pending: () => sleepers.length,
  };
}
