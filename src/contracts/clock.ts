/**
 * The source of time. Injected everywhere time matters (schedules, quotas, timeouts) so that
 * tests run on a fake clock and never sleep.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /**
   * Resolves after `ms` milliseconds of this clock's time. Rejects with the signal's reason
   * when `signal` aborts first.
   */
  sleep(ms: number, options?: { signal?: AbortSignal }): Promise<void>;
}
