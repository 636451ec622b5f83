import type { ApprovalRecord } from '../../src/contracts/index.ts';

/**
 * A pending approval request as the store holds it (a `file_write` of `notes.txt` by `writer`,
 * expiring five minutes after `requestedAt`), with `changes` laid over it: what a process that is
 * gone leaves behind, for tests of the store and of the approvals around it.
 */
export function pendingApprovalRecord(id: string, requestedAt: number, changes: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return {
    id,
    agentId: 'a1',
    agentName: 'writer',
    tool: 'file_write',
    input: { path: 'notes.txt', content: 'x' },
    status: 'pending',
    requestedAt,
    expiresAt: requestedAt + 300_000,
    decidedAt: null,
    decidedBy: null,
    reason: null,
    nodeId: null,
    ...changes,
  };
}
