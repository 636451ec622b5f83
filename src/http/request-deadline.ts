import type { Clock } from '../contracts/index.ts';
import { HttpRequestError } from '../errors/index.ts';

/** A request's cancellation: the client going away, or its time running out. */
export interface RequestDeadline {
  /** Aborts on either; the reason is a `REQUEST_TIMEOUT` HttpRequestError on timeout. */
  readonly signal: AbortSignal;
  /** Rejects with the timeout error when the time runs out (never resolves otherwise). */
  readonly expired: Promise<never>;
  /**
   * Aborts, with the timeout error, when the time runs out, and not when the client leaves: what a
   * turn that outlives its client runs under. Never aborts on a request that has no time limit.
   */
  readonly timeLimit: AbortSignal;
  /** Stops the timer; call it when the request is answered. */
  dispose(): void;
}

/**
 * Starts a deadline of `timeoutMs` on `clock` (so tests move it with a fake clock), also
 * aborted by the client disconnecting (`clientSignal`, read only if a route asks for `signal`:
 * a Node request makes that signal on demand, and a turn that outlives its client never asks).
 * Its timer is the clock's `timer`, called off without an abort event when the request is answered.
 */
export function startRequestDeadline(clock: Clock, timeoutMs: number, clientSignal: () => AbortSignal): RequestDeadline {
  const timeout = new AbortController();
  let expire: (error: Error) => void = () => undefined;
  const expired = new Promise<never>((_resolve, reject) => (expire = reject));
  // Unobserved when the request finishes first; it never rejects then, but keep Node quiet anyway.
  expired.catch(() => undefined);
  const stop = clock.timer(timeoutMs, () => {
    const error = new HttpRequestError(
      'REQUEST_TIMEOUT',
      `the request took longer than ${timeoutMs / 1000} s ([daemon].request_timeout_seconds) and was cancelled`,
    );
    timeout.abort(error);
    expire(error);
  });
  let signal: AbortSignal | undefined;
  return {
    get signal() {
      return (signal ??= AbortSignal.any([clientSignal(), timeout.signal]));
    },
    expired,
    timeLimit: timeout.signal,
    dispose: stop,
  };
}
