import { describe, expect, it } from 'vitest';
import type { ScheduleRunRecord } from '../../../src/contracts/index.ts';
import { StoreNotFoundError } from '../../../src/errors/index.ts';
import { createAgentIn, type StoreContext } from './fixtures.ts';

const run = (id: string, agentId: string, dueAt: number, changes: Partial<ScheduleRunRecord> = {}): ScheduleRunRecord => ({
  id,
  agentId,
  trigger: 'cron',
  dueAt,
  startedAt: dueAt,
  finishedAt: null,
  outcome: 'running',
  reason: null,
  caughtUp: false,
  count: 1,
  checkHash: null,
  ...changes,
});

/** The schedule-runs part of the Store contract. */
export function describeScheduleRunsContract(context: StoreContext): void {
  describe('scheduleRuns', () => {
    it("stores runs and lists an agent's newest due first, with every field as written", async () => {
      await createAgentIn(context.store, 'a1');
      await createAgentIn(context.store, 'a2');
      const caughtUp = run('r2', 'a1', 2_000, { caughtUp: true, outcome: 'completed', finishedAt: 2_500 });
      const skipped = run('r1', 'a1', 1_000, { startedAt: null, finishedAt: 1_900, outcome: 'skipped', reason: 'missed "twice" — not caught up', count: 3 });
      await context.store.scheduleRuns.create(skipped);
      await context.store.scheduleRuns.create(caughtUp);
      await context.store.scheduleRuns.create(run('r3', 'a2', 3_000));
      expect(await context.store.scheduleRuns.list('a1')).toEqual([caughtUp, skipped]);
      expect(await context.store.scheduleRuns.list('a1', { limit: 1 })).toEqual([caughtUp]);
      expect(await context.store.scheduleRuns.list('nobody')).toEqual([]);
    });

    it('replaces a run on update, and refuses to update one that does not exist', async () => {
      await createAgentIn(context.store, 'a1');
      await context.store.scheduleRuns.create(run('r1', 'a1', 1_000));
      const finished = run('r1', 'a1', 1_000, { outcome: 'failed', reason: 'the model failed', finishedAt: 1_200 });
      await context.store.scheduleRuns.update(finished);
      expect(await context.store.scheduleRuns.list('a1')).toEqual([finished]);
      await expect(context.store.scheduleRuns.update(run('missing', 'a1', 1))).rejects.toBeInstanceOf(StoreNotFoundError);
    });

    it('lastDue() is the latest scheduled instant of the agent, forced runs left out', async () => {
      await createAgentIn(context.store, 'a1');
      expect(await context.store.scheduleRuns.lastDue('a1')).toBeUndefined();
      await context.store.scheduleRuns.create(run('r1', 'a1', 1_000, { trigger: 'continuous' }));
      await context.store.scheduleRuns.create(run('r2', 'a1', 5_000, { trigger: 'manual' }));
      expect(await context.store.scheduleRuns.lastDue('a1')).toBe(1_000);
    });

    it('lastCheckHash() is the check hash of the newest run that recorded one', async () => {
      await createAgentIn(context.store, 'a1');
      expect(await context.store.scheduleRuns.lastCheckHash('a1')).toBeUndefined();
      await context.store.scheduleRuns.create(run('r1', 'a1', 1_000, { checkHash: 'sha256:old' }));
      await context.store.scheduleRuns.create(run('r2', 'a1', 2_000, { checkHash: 'sha256:new' }));
      await context.store.scheduleRuns.create(run('r3', 'a1', 3_000));
      expect(await context.store.scheduleRuns.lastCheckHash('a1')).toBe('sha256:new');
    });

    it('interruptRunning() marks only the running runs interrupted, and returns them', async () => {
      await createAgentIn(context.store, 'a1');
      const done = run('r1', 'a1', 1_000, { outcome: 'completed', finishedAt: 1_100 });
      await context.store.scheduleRuns.create(done);
      await context.store.scheduleRuns.create(run('r2', 'a1', 2_000));
      const interrupted = run('r2', 'a1', 2_000, { outcome: 'interrupted', reason: 'the daemon stopped', finishedAt: 9_000 });
      expect(await context.store.scheduleRuns.interruptRunning(9_000, 'the daemon stopped')).toEqual([interrupted]);
      expect(await context.store.scheduleRuns.list('a1')).toEqual([interrupted, done]);
    });

    it('interruptRunning() of one wake-up marks only its running runs interrupted', async () => {
      await createAgentIn(context.store, 'a1');
      await createAgentIn(context.store, 'a2');
      await context.store.scheduleRuns.create(run('cut', 'a1', 2_000));
      await context.store.scheduleRuns.create(run('later', 'a1', 3_000));
      await context.store.scheduleRuns.create(run('other-agent', 'a2', 2_000));
      const interrupted = run('cut', 'a1', 2_000, { outcome: 'interrupted', reason: 'its node stopped', finishedAt: 9_000 });
      expect(await context.store.scheduleRuns.interruptRunning(9_000, 'its node stopped', { agentId: 'a1', trigger: 'cron', dueAt: 2_000 })).toEqual([
        interrupted,
      ]);
      expect((await context.store.scheduleRuns.list('a1')).map((entry) => [entry.id, entry.outcome])).toEqual([
        ['later', 'running'],
        ['cut', 'interrupted'],
      ]);
      expect((await context.store.scheduleRuns.list('a2')).map((entry) => entry.outcome)).toEqual(['running']);
      // Another trigger's instant is another wake-up.
      expect(await context.store.scheduleRuns.interruptRunning(9_500, 'again', { agentId: 'a1', trigger: 'continuous', dueAt: 3_000 })).toEqual([]);
    });

    it("deletes an agent's runs with the agent", async () => {
      await createAgentIn(context.store, 'a1');
      await context.store.scheduleRuns.create(run('r1', 'a1', 1_000));
      await context.store.agents.delete(['a1']);
      expect(await context.store.scheduleRuns.list('a1')).toEqual([]);
    });
  });
}
