import { setTimeout as delay } from 'node:timers/promises';

/** What a promise came to: its value, its error, or that it had not settled in time. */
export type Outcome<T> = { value: T } | { error: unknown } | 'still waiting';

/**
 * What `promise` comes to within `ms` of real time, for a test of something that must not hang:
 * a hang then fails the assertion on the outcome, at once and by name, instead of the test's own
 * time limit. Nothing waits the whole `ms` unless the promise hangs.
 */
export async function outcomeWithin<T>(promise: Promise<T>, ms: number): Promise<Outcome<T>> {
  const guard = new AbortController();
  try {
    return await Promise.race([
      promise.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
      delay(ms, 'still waiting' as const, { signal: guard.signal }),
    ]);
  } finally {
    guard.abort();
  }
}
