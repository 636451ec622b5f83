import type { ApprovalRecord, ApprovalRepository, ApprovalStatus } from '../contracts/index.ts';
import { type PostgresConnection, query } from './postgres-connection.ts';
import { checkLimit, parseRow, type Row } from './rows.ts';
import { approvalColumns as columns, approvalRow, approvalValues } from './table-rows.ts';

/** `ApprovalRepository` on PostgreSQL. */
export class PostgresApprovalRepository implements ApprovalRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  create(record: ApprovalRecord): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(db, `INSERT INTO approvals (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`, approvalValues(record));
      },
      () => ({ action: `store approval "${record.id}"` }),
    );
  }

  get(id: string): Promise<ApprovalRecord | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, `SELECT ${columns} FROM approvals WHERE id = $1`, [id])).rows;
        return row === undefined ? undefined : parseApproval(row);
      },
      () => ({ action: `get approval "${id}"` }),
    );
  }

  list(options: { status?: ApprovalStatus; limit?: number } = {}): Promise<ApprovalRecord[]> {
    return this.#connection.execute(
      async (db) => {
        const limit = checkLimit(options.limit, 'list approvals') ?? null;
        const { rows } =
          options.status === undefined
            ? await query(db, `SELECT ${columns} FROM approvals ORDER BY requested_at, insert_order LIMIT $1`, [limit])
            : await query(db, `SELECT ${columns} FROM approvals WHERE status = $1 ORDER BY requested_at, insert_order LIMIT $2`, [options.status, limit]);
        return rows.map(parseApproval);
      },
      () => ({ action: 'list approvals' }),
    );
  }

  decide(id: string, decision: { status: Exclude<ApprovalStatus, 'pending'>; at: number; by: string; reason: string | null }): Promise<boolean> {
    return this.#connection.execute(
      async (db) =>
        (await query(db, "UPDATE approvals SET status = $1, decided_at = $2, decided_by = $3, reason = $4 WHERE id = $5 AND status = 'pending'", [decision.status, decision.at, decision.by, decision.reason, id])).changed === 1,
      () => ({ action: `decide approval "${id}"` }),
    );
  }
}

function parseApproval(row: Row): ApprovalRecord {
  return parseRow(approvalRow, row, 'approvals', ['id']);
}
