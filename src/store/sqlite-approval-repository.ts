import type { StatementSync } from 'node:sqlite';
import type { ApprovalRecord, ApprovalRepository, ApprovalStatus } from '../contracts/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { parseRow } from './rows.ts';
import { limitParameter, type SqliteRow } from './sqlite-rows.ts';
import { approvalColumns as columns, approvalRow, approvalValues } from './table-rows.ts';

/** `ApprovalRepository` on SQLite. */
export class SqliteApprovalRepository implements ApprovalRepository {
  readonly #connection: SqliteConnection;
  readonly #create: StatementSync;
  readonly #get: StatementSync;
  readonly #listAll: StatementSync;
  readonly #listByStatus: StatementSync;
  readonly #decide: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#create = db.prepare(`INSERT INTO approvals (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.#get = db.prepare(`SELECT ${columns} FROM approvals WHERE id = ?`);
    this.#listAll = db.prepare(`SELECT ${columns} FROM approvals ORDER BY requested_at, rowid LIMIT ?`);
    this.#listByStatus = db.prepare(`SELECT ${columns} FROM approvals WHERE status = ? ORDER BY requested_at, rowid LIMIT ?`);
    this.#decide = db.prepare(`UPDATE approvals SET status = ?, decided_at = ?, decided_by = ?, reason = ? WHERE id = ? AND status = 'pending'`);
  }

  create(record: ApprovalRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#create.run(...approvalValues(record));
      },
      () => ({ action: `store approval "${record.id}"` }),
    );
  }

  get(id: string): Promise<ApprovalRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(id);
        return row === undefined ? undefined : parseApproval(row);
      },
      () => ({ action: `get approval "${id}"` }),
    );
  }

  list(options: { status?: ApprovalStatus; limit?: number } = {}): Promise<ApprovalRecord[]> {
    return this.#connection.execute(
      () => {
        const limit = limitParameter(options.limit, 'list approvals');
        const rows = options.status === undefined ? this.#listAll.all(limit) : this.#listByStatus.all(options.status, limit);
        return rows.map((row) => parseApproval(row));
      },
      () => ({ action: 'list approvals' }),
    );
  }

  decide(id: string, decision: { status: Exclude<ApprovalStatus, 'pending'>; at: number; by: string; reason: string | null }): Promise<boolean> {
    return this.#connection.execute(
      () => Number(this.#decide.run(decision.status, decision.at, decision.by, decision.reason, id).changes) === 1,
      () => ({ action: `decide approval "${id}"` }),
    );
  }
}

function parseApproval(row: SqliteRow): ApprovalRecord {
  return parseRow(approvalRow, row, 'approvals', ['id']);
}
