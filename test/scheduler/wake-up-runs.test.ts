/**
 * The rules a scheduled wake-up runs by, in a daemon that runs schedules (the kernel's wake-up
 * runs, `src/kernel/wake-runs.ts`): the scheduler hands every wake-up due to them, and they decide.
 * A budget's refusal is wake-up-budget.test.ts's.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ScheduleRunRecord } from '../../src/contracts/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { createJsonLogRecorder, openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { deferred } from './scheduler-fixtures.ts';
import { MINUTE, scheduledAgentToml } from './scheduled-daemon.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;
let log: ReturnType<typeof createJsonLogRecorder>;

beforeEach(async () => {
  dir = await makeTempDir('loom-wake-up-runs-');
  log = createJsonLogRecorder();
  host = await openTestHost(dir.path, {}, TEST_KEYS, { runSchedules: true, logger: log.logger });
  await host.kernel.spawn(manifest(scheduledAgentToml('monitor', 'mode = "continuous"\ninterval_seconds = 60', server.url)));
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

/** The monitor's runs once `count` of them are recorded and none runs, oldest due first. */
async function settledRuns(count: number): Promise<ScheduleRunRecord[]> {
  return waitFor(`${count} settled run(s)`, async () => {
    const runs = await host.kernel.wakeRuns.list('monitor');
    return runs.length === count && runs.every((run) => run.outcome !== 'running') ? [...runs].reverse() : undefined;
  });
}

describe("a scheduled wake-up's run", () => {
  it('is skipped and recorded so when it falls due while the previous run still goes; none is queued, the next runs at its own instant', async () => {
    const slow = deferred();
    server.script([{ text: 'slow work', gate: slow.promise }, { text: 'next' }]);
    const start = host.clock.now();
    await host.clock.advance(MINUTE);
    await waitFor('the first wake-up to reach the model', () => server.requests.length === 1);
    await host.clock.advance(MINUTE);
    await waitFor('the second wake-up to be skipped', async () => (await host.kernel.wakeRuns.list('monitor')).some((run) => run.outcome === 'skipped'));
    slow.resolve();
    await waitFor('the first wake-up to complete', async () => (await host.kernel.wakeRuns.list('monitor')).every((run) => run.outcome !== 'running'));
    expect(server.requests).toHaveLength(1);
    await host.clock.advance(MINUTE);
    const runs = await settledRuns(3);
    expect(runs.map((run) => [run.dueAt - start, run.outcome, run.reason])).toEqual([
      [MINUTE, 'completed', null],
      [2 * MINUTE, 'skipped', 'its previous run was still going'],
      [3 * MINUTE, 'completed', null],
    ]);
    expect(server.requests).toHaveLength(2);
    // One line in the daemon's log for the skip: its run's end, with why.
    expect(log.records.map((record) => String(record['msg'])).filter((msg) => msg.includes('previous run'))).toEqual([
      'scheduled run of agent "monitor" (continuous) skipped: its previous run was still going',
    ]);
  });

  it('whose turn fails is recorded as failed, with why, and logged as an error; the next wake-up runs', async () => {
    server.script([{ status: 401 }, { text: 'back' }]);
    await host.clock.advance(MINUTE);
    await settledRuns(1);
    await host.clock.advance(MINUTE);
    const [failed, next] = await settledRuns(2);
    expect(failed).toMatchObject({ outcome: 'failed', reason: expect.stringContaining('openai/gpt-4o') as string });
    expect(next).toMatchObject({ outcome: 'completed' });
    const errors = log.records.filter((record) => record['level'] === 50).map((record) => record['msg']);
    expect(errors).toContain('scheduled run of agent "monitor" (continuous) failed');
  });
});
