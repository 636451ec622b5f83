import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import { CodeModuleError } from '../../src/errors/index.ts';
import { withinLimit } from '../../src/code-modules/code-module-runner.ts';
import { outcomeWithin } from '../support/outcome-within.ts';

// The wait docs/code-agents.md promises (written out, not imported, so the test states it).
const STOP_WAIT_MS = 1000;

describe('withinLimit()', () => {
  // A wasm thread asleep in a native call cannot be terminated until it wakes: its stop never ends.
  const never = (): Promise<never> => new Promise<never>(() => undefined);

  it('fails a message at its time limit though what runs the module does not stop, after waiting a bounded time for it', async () => {
    const clock = createFakeClock();
    let stops = 0;
    const turn = withinLimit(never(), {
      clock,
      timeoutMs: 30_000,
      signal: new AbortController().signal,
      what: 'agent "sleeper"\'s module',
      stop: () => {
        stops += 1;
        return never();
      },
    });
    const outcome = outcomeWithin(turn, 5000);
    await clock.advance(30_000);
    expect(stops).toBe(1);
    await clock.advance(STOP_WAIT_MS);
    const result = await outcome;
    expect(result).toEqual({ error: expect.any(CodeModuleError) as unknown });
    expect(result).toMatchObject({
      error: { fault: 'timeout', message: 'agent "sleeper"\'s module ran past its time limit of 30 s ([code].timeout_ms) and was stopped' },
    });
  });

  it("fails a message its agent's stop aborts though what runs the module does not stop", async () => {
    const clock = createFakeClock();
    const stopped = new AbortController();
    const turn = withinLimit(never(), { clock, timeoutMs: 30_000, signal: stopped.signal, what: 'agent "sleeper"\'s module', stop: never });
    const outcome = outcomeWithin(turn, 5000);
    const reason = new Error('agent "sleeper" was killed');
    stopped.abort(reason);
    await clock.advance(STOP_WAIT_MS);
    expect(await outcome).toEqual({ error: reason });
  });

  it('fails the message as soon as what runs the module has stopped, when it stops at once', async () => {
    const clock = createFakeClock();
    const turn = withinLimit(never(), {
      clock,
      timeoutMs: 1000,
      signal: new AbortController().signal,
      what: 'agent "quick"\'s module',
      stop: () => Promise.resolve(),
    });
    const outcome = outcomeWithin(turn, 5000);
    await clock.advance(1000);
    expect(await outcome).toMatchObject({ error: { fault: 'timeout' } });
  });
});
