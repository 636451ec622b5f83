import { performance } from 'node:perf_hooks';
import type { Clock } from '../contracts/index.ts';

/**
 * The longest delay a Node timer takes (2³¹ − 1 ms, ~24.8 days): a longer one fires after 1 ms.
 * A monthly cron or a heartbeat of weeks sleeps longer, so a sleep waits in steps of at most this.
 */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/** The real clock: wall time and real timers. */
export function createSystemClock(): Clock {
  const timer = (ms: number, fire: () => void): (() => void) => {
    // Measured on the monotonic clock, as timers are, so a change of the wall time moves nothing.
    const until = performance.now() + ms;
    let handle: NodeJS.Timeout;
    const wait = (left: number): void => {
      handle = setTimeout(
        () => {
          const rest = until - performance.now();
          if (rest >= 1) wait(rest);
          else fire();
        },
        Math.min(left, LONGEST_TIMER_MS),
      );
    };
    wait(ms);
    return () => clearTimeout(handle);
  };
  return {
    now: () => Date.now(),
    // By hand rather than `timers/promises`, whose sleep rejects with an AbortError of its own
    // (made, stack and all, on every abort): the contract is the signal's own reason.
    sleep: (ms, options) =>
      new Promise<void>((resolve, reject) => {
        const signal = options?.signal;
        if (signal?.aborted === true) {
          reject(signal.reason as Error);
          return;
        }
        const onAbort = (): void => {
          stop();
          reject(signal?.reason as Error);
        };
        const stop = timer(ms, () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        });
        signal?.addEventListener('abort', onAbort, { once: true });
      }),
    timer,
  };
}
