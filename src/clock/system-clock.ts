import type { Clock } from '../contracts/index.ts';

/** The real clock: wall time and real timers. */
export function createSystemClock(): Clock {
  return {
    now: () => Date.now(),
    // By hand rather than `timers/promises`, whose sleep rejects with an AbortError of its own
    // (made, stack and all, on every abort): the contract is the signal's own reason.
    sleep: (ms, options) =>
      new Promise<void>((resolve, reject) => {
        const signal = options?.signal;
        if (signal === undefined) {
          setTimeout(resolve, ms);
          return;
        }
        if (signal.aborted) {
          reject(signal.reason as Error);
          return;
        }
        const onAbort = (): void => {
          clearTimeout(timer);
          reject(signal.reason as Error);
        };
        const timer = setTimeout(() => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        }, ms);
        signal.addEventListener('abort', onAbort, { once: true });
      }),
  };
}
