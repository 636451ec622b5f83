import { describe, expect, it } from 'vitest';
import type { ApprovalRecord } from '../../../src/contracts/index.ts';
import type { StoreContext } from './fixtures.ts';
import { pendingApprovalRecord } from '../../support/approval-record.ts';

const pending = (id: string, requestedAt: number): ApprovalRecord => pendingApprovalRecord(id, requestedAt);

/** The approvals part of the Store contract. */
export function describeApprovalsContract(context: StoreContext): void {
  const store = () => context.store;
  describe('approvals', () => {
    it('approvals.create() stores a pending approval that get() and list() return', async () => {
      await store().approvals.create(pending('p1', 1_000));
      expect(await store().approvals.get('p1')).toEqual(pending('p1', 1_000));
      expect(await store().approvals.list({ status: 'pending' })).toEqual([pending('p1', 1_000)]);
      expect(await store().approvals.get('nope')).toBeUndefined();
      // The node whose turn waits for it is kept.
      await store().approvals.create(pendingApprovalRecord('p2', 2_000, { nodeId: 'node-7' }));
      expect(await store().approvals.get('p2')).toMatchObject({ id: 'p2', nodeId: 'node-7' });
    });

    it('approvals.decide() decides a pending approval once, and never one already decided', async () => {
      await store().approvals.create(pending('p1', 1_000));
      expect(await store().approvals.decide('p1', { status: 'approved', at: 2_000, by: 'owner', reason: null })).toBe(true);
      expect(await store().approvals.decide('p1', { status: 'denied', at: 3_000, by: 'someone', reason: 'late' })).toBe(false);
      expect(await store().approvals.get('p1')).toMatchObject({ status: 'approved', decidedAt: 2_000, decidedBy: 'owner', reason: null });
      expect(await store().approvals.decide('missing', { status: 'denied', at: 1, by: 'x', reason: null })).toBe(false);
    });

    it('approvals.adopt() moves a pending approval to the node whose turn now waits for it, and no other', async () => {
      await store().approvals.create(pendingApprovalRecord('p1', 1_000, { nodeId: 'node-dead' }));
      expect(await store().approvals.adopt('p1', 'node-b')).toBe(true);
      expect(await store().approvals.get('p1')).toMatchObject({ status: 'pending', nodeId: 'node-b' });
      await store().approvals.decide('p1', { status: 'approved', at: 2_000, by: 'owner', reason: null });
      expect(await store().approvals.adopt('p1', 'node-c')).toBe(false);
      expect(await store().approvals.get('p1')).toMatchObject({ status: 'approved', nodeId: 'node-b' });
      expect(await store().approvals.adopt('missing', 'node-c')).toBe(false);
    });

    it('approvals.list() filters by status, oldest first, with a limit', async () => {
      await store().approvals.create(pending('late', 3_000));
      await store().approvals.create(pending('early', 1_000));
      await store().approvals.create(pending('middle', 2_000));
      await store().approvals.decide('middle', { status: 'expired', at: 5_000, by: 'timeout', reason: 'no decision in time' });
      expect((await store().approvals.list({ status: 'pending' })).map((record) => record.id)).toEqual(['early', 'late']);
      expect((await store().approvals.list()).map((record) => record.id)).toEqual(['early', 'middle', 'late']);
      expect((await store().approvals.list({ limit: 1 })).map((record) => record.id)).toEqual(['early']);
    });
  });
}
