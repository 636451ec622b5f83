import { z } from 'zod';
import type { ApprovalRecord, ApprovalRepository, ApprovalStatus } from '../../contracts/index.ts';
import { jsonText, parseRow, type Row } from '../rows.ts';
import type { Database } from '../sql/database.ts';
import { insert, raw, sql, where } from '../sql/statement.ts';

const columns = 'id, agent_id, agent_name, tool, input, status, requested_at, expires_at, decided_at, decided_by, reason, node_id';
const select = raw(`SELECT ${columns} FROM approvals`);

/** A row of `approvals`. */
const approvalRow = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    agent_name: z.string(),
    tool: z.string(),
    input: jsonText,
    status: z.enum(['pending', 'approved', 'denied', 'expired']),
    requested_at: z.number(),
    expires_at: z.number(),
    decided_at: z.number().nullable(),
    decided_by: z.string().nullable(),
    reason: z.string().nullable(),
    node_id: z.string().nullable(),
  })
  .transform((row): ApprovalRecord => ({
    id: row.id,
    agentId: row.agent_id,
    agentName: row.agent_name,
    tool: row.tool,
    input: row.input,
    status: row.status,
    requestedAt: row.requested_at,
    expiresAt: row.expires_at,
    decidedAt: row.decided_at,
    decidedBy: row.decided_by,
    reason: row.reason,
    nodeId: row.node_id,
  }));

/** `ApprovalRepository` on either database. */
export class SqlApprovalRepository implements ApprovalRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async create(record: ApprovalRecord): Promise<void> {
    const { id, agentId, agentName, tool, input, status, requestedAt, expiresAt, decidedAt, decidedBy, reason, nodeId } = record;
    await this.#db.run(
      insert('approvals', columns, [id, agentId, agentName, tool, JSON.stringify(input), status, requestedAt, expiresAt, decidedAt, decidedBy, reason, nodeId]),
      () => ({
        action: `store approval "${record.id}"`,
      }),
    );
  }

  async get(id: string): Promise<ApprovalRecord | undefined> {
    const row = await this.#db.one(sql`${select} WHERE id = ${id}`, () => ({ action: `get approval "${id}"` }));
    return row === undefined ? undefined : parseApproval(row);
  }

  async list(options: { status?: ApprovalStatus; limit?: number } = {}): Promise<ApprovalRecord[]> {
    const action = 'list approvals';
    const filter = where(options.status === undefined ? [] : [sql`status = ${options.status}`]);
    const rows = await this.#db.all(
      sql`${select} ${filter} ORDER BY requested_at, ${this.#db.insertOrder} LIMIT ${this.#db.limit(options.limit, action)}`,
      () => ({ action }),
    );
    return rows.map(parseApproval);
  }

  async decide(id: string, decision: { status: Exclude<ApprovalStatus, 'pending'>; at: number; by: string; reason: string | null }): Promise<boolean> {
    const statement = sql`UPDATE approvals SET status = ${decision.status}, decided_at = ${decision.at}, decided_by = ${decision.by}, reason = ${decision.reason} WHERE id = ${id} AND status = 'pending'`;
    return (await this.#db.run(statement, () => ({ action: `decide approval "${id}"` }))) === 1;
  }

  async adopt(id: string, nodeId: string | null): Promise<boolean> {
    const statement = sql`UPDATE approvals SET node_id = ${nodeId} WHERE id = ${id} AND status = 'pending'`;
    return (await this.#db.run(statement, () => ({ action: `move approval "${id}" to node ${nodeId ?? '(none)'}` }))) === 1;
  }
}

function parseApproval(row: Row): ApprovalRecord {
  return parseRow(approvalRow, row, 'approvals', ['id']);
}
