import { describe, expect, it } from 'vitest';
import type { ActivityRunRecord, PackageRunRecord } from '../../../src/contracts/index.ts';
import { StoreNotFoundError } from '../../../src/errors/index.ts';
import type { StoreContext } from './fixtures.ts';

const activity = (id: string, changes: Partial<ActivityRunRecord> = {}): ActivityRunRecord => ({
  id,
  status: 'pending',
  attempts: 0,
  inputTokens: 0,
  outputTokens: 0,
  costUsd: 0,
  output: null,
  error: null,
  fallback: null,
  startedAt: null,
  endedAt: null,
  ...changes,
});

const run = (id: string, startedAt: number, changes: Partial<PackageRunRecord> = {}): PackageRunRecord => ({
  id,
  package: 'chief-of-staff',
  binding: 'morning-briefing',
  trigger: 'schedule',
  status: 'running',
  inputs: { sources: ['calendar', 'email'] },
  activities: [activity('gather-updates'), activity('write-briefing')],
  emitted: null,
  error: null,
  startedAt,
  endedAt: null,
  nodeId: 'node-1',
  ...changes,
});

/** The package-runs part of the Store contract. */
export function describePackageRunsContract(context: StoreContext): void {
  describe('packageRuns', () => {
    it('stores a run and reads it back exactly, activities and inputs included', async () => {
      const stored = run('r1', 1_000, {
        activities: [
          activity('gather-updates', {
            status: 'completed',
            attempts: 2,
            inputTokens: 40,
            outputTokens: 12,
            costUsd: 0.0012,
            output: 'três "quoted" lines\n',
            startedAt: 1_001,
            endedAt: 1_002,
          }),
          activity('write-briefing'),
        ],
      });
      await context.store.packageRuns.create(stored);
      expect(await context.store.packageRuns.get('r1')).toEqual(stored);
      expect(await context.store.packageRuns.get('missing')).toBeUndefined();
    });

    it('replaces a run on update, and refuses to update one that does not exist', async () => {
      await context.store.packageRuns.create(run('r1', 1_000));
      const finished = run('r1', 1_000, { status: 'completed', emitted: 'chief-of-staff.briefing.ready', endedAt: 2_000 });
      await context.store.packageRuns.update(finished);
      expect(await context.store.packageRuns.get('r1')).toEqual(finished);
      await expect(context.store.packageRuns.update(run('nope', 1))).rejects.toBeInstanceOf(StoreNotFoundError);
    });

    it('lists runs newest first, by package and binding, up to the limit', async () => {
      await context.store.packageRuns.create(run('old', 1_000));
      await context.store.packageRuns.create(run('new', 3_000));
      await context.store.packageRuns.create(run('other', 2_000, { binding: 'deep-dive' }));
      await context.store.packageRuns.create(run('elsewhere', 4_000, { package: 'data-pipeline' }));
      const ids = (runs: PackageRunRecord[]): string[] => runs.map((entry) => entry.id);
      expect(ids(await context.store.packageRuns.list())).toEqual(['elsewhere', 'new', 'other', 'old']);
      expect(ids(await context.store.packageRuns.list({ package: 'chief-of-staff' }))).toEqual(['new', 'other', 'old']);
      expect(ids(await context.store.packageRuns.list({ package: 'chief-of-staff', binding: 'morning-briefing', limit: 1 }))).toEqual(['new']);
    });

    it('marks only running runs interrupted, failing the activity that was running and keeping the finished ones', async () => {
      await context.store.packageRuns.create(
        run('cut', 1_000, {
          activities: [activity('gather-updates', { status: 'completed', output: 'kept' }), activity('write-briefing', { status: 'running', attempts: 1 })],
        }),
      );
      const done = run('done', 500, { status: 'completed', endedAt: 900 });
      await context.store.packageRuns.create(done);

      const changed = await context.store.packageRuns.interruptRunning(5_000, 'the daemon stopped during the run');

      expect(changed.map((entry) => entry.id)).toEqual(['cut']);
      expect(await context.store.packageRuns.get('cut')).toMatchObject({
        status: 'interrupted',
        error: 'the daemon stopped during the run',
        endedAt: 5_000,
        activities: [
          { id: 'gather-updates', status: 'completed', output: 'kept' },
          { id: 'write-briefing', status: 'failed', error: 'the daemon stopped during the run', endedAt: 5_000 },
        ],
      });
      expect(await context.store.packageRuns.get('done')).toEqual(done);
      expect(await context.store.packageRuns.interruptRunning(6_000, 'again')).toEqual([]);
    });

    it('starts a run, and a run cut off again under its id (replaced), beside runs marked running by no node alive', async () => {
      const { packageRuns } = context.store;
      const first = run('r1', 1_000, { nodeId: null });
      expect(await packageRuns.start(first)).toEqual({ started: true });
      expect(await packageRuns.get('r1')).toEqual(first);
      // Left running by a node that is not alive (on SQLite no other node is), or by no node: cut off, not going.
      await packageRuns.create(run('gone', 500, { nodeId: 'a-node-gone' }));
      await packageRuns.update({ ...first, status: 'interrupted', error: 'cut off', endedAt: 2_000 });
      const resumed = run('r1', 1_000, {
        nodeId: 'node-2',
        activities: [activity('gather-updates', { status: 'completed', output: 'kept' }), activity('write-briefing')],
      });
      expect(await packageRuns.start(resumed)).toEqual({ started: true });
      expect(await packageRuns.get('r1')).toEqual(resumed);
      const next = run('r2', 3_000, { nodeId: 'node-3', trigger: 'heartbeat' });
      expect(await packageRuns.start(next)).toEqual({ started: true });
      expect((await packageRuns.list()).map((entry) => [entry.id, entry.status])).toEqual([
        ['r2', 'running'],
        ['r1', 'running'],
        ['gone', 'running'],
      ]);
    });

    it('refuses to start a run of a binding another live node runs, naming its newest run; a node gone runs none, and a node is not refused its own', async (test) => {
      const { otherNode, origin } = context;
      if (otherNode === undefined || origin === undefined) return test.skip('alone (SQLite), no other node runs anything');
      const { packageRuns } = context.store;
      const alive = await otherNode('alive', 'node-alive');
      const silent = await otherNode('silent', 'node-silent');
      const stopped = await otherNode('stopped', 'node-stopped');
      await silent.packageRuns.create(run('of-silent', 1_000, { nodeId: 'node-silent' }));
      await stopped.packageRuns.create(run('of-stopped', 1_100, { nodeId: 'node-stopped' }));
      const mine = run('mine', 2_000, { nodeId: origin });
      expect(await packageRuns.start(mine)).toEqual({ started: true });

      expect(await alive.packageRuns.start(run('theirs', 3_000, { nodeId: 'node-alive' }))).toEqual({ started: false, going: mine });
      // Another binding, or another package's binding of that name, is another matter.
      expect(await alive.packageRuns.start(run('evening', 3_000, { nodeId: 'node-alive', binding: 'evening' }))).toEqual({ started: true });
      expect(await alive.packageRuns.start(run('other', 3_000, { nodeId: 'node-alive', package: 'data-pipeline' }))).toEqual({ started: true });
      await packageRuns.update({ ...mine, status: 'completed', endedAt: 2_500 });
      const theirs = run('theirs', 3_000, { nodeId: 'node-alive' });
      expect(await alive.packageRuns.start(theirs)).toEqual({ started: true });
      // The node's own runs are guarded in its memory, not here.
      const again = run('theirs-again', 3_500, { nodeId: 'node-alive' });
      expect(await alive.packageRuns.start(again)).toEqual({ started: true });

      expect(await packageRuns.start(run('mine-again', 4_000, { nodeId: origin }))).toEqual({ started: false, going: again });
      // Nor does a process that is no node (a command's own kernel) start one beside it.
      expect(await packageRuns.start(run('no-node', 4_000, { nodeId: null }))).toEqual({ started: false, going: again });
      // A cut-off run resumed by the node that runs the binding: its own id is not another run.
      await alive.packageRuns.update({ ...theirs, status: 'interrupted', endedAt: 3_600 });
      await alive.packageRuns.update({ ...again, status: 'completed', endedAt: 3_600 });
      expect(await alive.packageRuns.start(theirs)).toEqual({ started: true });
      expect(await packageRuns.get('mine-again')).toBeUndefined();
      expect(await packageRuns.get('no-node')).toBeUndefined();
    });

    it('of two nodes starting one binding at the same moment, one starts it', async (test) => {
      const { otherNode, origin } = context;
      if (otherNode === undefined || origin === undefined) return test.skip('alone (SQLite), one process starts its runs');
      const { packageRuns } = context.store;
      const other = await otherNode('alive', 'node-b');
      const bindings = Array.from({ length: 12 }, (_, index) => `binding-${index}`);
      const outcomes = await Promise.all(
        bindings.flatMap((binding) => [
          packageRuns.start(run(`a-${binding}`, 1_000, { binding, nodeId: origin })),
          other.packageRuns.start(run(`b-${binding}`, 1_000, { binding, nodeId: 'node-b' })),
        ]),
      );
      expect(outcomes.filter((outcome) => outcome.started)).toHaveLength(bindings.length);
      for (const binding of bindings) {
        const running = (await packageRuns.list({ package: 'chief-of-staff', binding })).filter((entry) => entry.status === 'running');
        expect(running).toHaveLength(1);
      }
    });

    it("keeps a heartbeat check's hash and an unchanged run, and reads back the binding's latest hash", async () => {
      expect(await context.store.packageRuns.lastCheckHash('chief-of-staff', 'morning-briefing')).toBeUndefined();
      await context.store.packageRuns.create(run('r1', 1_000, { status: 'completed', checkHash: 'sha256:aa', endedAt: 1_500 }));
      const unchanged = run('r2', 2_000, { status: 'unchanged', checkHash: 'sha256:bb', endedAt: 2_001, activities: [] });
      await context.store.packageRuns.create(unchanged);
      expect(await context.store.packageRuns.get('r2')).toEqual(unchanged);
      // A later run that kept none (it failed) leaves the last hash as it was; another binding's is its own.
      await context.store.packageRuns.create(run('r3', 3_000, { status: 'aborted', endedAt: 3_001 }));
      await context.store.packageRuns.create(run('r4', 4_000, { binding: 'evening', checkHash: 'sha256:cc' }));
      expect(await context.store.packageRuns.lastCheckHash('chief-of-staff', 'morning-briefing')).toBe('sha256:bb');
      expect(await context.store.packageRuns.lastCheckHash('chief-of-staff', 'evening')).toBe('sha256:cc');
    });
  });
}
