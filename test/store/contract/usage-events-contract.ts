import { beforeEach, describe, expect, it } from 'vitest';
import type { Store, UsageRecord } from '../../../src/contracts/index.ts';
import { StoreConflictError } from '../../../src/errors/index.ts';
import { createAgentIn, sessionOf, type StoreContext, usageRecord } from './fixtures.ts';

/** The contract of `store.usage` and `store.events`. */
export function describeUsageAndEventsContract(context: StoreContext): void {
  describe('usage', () => {
    let store: Store;
    beforeEach(() => {
      store = context.store;
    });

    it('usage.record() stores records, which list() returns oldest first', async () => {
      const records = [
        usageRecord('a1', 3_000, { model: 'm3' }),
        usageRecord('a2', 1_000, { model: 'm1', inputTokens: 7, outputTokens: 3, costUsd: 0.125 }),
        usageRecord('a1', 2_000, { model: 'm2' }),
      ];

      for (const record of records) await store.usage.record(record);

      expect(await store.usage.list()).toEqual([records[1], records[2], records[0]]);
    });

    it('usage.totals() sums tokens, cost and calls from since on, for one agent or for all', async () => {
      await store.usage.record(usageRecord('a1', 1_000, { inputTokens: 1, outputTokens: 2, costUsd: 0.5 }));
      await store.usage.record(usageRecord('a1', 2_000, { inputTokens: 10, outputTokens: 20, costUsd: 0.25 }));
      await store.usage.record(usageRecord('a2', 2_000, { inputTokens: 100, outputTokens: 200, costUsd: 1 }));
      await store.usage.record(usageRecord('a1', 3_000, { inputTokens: 1_000, outputTokens: 2_000, costUsd: 2 }));

      const forAgent = await store.usage.totals({ since: 2_000, agentId: 'a1' });
      const forAll = await store.usage.totals({ since: 2_000 });
      const everything = await store.usage.totals({ since: 0 });

      expect(forAgent).toMatchObject({ inputTokens: 1_010, outputTokens: 2_020, calls: 2 });
      expect(forAgent.costUsd).toBeCloseTo(2.25, 9);
      expect(forAll).toMatchObject({ inputTokens: 1_110, outputTokens: 2_220, calls: 3 });
      expect(forAll.costUsd).toBeCloseTo(3.25, 9);
      expect(everything).toMatchObject({ inputTokens: 1_111, outputTokens: 2_222, calls: 4 });
      expect(everything.costUsd).toBeCloseTo(3.75, 9);
    });

    it('usage.totals() is all zeros when no record matches', async () => {
      await store.usage.record(usageRecord('a1', 1_000));

      expect(await store.usage.totals({ since: 5_000 })).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 });
      expect(await store.usage.totals({ since: 0, agentId: 'nobody' })).toEqual({
        inputTokens: 0,
        outputTokens: 0,
        costUsd: 0,
        calls: 0,
      });
    });

    it('usage.familyTotals() gives each family what totals() adds up for it, in the order asked, however its usage was written', async () => {
      // root > kid > grand, and "other" nobody spawned. Costs in powers of two add up exactly in any order.
      const kid = await createAgentIn(store, 'kid');
      const kidRevision = await store.sessions.save(sessionOf(kid), {
        usage: [usageRecord('kid', 1_000, { inputTokens: 2, outputTokens: 20, cacheReadTokens: 1, costUsd: 2, lineage: 'root/' })],
      });
      await store.usage.record(usageRecord('root', 1_000, { inputTokens: 1, outputTokens: 10, costUsd: 1 }));
      // A turn's commit; one refused (a stale revision) writes nothing.
      const commit = (revision: number, usage: UsageRecord[]) =>
        store.sessions.append(kid.sessionId, [{ role: 'assistant', content: 'done' }], { expectedRevision: revision, updatedAt: 2_000, usage });
      const grand = usageRecord('grand', 2_000, { inputTokens: 4, outputTokens: 40, cacheWriteTokens: 3, costUsd: 4, lineage: 'root/kid/' });
      const committed = await commit(kidRevision, [grand, usageRecord('kid', 2_000, { inputTokens: 8, outputTokens: 80, costUsd: 8, lineage: 'root/' })]);
      await expect(commit(kidRevision, [usageRecord('kid', 2_000, { costUsd: 1024, lineage: 'root/' })])).rejects.toBeInstanceOf(StoreConflictError);
      await store.sessions.append(kid.sessionId, [], { updatedAt: 3_000, usage: [usageRecord('grand', 3_000, { costUsd: 16, lineage: 'root/kid/' })] });
      expect(committed).toBe(kidRevision + 1);
      // A killed child's call, and one a node of an older version wrote without a lineage: it counts for kid alone.
      await store.usage.record(usageRecord('dead', 3_000, { inputTokens: 32, outputTokens: 320, costUsd: 32, lineage: 'root/' }));
      await store.usage.record(usageRecord('kid', 3_000, { inputTokens: 64, outputTokens: 640, costUsd: 64 }));
      // Beside the family: other agents whose ids or lineages begin as root's do.
      await store.usage.record(usageRecord('other', 3_000, { costUsd: 128 }));
      await store.usage.record(usageRecord('near', 3_000, { costUsd: 256, lineage: 'root-a/' }));
      await store.usage.record(usageRecord('rootz', 3_000, { costUsd: 512 }));

      const families = [
        { agentId: 'grand', descendants: 'root/kid/grand/' },
        { agentId: 'root', descendants: 'root/' },
        { agentId: 'nobody', descendants: 'nobody/' },
        { agentId: 'kid', descendants: 'root/kid/' },
        { agentId: 'other', descendants: 'other/' },
      ];
      const totals = await store.usage.familyTotals(families);

      expect(totals).toEqual(await Promise.all(families.map((family) => store.usage.totals({ since: 0, ...family }))));
      expect(totals.map((total) => [total.calls, total.costUsd])).toEqual([
        [2, 4 + 16],
        [6, 1 + 2 + 4 + 8 + 16 + 32],
        [0, 0],
        [5, 2 + 4 + 8 + 16 + 64],
        [1, 128],
      ]);
      expect(totals[1]).toEqual({
        inputTokens: 1 + 2 + 4 + 8 + 100 + 32,
        outputTokens: 10 + 20 + 40 + 80 + 10 + 320,
        cacheReadTokens: 1,
        cacheWriteTokens: 3,
        costUsd: 63,
        calls: 6,
      });
      expect(await store.usage.familyTotals([])).toEqual([]);
    });

    it('usage.familyTotals() refuses a descendants that does not end with "/", naming the agents', async () => {
      await expect(
        store.usage.familyTotals([
          { agentId: 'kid', descendants: 'root/kid/' },
          { agentId: 'root', descendants: 'root' },
        ]),
      ).rejects.toThrow('cannot total usage of agents "kid", "root", each with its descendants: descendants must end with "/", got "root"');
    });

    it('usage.list() filters by since and agentId and stops at limit', async () => {
      for (const [agentId, at] of [
        ['a1', 1_000],
        ['a2', 2_000],
        ['a1', 3_000],
        ['a1', 4_000],
        ['a2', 5_000],
      ] as const) {
        await store.usage.record(usageRecord(agentId, at));
      }
      const ats = async (options: Parameters<Store['usage']['list']>[0]) => (await store.usage.list(options)).map((usage) => `${usage.agentId}@${usage.at}`);

      expect(await ats({ since: 3_000 })).toEqual(['a1@3000', 'a1@4000', 'a2@5000']);
      expect(await ats({ agentId: 'a1' })).toEqual(['a1@1000', 'a1@3000', 'a1@4000']);
      expect(await ats({ agentId: 'a1', since: 2_000, limit: 1 })).toEqual(['a1@3000']);
      expect(await ats({ limit: 2 })).toEqual(['a1@1000', 'a2@2000']);
      expect(await ats({ limit: 0 })).toEqual([]);
    });

    it('usage.series() adds records up per time bucket, agent and model, from since up to (not including) until', async () => {
      await store.usage.record(usageRecord('a1', 999, { model: 'm1' }));
      await store.usage.record(usageRecord('a1', 1_000, { model: 'm1', inputTokens: 1, outputTokens: 2, costUsd: 0.5 }));
      await store.usage.record(usageRecord('a1', 1_099, { model: 'm1', inputTokens: 10, outputTokens: 20, costUsd: 0.25 }));
      await store.usage.record(usageRecord('a1', 1_050, { model: 'm2', inputTokens: 3, outputTokens: 4, costUsd: 1 }));
      await store.usage.record(usageRecord('a2', 1_100, { model: 'm1', inputTokens: 5, outputTokens: 6, costUsd: 2 }));
      await store.usage.record(usageRecord('a1', 1_250, { model: 'm1', inputTokens: 7, outputTokens: 8, costUsd: 4 }));
      await store.usage.record(usageRecord('a1', 1_300, { model: 'm1' }));

      const all = await store.usage.series({ since: 1_000, until: 1_300, stepMs: 100 });
      expect(all.map(({ costUsd, ...rest }) => ({ ...rest, cost: Math.round(costUsd * 100) }))).toEqual([
        { start: 1_000, agentId: 'a1', model: 'm1', inputTokens: 11, outputTokens: 22, calls: 2, cost: 75 },
        { start: 1_000, agentId: 'a1', model: 'm2', inputTokens: 3, outputTokens: 4, calls: 1, cost: 100 },
        { start: 1_100, agentId: 'a2', model: 'm1', inputTokens: 5, outputTokens: 6, calls: 1, cost: 200 },
        { start: 1_200, agentId: 'a1', model: 'm1', inputTokens: 7, outputTokens: 8, calls: 1, cost: 400 },
      ]);
      expect((await store.usage.series({ since: 1_000, until: 1_300, stepMs: 100, agentId: 'a2' })).map((bucket) => bucket.start)).toEqual([1_100]);
      expect(await store.usage.series({ since: 5_000, until: 6_000, stepMs: 100 })).toEqual([]);
    });

    it('usage.series() refuses a step that is not a positive integer', async () => {
      await expect(store.usage.series({ since: 0, until: 1_000, stepMs: 0 })).rejects.toThrow(/stepMs must be a positive integer/);
    });
  });

  describe('events', () => {
    let store: Store;
    beforeEach(() => {
      store = context.store;
    });

    it('events.append() returns increasing sequence numbers, and list() returns the events in order', async () => {
      const first = await store.events.append({ at: 1_000, type: 'agent-spawn', agentId: 'a1', data: { name: 'x' } });
      const second = await store.events.append({ at: 1_000, type: 'kernel-start', agentId: null, data: {} });
      const third = await store.events.append({ at: 900, type: 'agent-kill', agentId: 'a1', data: { reason: 'done', n: [1] } });

      expect(second).toBeGreaterThan(first);
      expect(third).toBeGreaterThan(second);
      expect(await store.events.list()).toEqual([
        { seq: first, at: 1_000, type: 'agent-spawn', agentId: 'a1', data: { name: 'x' } },
        { seq: second, at: 1_000, type: 'kernel-start', agentId: null, data: {} },
        { seq: third, at: 900, type: 'agent-kill', agentId: 'a1', data: { reason: 'done', n: [1] } },
      ]);
    });

    it('events.list() filters by after, agentId and type, and stops at limit', async () => {
      const seqs: number[] = [];
      const seq = (index: number): number => seqs[index] ?? Number.NaN;
      for (const [type, agentId] of [
        ['agent-spawn', 'a1'],
        ['agent-spawn', 'a2'],
        ['tool-call', 'a1'],
        ['tool-call', null],
        ['agent-kill', 'a1'],
      ] as const) {
        seqs.push(await store.events.append({ at: 1_000, type, agentId, data: {} }));
      }
      const list = async (options: Parameters<Store['events']['list']>[0]) => (await store.events.list(options)).map((event) => seqs.indexOf(event.seq));

      expect(await list({ after: seq(1) })).toEqual([2, 3, 4]);
      expect(await list({ agentId: 'a1' })).toEqual([0, 2, 4]);
      expect(await list({ type: 'tool-call' })).toEqual([2, 3]);
      expect(await list({ agentId: 'a1', type: 'tool-call' })).toEqual([2]);
      expect(await list({ agentId: 'a1', after: seq(0), limit: 1 })).toEqual([2]);
      expect(await list({ limit: 2 })).toEqual([0, 1]);
      expect(await list({ after: seq(4) })).toEqual([]);
    });

    it('events.list() pages newest first with order "desc" and a before cursor, under the same filters', async () => {
      const seqs: number[] = [];
      const seq = (index: number): number => seqs[index] ?? Number.NaN;
      for (const [type, agentId] of [
        ['agent-spawn', 'a1'],
        ['turn-finish', 'a1'],
        ['tool-deny', 'a2'],
        ['turn-finish', 'a2'],
        ['tool-finish', 'a1'],
        ['turn-finish', 'a1'],
      ] as const) {
        seqs.push(await store.events.append({ at: 1_000 + seqs.length, type, agentId, data: {} }));
      }
      const list = async (options: Parameters<Store['events']['list']>[0]) => (await store.events.list(options)).map((event) => seqs.indexOf(event.seq));

      const first = await list({ order: 'desc', limit: 4 });
      expect(first).toEqual([5, 4, 3, 2]);
      const cursor = seq(first.at(-1) ?? 0);
      expect(await list({ order: 'desc', before: cursor, limit: 4 })).toEqual([1, 0]);
      expect(await list({ order: 'desc', before: seq(0) })).toEqual([]);
      expect(await list({ order: 'desc', agentId: 'a1', before: seq(5), limit: 2 })).toEqual([4, 1]);
      expect(await list({ order: 'desc', type: 'turn-finish', limit: 2 })).toEqual([5, 3]);
      expect(await list({ before: seq(3) })).toEqual([0, 1, 2]);
      expect(await list({ order: 'desc', after: seq(1), before: seq(5) })).toEqual([4, 3, 2]);
    });

    it('events.list() never returns an event without every event numbered below it, while appends run at once', async () => {
      const appends = Array.from({ length: 40 }, (_, index) => store.events.append({ at: index, type: 'tick', agentId: null, data: { index } }));
      const reads = Array.from({ length: 8 }, () => store.events.list());
      const seqs = (await Promise.all(appends)).sort((a, b) => a - b);

      // Each read saw a prefix of the log: a reader paging with `after` never skips one that commits later.
      for (const read of await Promise.all(reads)) {
        const seen = read.map((event) => event.seq);
        expect(seen).toEqual(seqs.slice(0, seen.length));
      }
      expect((await store.events.list()).map((event) => event.seq)).toEqual(seqs);
    });

    it('events.list() filters by a list of types, with or without an agent', async () => {
      const seqs: number[] = [];
      for (const [type, agentId] of [
        ['agent-spawn', 'a1'],
        ['turn-finish', 'a1'],
        ['tool-deny', 'a2'],
        ['tool-finish', 'a1'],
      ] as const) {
        seqs.push(await store.events.append({ at: 1_000, type, agentId, data: {} }));
      }
      const list = async (options: Parameters<Store['events']['list']>[0]) => (await store.events.list(options)).map((event) => seqs.indexOf(event.seq));

      expect(await list({ types: ['tool-deny', 'tool-finish'] })).toEqual([2, 3]);
      expect(await list({ types: ['tool-deny', 'tool-finish'], agentId: 'a1' })).toEqual([3]);
      expect(await list({ types: ['turn-finish', 'tool-finish'], order: 'desc', limit: 1 })).toEqual([3]);
      expect(await list({ types: [] })).toEqual([]);
      expect(await list({ types: ['tool-deny'], type: 'tool-finish' })).toEqual([]);
    });

    it("events.list() reads a row an earlier Loom wrote under a name since changed as today's, and finds it by today's name", async () => {
      // A node not yet upgraded writes to the shared store after the migration renamed the rows (decision 0072).
      const old = await store.events.append({ at: 1_000, type: 'tool-denied', agentId: 'a1', data: { tool: 'shell_exec' } });
      const current = await store.events.append({ at: 2_000, type: 'tool-deny', agentId: 'a1', data: { tool: 'file_write' } });
      await store.events.append({ at: 3_000, type: 'tool-finish', agentId: 'a1', data: {} });

      const seqsOf = (events: { seq: number; type: string }[]) => events.map((event) => [event.seq, event.type]);
      expect(seqsOf(await store.events.list({ type: 'tool-deny' }))).toEqual([
        [old, 'tool-deny'],
        [current, 'tool-deny'],
      ]);
      expect(seqsOf(await store.events.list({ types: ['tool-deny'], agentId: 'a1', order: 'desc' }))).toEqual([
        [current, 'tool-deny'],
        [old, 'tool-deny'],
      ]);
      expect(seqsOf(await store.events.list({ type: 'tool-deny', types: ['tool-finish'] }))).toEqual([]);
      expect((await store.events.list({ after: old - 1, limit: 1 }))[0]?.type).toBe('tool-deny');
    });
  });
}
