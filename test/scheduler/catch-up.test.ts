import { describe, expect, it } from 'vitest';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import type { ScheduleRunRecord } from '../../src/contracts/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import type { TestHost } from '../support/test-host.ts';
import { manifest } from '../support/test-kernel.ts';
import { EIGHT, MINUTE, scheduledAgentToml, useScheduledDaemon } from './scheduled-daemon.ts';

const server = useScriptedModelServer();
const daemons = useScheduledDaemon('loom-catch-up-');
const startDaemon = (clock: FakeClock, config?: Record<string, unknown>): Promise<TestHost> => daemons.start(clock, config);
const downFor = (clock: FakeClock, ms: number, config?: Record<string, unknown>): Promise<TestHost> => daemons.restartAfter(clock, ms, config);
const agentToml = (name: string, schedule: string): string => scheduledAgentToml(name, schedule, server.url);

/** The agent's runs once `count` of them are recorded and none runs, oldest due first. */
async function settledRuns(daemon: TestHost, agent: string, count: number): Promise<ScheduleRunRecord[]> {
  return waitFor(`${count} settled run(s) of "${agent}"`, async () => {
    const runs = await daemon.kernel.wakeRuns.list(agent);
    return runs.length === count && runs.every((run) => run.outcome !== 'running') ? [...runs].reverse() : undefined;
  });
}

const iso = (at: number | null): string | null => (at === null ? null : new Date(at).toISOString());
const brief = (run: ScheduleRunRecord): Record<string, unknown> => ({
  trigger: run.trigger,
  due: iso(run.dueAt),
  outcome: run.outcome,
  caughtUp: run.caughtUp,
  count: run.count,
});

describe('wake-ups due while the daemon was down', () => {
  it('a 09:00 report whose daemon restarted at 08:59 runs once when it is back, recorded as caught up', async () => {
    const clock = createFakeClock(EIGHT);
    const daemon = await startDaemon(clock);
    await daemon.kernel.spawn(manifest(agentToml('reporter', 'mode = "periodic"\ncron = "0 9 * * *"')));
    await clock.advance(59 * MINUTE);
    server.script([{ text: 'the 09:00 report' }]);

    const back = await downFor(clock, 10 * MINUTE);

    const [run] = await settledRuns(back, 'reporter', 1);
    expect(server.requests).toHaveLength(1);
    expect(run).toMatchObject({
      trigger: 'cron',
      dueAt: Date.UTC(2026, 0, 5, 9),
      outcome: 'completed',
      caughtUp: true,
      startedAt: Date.UTC(2026, 0, 5, 9, 9),
      reason: null,
    });
  });

  it('catch_up = "once" (the default) runs only the latest missed wake-up, and records the others as skipped', async () => {
    const clock = createFakeClock(EIGHT);
    const daemon = await startDaemon(clock);
    await daemon.kernel.spawn(manifest(agentToml('monitor', 'mode = "continuous"\ninterval_seconds = 600')));
    server.script([{ text: 'checked' }]);

    const back = await downFor(clock, 35 * MINUTE);

    const runs = await settledRuns(back, 'monitor', 2);
    expect(runs.map(brief)).toEqual([
      { trigger: 'continuous', due: '2026-01-05T08:10:00.000Z', outcome: 'skipped', caughtUp: false, count: 2 },
      { trigger: 'continuous', due: '2026-01-05T08:30:00.000Z', outcome: 'completed', caughtUp: true, count: 1 },
    ]);
    expect(runs[0]?.reason).toBe('2 wake-ups missed while the daemon was down (catch_up = "once": only the latest is run): not run');
    expect(server.requests).toHaveLength(1);
  });

  it('catch_up = "all" runs every missed wake-up, oldest first, one at a time', async () => {
    const clock = createFakeClock(EIGHT);
    const daemon = await startDaemon(clock);
    await daemon.kernel.spawn(manifest(agentToml('monitor', 'mode = "continuous"\ninterval_seconds = 600\ncatch_up = "all"')));
    server.script([{ text: 'one' }, { text: 'two' }, { text: 'three' }]);

    const back = await downFor(clock, 35 * MINUTE);

    const runs = await settledRuns(back, 'monitor', 3);
    expect(runs.map(brief)).toEqual(
      ['08:10', '08:20', '08:30'].map((time) => ({ trigger: 'continuous', due: `2026-01-05T${time}:00.000Z`, outcome: 'completed', caughtUp: true, count: 1 })),
    );
    expect(server.requests).toHaveLength(3);
  });

  it('catch_up = "skip" in config.toml runs none, and says so in one skipped run', async () => {
    const clock = createFakeClock(EIGHT);
    const config = { scheduler: { catch_up: 'skip' } };
    const daemon = await startDaemon(clock, config);
    await daemon.kernel.spawn(manifest(agentToml('monitor', 'mode = "continuous"\ninterval_seconds = 600')));
    server.script([{ text: 'never asked' }]);

    const back = await downFor(clock, 35 * MINUTE, config);

    const [run] = await settledRuns(back, 'monitor', 1);
    expect(run).toMatchObject({ trigger: 'continuous', dueAt: EIGHT + 10 * MINUTE, outcome: 'skipped', caughtUp: false, count: 3, startedAt: null });
    expect(run?.reason).toBe('3 wake-ups missed while the daemon was down (catch_up = "skip"): not run');
    expect(server.requests).toHaveLength(0);
  });

  it('a wake-up missed longer ago than catch_up_window_seconds is recorded as skipped, not run', async () => {
    const clock = createFakeClock(EIGHT);
    const daemon = await startDaemon(clock);
    await daemon.kernel.spawn(manifest(agentToml('reporter', 'mode = "periodic"\ncron = "0 9 * * *"\ncatch_up_window_seconds = 1800')));
    await clock.advance(59 * MINUTE);
    server.script([{ text: 'never asked' }]);

    // Back at 09:45: the 09:00 report is 45 minutes old, past the 30-minute window.
    const back = await downFor(clock, 46 * MINUTE);

    const [run] = await settledRuns(back, 'reporter', 1);
    expect(run).toMatchObject({ trigger: 'cron', dueAt: Date.UTC(2026, 0, 5, 9), outcome: 'skipped', count: 1 });
    expect(run?.reason).toBe('1 wake-up missed while the daemon was down, more than 1800 s ago (catch_up_window_seconds): not run');
    expect(server.requests).toHaveLength(0);
  });

  it('an agent suspended while its wake-ups were due catches nothing up when resumed', async () => {
    const clock = createFakeClock(EIGHT);
    const daemon = await startDaemon(clock);
    await daemon.kernel.spawn(manifest(agentToml('monitor', 'mode = "continuous"\ninterval_seconds = 600')));
    await daemon.kernel.suspend('monitor');
    await clock.advance(35 * MINUTE);
    await daemon.kernel.resume('monitor');
    server.script([{ text: 'on time' }]);

    await clock.advance(10 * MINUTE);

    const runs = await settledRuns(daemon, 'monitor', 1);
    expect(runs.map(brief)).toEqual([{ trigger: 'continuous', due: '2026-01-05T08:45:00.000Z', outcome: 'completed', caughtUp: false, count: 1 }]);
  });

  it("a run the daemon's stop cuts off is recorded as interrupted", async () => {
    const clock = createFakeClock(EIGHT);
    const daemon = await startDaemon(clock, { scheduler: { catch_up: 'skip' } });
    await daemon.kernel.spawn(manifest(agentToml('monitor', 'mode = "continuous"\ninterval_seconds = 600')));
    let answer: (() => void) | undefined;
    server.script([{ text: 'slow', gate: new Promise<void>((resolve) => (answer = resolve)) }]);
    await clock.advance(10 * MINUTE);
    await waitFor('the wake-up to reach the model', () => server.requests.length === 1);

    const back = await downFor(clock, MINUTE, { scheduler: { catch_up: 'skip' } });
    answer?.();

    const [run] = await settledRuns(back, 'monitor', 1);
    expect(run).toMatchObject({
      dueAt: EIGHT + 10 * MINUTE,
      outcome: 'interrupted',
      reason: 'agent "monitor" stopped because Loom is shutting down during the turn',
    });
  });
});
