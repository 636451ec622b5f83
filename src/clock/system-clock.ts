import { setTimeout as delay } from 'node:timers/promises';
import type { Clock } from '../contracts/index.ts';

/** The real clock: wall time and real timers. */
export function createSystemClock(): Clock {
  return {
    now: () => Date.now(),
    sleep: async (ms, options) => {
      await delay(ms, undefined, options?.signal === undefined ? {} : { signal: options.signal });
    },
  };
}
