import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import { ConfigError } from '../../src/errors/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { CONTINUOUS_WAKE_MESSAGE, createScheduler } from '../../src/scheduler/index.ts';
import { createRecordingLogger } from '../support/recording-logger.ts';
import { agentEntry, createFakeWatcher, recordingRuns } from './scheduler-fixtures.ts';

const START = Date.UTC(2026, 0, 1);
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

function setup(options: { timezone?: string; start?: number; respond?: Parameters<typeof recordingRuns>[1] } = {}) {
  const clock = createFakeClock(options.start ?? START);
  const logger = createRecordingLogger();
  const { runs, calls } = recordingRuns(() => clock.now(), options.respond);
  const scheduler = createScheduler({ clock, logger, runs, timezone: options.timezone });
  return { clock, logger, calls, scheduler };
}

describe('scheduler: reactive', () => {
  it('schedules nothing for a reactive agent: no sleeps, no watchers, no wake-ups', async () => {
    const clock = createFakeClock(START);
    const watcher = createFakeWatcher();
    const { runs, calls } = recordingRuns(() => clock.now());
    const scheduler = createScheduler({ clock, logger: createSilentLogger(), runs, watch: watcher.watch });
    await scheduler.start(agentEntry('chat', ''));
    expect(clock.pending()).toBe(0);
    await clock.advance(24 * HOUR);
    expect(calls).toEqual([]);
    expect(watcher.watches).toEqual([]);
  });
});

describe('scheduler: continuous', () => {
  const MONITOR = '[schedule]\nmode = "continuous"\ninterval_seconds = 30\n';

  it('wakes the agent with the continuous message every interval_seconds, and not before the first interval ends', async () => {
    const { clock, calls, scheduler } = setup();
    await scheduler.start(agentEntry('monitor', MONITOR));
    await clock.advance(30 * SECOND - 1);
    expect(calls).toEqual([]);
    await clock.advance(1);
    expect(calls).toEqual([
      {
        agentId: 'id-monitor',
        message: CONTINUOUS_WAKE_MESSAGE,
        at: START + 30 * SECOND,
        wake: { trigger: 'continuous', cause: 'continuous', message: CONTINUOUS_WAKE_MESSAGE, dueAt: START + 30 * SECOND },
      },
    ]);
    await clock.advance(60 * SECOND);
    expect(calls.map((call) => call.at - START)).toEqual([30 * SECOND, 60 * SECOND, 90 * SECOND]);
  });

  it('uses the 60-second default when interval_seconds is left out', async () => {
    const { clock, calls, scheduler } = setup();
    await scheduler.start(agentEntry('monitor', '[schedule]\nmode = "continuous"\n'));
    await clock.advance(59 * SECOND);
    expect(calls).toEqual([]);
    await clock.advance(SECOND);
    expect(calls.map((call) => call.at - START)).toEqual([60 * SECOND]);
  });

  it('stop() ends the loop at once: no wake-ups after advancing, no sleeps left waiting', async () => {
    const { clock, calls, scheduler } = setup();
    const agent = agentEntry('monitor', MONITOR);
    await scheduler.start(agent);
    await clock.advance(30 * SECOND);
    expect(calls).toHaveLength(1);
    await scheduler.stop(agent, 'suspend');
    await clock.advance(0);
    expect(clock.pending()).toBe(0);
    await clock.advance(10 * MINUTE);
    expect(calls).toHaveLength(1);
  });

  it('start() on an already-started agent does not add a second loop', async () => {
    const { clock, calls, scheduler } = setup();
    const agent = agentEntry('monitor', MONITOR);
    await scheduler.start(agent);
    await scheduler.start(agent);
    await clock.advance(30 * SECOND);
    expect(calls).toHaveLength(1);
  });

  it('start() after stop() schedules the agent again (a resume)', async () => {
    const { clock, calls, scheduler } = setup();
    const agent = agentEntry('monitor', MONITOR);
    await scheduler.start(agent);
    await scheduler.stop(agent, 'suspend');
    await scheduler.start(agent);
    await clock.advance(30 * SECOND);
    expect(calls).toHaveLength(1);
  });

  it('stopAll() ends the loops of every agent', async () => {
    const { clock, calls, scheduler } = setup();
    await scheduler.start(agentEntry('first', MONITOR));
    await scheduler.start(agentEntry('second', MONITOR));
    await clock.advance(30 * SECOND);
    expect(calls.map((call) => call.agentId).sort()).toEqual(['id-first', 'id-second']);
    scheduler.stopAll();
    await clock.advance(10 * MINUTE);
    expect(calls).toHaveLength(2);
    expect(clock.pending()).toBe(0);
  });

  it('logs a wake-up its runs could not make (the store failed) and keeps the loop going', async () => {
    const { clock, calls, logger, scheduler } = setup({ respond: () => Promise.reject(new Error('database is locked')) });
    await scheduler.start(agentEntry('monitor', MONITOR));
    await clock.advance(90 * SECOND);
    expect(calls).toHaveLength(3);
    const failures = logger.entries.filter((entry) => entry.level === 'error');
    expect(failures.map((entry) => entry.message)).toEqual(Array(3).fill('could not wake agent "monitor" (continuous)'));
    expect(failures[0]?.bindings).toMatchObject({ agentId: 'id-monitor', err: new Error('database is locked') });
  });

  it('keeps the loop going when its runs throw synchronously', async () => {
    const { clock, calls, scheduler } = setup({
      respond: () => {
        throw new Error('not bound yet');
      },
    });
    await scheduler.start(agentEntry('monitor', MONITOR));
    await clock.advance(60 * SECOND);
    expect(calls).toHaveLength(2);
  });
});

describe('scheduler: periodic', () => {
  it('fires at each cron time, across a day boundary, in UTC by default', async () => {
    const start = Date.UTC(2026, 0, 1, 22, 0);
    const { clock, calls, scheduler } = setup({ start });
    await scheduler.start(agentEntry('reporter', '[schedule]\nmode = "periodic"\ncron = "30 23,0 * * *"\n'));
    for (let step = 0; step < 26 * 4; step += 1) await clock.advance(15 * MINUTE);
    expect(calls.map((call) => new Date(call.at).toISOString())).toEqual(['2026-01-01T23:30:00.000Z', '2026-01-02T00:30:00.000Z', '2026-01-02T23:30:00.000Z']);
    expect(calls[0]?.message).toContain('cron "30 23,0 * * *"');
  });

  it('fires exactly at the cron instant when the clock jumps over it, and not a millisecond before', async () => {
    const { clock, calls, scheduler } = setup();
    await scheduler.start(agentEntry('reporter', '[schedule]\nmode = "periodic"\ncron = "0 9 * * *"\n'));
    await clock.advance(9 * HOUR - 1);
    expect(calls).toEqual([]);
    await clock.advance(48 * HOUR + 1);
    expect(calls.map((call) => new Date(call.at).toISOString())).toEqual(['2026-01-01T09:00:00.000Z', '2026-01-02T09:00:00.000Z', '2026-01-03T09:00:00.000Z']);
  });

  it('reads the cron expression in the configured time zone, daylight saving included', async () => {
    const { clock, calls, scheduler } = setup({ timezone: 'America/New_York', start: Date.UTC(2026, 2, 7) });
    await scheduler.start(agentEntry('reporter', '[schedule]\nmode = "periodic"\ncron = "0 9 * * *"\n'));
    await clock.advance(3 * 24 * HOUR);
    // New York moves from UTC-5 to UTC-4 on 2026-03-08.
    expect(calls.map((call) => new Date(call.at).toISOString())).toEqual(['2026-03-07T14:00:00.000Z', '2026-03-08T13:00:00.000Z', '2026-03-09T13:00:00.000Z']);
    expect(calls[0]?.message).toContain('America/New_York');
  });

  it('stop() ends a periodic schedule', async () => {
    const { clock, calls, scheduler } = setup();
    const agent = agentEntry('reporter', '[schedule]\nmode = "periodic"\ncron = "0 * * * *"\n');
    await scheduler.start(agent);
    await clock.advance(HOUR);
    await scheduler.stop(agent, 'kill');
    await clock.advance(5 * HOUR);
    expect(calls).toHaveLength(1);
    expect(clock.pending()).toBe(0);
  });

  it('createScheduler() throws a ConfigError naming an unknown time zone', () => {
    const clock = createFakeClock(START);
    const create = () => createScheduler({ clock, logger: createSilentLogger(), runs: recordingRuns(() => clock.now()).runs, timezone: 'Mars/Olympus' });
    expect(create).toThrow(ConfigError);
    expect(create).toThrow('"Mars/Olympus"');
  });
});
