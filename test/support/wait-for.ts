import { setTimeout as delay } from 'node:timers/promises';

/**
 * How long {@link waitFor} waits by default: generous enough for a loaded 2-core machine, and
 * under vitest's 30 s test timeout so that a wait that never ends fails naming what it waited for.
 */
export const DEFAULT_WAIT_MS = 20_000;

/** How long {@link waitFor} waits at most (`ms`) and how often it checks (`everyMs`). */
export interface WaitForOptions {
  ms?: number;
  everyMs?: number;
}

/** A check's answer that means "not yet". */
type NotYet = undefined | false;

/** What {@link waitFor} calls until it answers something other than {@link NotYet}. */
type Check<T> = () => Promise<T | NotYet> | T | NotYet;

/**
 * The one wait of the tests: calls `check` every `everyMs` (20 by default) until it returns a
 * value other than undefined or false, and resolves with that value. A check that throws counts as
 * not yet. Fails, naming `what`, only after `ms` (`DEFAULT_WAIT_MS` by default) of wall time: the
 * deadline is there to name a hang, never to decide an outcome, so it is long.
 *
 * @example
 * await waitFor('the model to have the second request', () => server.requests.length >= 2);
 * const id = await waitFor('the approval mail', () => /approve ([0-9a-f]{8})/.exec(mail())?.[1]);
 */
export async function waitFor<T>(what: string, check: Check<T>, options: WaitForOptions = {}): Promise<Exclude<T, NotYet>> {
  const limit = options.ms ?? DEFAULT_WAIT_MS;
  const deadline = Date.now() + limit;
  for (;;) {
    const value = await Promise.resolve()
      .then(check)
      .catch(() => undefined);
    if (value !== undefined && value !== false) return value as Exclude<T, NotYet>;
    if (Date.now() > deadline) throw new Error(`timed out after ${limit} ms waiting for ${what}`);
    await delay(options.everyMs ?? 20);
  }
}
