import { describe, expect, it } from 'vitest';
import { createSystemClock } from '../../src/clock/index.ts';

describe('the system clock', () => {
  const clock = createSystemClock();

  it('sleeps for about the time asked', async () => {
    const started = performance.now();
    await clock.sleep(20);
    expect(performance.now() - started).toBeGreaterThanOrEqual(19);
  });

  it("rejects with the signal's own reason when it aborts during the sleep, or had aborted before", async () => {
    const reason = new Error('stopped by the test');
    const controller = new AbortController();
    const sleeping = clock.sleep(60_000, { signal: controller.signal });
    controller.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
    await expect(clock.sleep(60_000, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });

  it('sleeps past the longest delay a Node timer takes (2^31 - 1 ms) instead of waking at once', async () => {
    // A yearly cron's next run is more than 24.8 days away: Node fires such a timer after 1 ms.
    const controller = new AbortController();
    let woke = false;
    const sleeping = clock.sleep(2 ** 31 + 60_000, { signal: controller.signal }).then(() => (woke = true));
    await clock.sleep(50);
    expect(woke).toBe(false);
    const reason = new Error('stopped by the test');
    controller.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
  });

  it('resolves when the time comes first, and a later abort changes nothing', async () => {
    const controller = new AbortController();
    await clock.sleep(5, { signal: controller.signal });
    controller.abort(new Error('too late'));
    expect(controller.signal.aborted).toBe(true);
  });

  it('calls a timer at its time, and never once it was called off', async () => {
    const fired: string[] = [];
    const started = performance.now();
    clock.timer(20, () => fired.push(`kept after ${Math.round(performance.now() - started)} ms`));
    const callOff = clock.timer(10, () => fired.push('called off'));
    callOff();
    await clock.sleep(40);
    expect(fired).toHaveLength(1);
    expect(Number(/after (\d+) ms/.exec(fired[0] ?? '')?.[1])).toBeGreaterThanOrEqual(19);
  });
});
