import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createScheduler, cronInstants, intervalInstants } from '../../src/scheduler/index.ts';
import { recordingRuns } from './scheduler-fixtures.ts';

const HOUR = 3_600_000;

/** Fire instants of a timer over `hours` of fake time, as ISO strings. */
async function firesOver(
  start: number,
  hours: number,
  next: (clock: ReturnType<typeof createFakeClock>) => (previous: number | undefined) => number | null,
): Promise<string[]> {
  const clock = createFakeClock(start);
  const scheduler = createScheduler({ clock, logger: createSilentLogger(), runs: recordingRuns(() => clock.now()).runs });
  const fired: string[] = [];
  const stop = scheduler.addTimer({ name: 'test', next: next(clock), fire: (at) => fired.push(new Date(at).toISOString()) });
  for (let hour = 0; hour < hours; hour += 1) await clock.advance(HOUR);
  stop();
  await clock.advance(48 * HOUR);
  return fired;
}

describe('scheduler timers (package bindings)', () => {
  it('fires a cron in its time zone once on the day clocks spring forward and once on the day they fall back', async () => {
    // Europe/Berlin: 2026-03-29 02:00 → 03:00 (02:30 does not exist); 2026-10-25 03:00 → 02:00 (02:30 happens twice).
    const spring = await firesOver(Date.UTC(2026, 2, 27, 12), 72, (clock) => cronInstants('30 2 * * *', 'Europe/Berlin', clock));
    expect(spring.filter((at) => at.startsWith('2026-03-29'))).toHaveLength(1);
    expect(spring[0]).toBe('2026-03-28T01:30:00.000Z');
    const autumn = await firesOver(Date.UTC(2026, 9, 24, 12), 72, (clock) => cronInstants('30 2 * * *', 'Europe/Berlin', clock));
    expect(autumn.filter((at) => at.startsWith('2026-10-25'))).toHaveLength(1);
    // The first 02:30 (still summer time, UTC+2) fires; the repeated one does not.
    expect(autumn).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z', '2026-10-27T01:30:00.000Z']);
  });

  it('fires an interval one interval after it starts, then at a fixed cadence, and never after it is stopped', async () => {
    const fired = await firesOver(Date.UTC(2026, 0, 1), 2, (clock) => intervalInstants(30 * 60_000, clock));
    expect(fired).toEqual(['2026-01-01T00:30:00.000Z', '2026-01-01T01:00:00.000Z', '2026-01-01T01:30:00.000Z', '2026-01-01T02:00:00.000Z']);
  });
});
