import type { Clock, Logger } from '../contracts/index.ts';
import { CodeModuleError } from '../errors/index.ts';
import type { HostCallPort } from './host-calls.ts';

/** The limits a code agent's module runs under (`[code]` of its manifest). */
export interface CodeLimits {
  timeoutMs: number;
  memoryMb: number;
  maxReplyBytes: number;
}

/** What starts a module: where it is, whose it is, and what it runs under. */
export interface CodeModuleOptions {
  /** The module's absolute path. */
  path: string;
  /** The agent's name, in messages and logs. */
  name: string;
  limits: CodeLimits;
  /** The environment the module may see: only what the agent's `env_read` grants (and PATH for Python). */
  env: Record<string, string>;
  /** The agent's workspace (a Python script's working folder). */
  workspace: string;
  clock: Clock;
  /** The agent's logger: what a module writes to stderr or logs lands here. */
  logger: Logger;
}

/** One agent's module, kept warm between messages. */
export interface CodeModuleRunner {
  /**
   * Answers one message: `request` is the request's JSON; host calls go to `port`. Runs under
   * the time limit; `signal` (kill, suspend) stops it. Returns the reply's text.
   * @throws {CodeModuleError} naming the fault; `signal`'s reason when it was aborted.
   */
  turn(request: string, port: HostCallPort, signal: AbortSignal): Promise<string>;
  /** Stops the module (its thread or process); the next message starts it again. */
  close(): Promise<void>;
}

/**
 * How long a message past its time limit, or stopped, waits for what runs its module to stop
 * before its caller is told, on the daemon's clock. Most stop at once; a wasm thread stuck in a
 * native call the termination cannot reach (Loom answers WASI's sleep itself so that it can)
 * would not, and neither the caller, the agent's next message nor the daemon's shutdown may wait
 * for that.
 */
export const STOP_WAIT_MS = 1000;

/**
 * Waits for `work`, or stops it: at the time limit (a `timeout` fault) or when `signal` aborts
 * (its reason). `stop` ends what runs the module (terminates the thread, kills the process); the
 * fault is thrown once it has, or after {@link STOP_WAIT_MS} with `stop` left to go on alone.
 */
export async function withinLimit<T>(
  work: Promise<T>,
  options: { clock: Clock; timeoutMs: number; signal: AbortSignal; what: string; stop: () => Promise<void> },
): Promise<T> {
  const { clock, timeoutMs, signal, what, stop } = options;
  const done = new AbortController();
  const timer = clock.sleep(timeoutMs, { signal: done.signal }).then(
    () => 'timeout' as const,
    () => 'done' as const,
  );
  const aborted = new Promise<'aborted'>((resolve) => {
    if (signal.aborted) resolve('aborted');
    signal.addEventListener('abort', () => resolve('aborted'), { once: true, signal: done.signal });
  });
  try {
    const first = await Promise.race([work.then((value) => ({ value })), timer, aborted]);
    if (typeof first === 'object') return first.value;
    await waitForStop(stop(), clock);
    if (first === 'aborted') throw signal.reason;
    throw new CodeModuleError('timeout', `${what} ran past its time limit of ${timeoutMs / 1000} s ([code].timeout_ms) and was stopped`);
  } finally {
    done.abort();
    await timer;
  }
}

/** Waits for `stopping` at most {@link STOP_WAIT_MS} of `clock`; it goes on in the background after that. */
export async function waitForStop(stopping: Promise<void>, clock: Clock): Promise<void> {
  const waited = new AbortController();
  try {
    await Promise.race([stopping, clock.sleep(STOP_WAIT_MS, { signal: waited.signal })]);
  } finally {
    waited.abort();
  }
}
