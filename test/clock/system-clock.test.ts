import { describe, expect, it } from 'vitest';
import { createSystemClock } from '../../src/clock/index.ts';

describe('the system clock', () => {
  const clock = createSystemClock();

  it('sleeps for about the time asked', async () => {
    const started = performance.now();
    await clock.sleep(20);
    expect(performance.now() - started).toBeGreaterThanOrEqual(19);
  });

  it('rejects with the signal\'s own reason when it aborts during the sleep, or had aborted before', async () => {
    const reason = new Error('stopped by the test');
    const controller = new AbortController();
    const sleeping = clock.sleep(60_000, { signal: controller.signal });
    controller.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
    await expect(clock.sleep(60_000, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });

  it('resolves when the time comes first, and a later abort changes nothing', async () => {
    const controller = new AbortController();
    await clock.sleep(5, { signal: controller.signal });
    controller.abort(new Error('too late'));
    expect(controller.signal.aborted).toBe(true);
  });
});
