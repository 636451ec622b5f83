import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import { startRequestDeadline } from '../../src/http/request-deadline.ts';

// A request's deadline runs on the injected clock: it fires at its time, with the timeout error
// on every signal a route may hold, and once the request is answered it waits for nothing.

describe('a request deadline', () => {
  it('aborts its time limit and its signal and rejects `expired` with REQUEST_TIMEOUT when the time runs out, not before', async () => {
    const clock = createFakeClock();
    const client = new AbortController();
    const deadline = startRequestDeadline(clock, 60_000, () => client.signal);
    const expired = deadline.expired.catch((error: unknown) => error);
    await clock.advance(59_999);
    expect(deadline.timeLimit.aborted).toBe(false);
    expect(deadline.signal.aborted).toBe(false);
    await clock.advance(1);
    expect(deadline.timeLimit.reason).toMatchObject({ code: 'REQUEST_TIMEOUT' });
    expect((deadline.timeLimit.reason as Error).message).toContain('longer than 60 s');
    expect(deadline.signal.reason).toBe(deadline.timeLimit.reason);
    expect(await expired).toBe(deadline.timeLimit.reason);
    expect(client.signal.aborted).toBe(false);
  });

  it('once answered, leaves no timer waiting and never fires', async () => {
    const clock = createFakeClock();
    const before = clock.pending();
    const deadline = startRequestDeadline(clock, 60_000, () => new AbortController().signal);
    expect(clock.pending()).toBe(before + 1);
    deadline.dispose();
    expect(clock.pending()).toBe(before);
    await clock.advance(120_000);
    expect(deadline.timeLimit.aborted).toBe(false);
  });

  it('aborts its signal, and not its time limit, when the client goes away', () => {
    const clock = createFakeClock();
    const client = new AbortController();
    const deadline = startRequestDeadline(clock, 60_000, () => client.signal);
    client.abort(new Error('gone'));
    expect(deadline.signal.aborted).toBe(true);
    expect(deadline.timeLimit.aborted).toBe(false);
    deadline.dispose();
  });
});
