import { setTimeout as delay } from 'node:timers/promises';

/**
 * Polls `check` every `everyMs` (100 by default) until it returns a value, for at most `ms`;
 * throws with `what` otherwise. A check that throws counts as not yet; one that means "done" must
 * return something other than undefined (`cond ? true : undefined`).
 */
export async function waitFor<T>(what: string, ms: number, check: () => Promise<T | undefined> | T | undefined, everyMs = 100): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await Promise.resolve()
      .then(check)
      .catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await delay(everyMs);
  }
}
