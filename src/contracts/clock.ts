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
  /**
   * Calls `fire` after `ms` milliseconds of this clock's time, unless the function it returns is
   * called first. A sleep without a promise or a signal, for a wait that is nearly always called
   * off (a request's deadline): calling it off costs no abort event.
   */
  timer(ms: number, fire: () => void): () => void;
}
