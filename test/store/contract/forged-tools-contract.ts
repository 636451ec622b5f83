import { describe, expect, it } from 'vitest';
import type { ForgedToolRecord } from '../../../src/contracts/index.ts';
import type { StoreContext } from './fixtures.ts';

const tool = (id: string, changes: Partial<ForgedToolRecord> = {}): ForgedToolRecord => ({
  id,
  name: `tool_${id}`,
  agentId: 'a1',
  agentName: 'smith',
  sessionId: 's1',
  tier: 'session',
  status: 'active',
  statusReason: null,
  mode: 'sandbox',
  request: { name: `tool_${id}`, description: 'slugs — très bien', implementation: { mode: 'sandbox', allowlist: [] } },
  codeHash: 'ab'.repeat(32),
  sourcePersisted: false,
  verdicts: [{ role: 'creation', approved: true, confidence: 0.9, issues: [] }],
  stats: { calls: 0, successes: 0, totalMs: 0 },
  origin: 'forged',
  createdAt: 1_000,
  updatedAt: 1_000,
  ...changes,
});

/** The forged tools part of the Store contract. */
export function describeForgedToolsContract(context: StoreContext): void {
  describe('forgedTools', () => {
    it('stores a tool, reads it back exactly, replaces it, and lists by agent, tier and status, oldest first', async () => {
      await context.store.forgedTools.put(tool('t1'));
      await context.store.forgedTools.put(tool('t2', { agentId: 'a2', agentName: 'other', tier: 'shared', createdAt: 500 }));
      expect(await context.store.forgedTools.get('t1')).toEqual(tool('t1'));
      expect(await context.store.forgedTools.get('nope')).toBeUndefined();
      await context.store.forgedTools.put(tool('t1', { tier: 'agent', sessionId: null, updatedAt: 2_000 }));
      expect((await context.store.forgedTools.get('t1'))?.tier).toBe('agent');
      expect((await context.store.forgedTools.list()).map((record) => record.id)).toEqual(['t2', 't1']);
      expect((await context.store.forgedTools.list({ agentId: 'a1' })).map((record) => record.id)).toEqual(['t1']);
      expect((await context.store.forgedTools.list({ tier: 'shared' })).map((record) => record.id)).toEqual(['t2']);
      expect(await context.store.forgedTools.list({ status: 'retired' })).toEqual([]);
    });

    it('counts calls in the stats', async () => {
      await context.store.forgedTools.put(tool('t1'));
      await context.store.forgedTools.recordCall('t1', true, 1.5, 3_000);
      await context.store.forgedTools.recordCall('t1', false, 0.5, 4_000);
      expect(await context.store.forgedTools.get('t1')).toMatchObject({ stats: { calls: 2, successes: 1, totalMs: 2 }, updatedAt: 4_000 });
    });
  });
}
