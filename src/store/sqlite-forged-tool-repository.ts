import type { StatementSync } from 'node:sqlite';
import type { ForgedToolRecord, ForgedToolRepository, ForgedToolStatus, ForgedToolTier } from '../contracts/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { parseRow } from './rows.ts';
import type { SqliteRow } from './sqlite-rows.ts';
import { forgedToolColumns as columns, forgedToolRow, forgedToolValues } from './table-rows.ts';

/** `ForgedToolRepository` on SQLite (migration 9): one row per tool, its request and verdicts as JSON, its stats as columns. */
export class SqliteForgedToolRepository implements ForgedToolRepository {
  readonly #connection: SqliteConnection;
  readonly #put: StatementSync;
  readonly #get: StatementSync;
  readonly #list: StatementSync;
  readonly #call: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#put = db.prepare(
      `INSERT INTO forged_tools (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, agent_id = excluded.agent_id, tier = excluded.tier, status = excluded.status, data = excluded.data, calls = excluded.calls, successes = excluded.successes, total_ms = excluded.total_ms, updated_at = excluded.updated_at`,
    );
    this.#get = db.prepare(`SELECT ${columns} FROM forged_tools WHERE id = ?`);
    this.#list = db.prepare(
      `SELECT ${columns} FROM forged_tools WHERE (?1 IS NULL OR agent_id = ?1) AND (?2 IS NULL OR tier = ?2) AND (?3 IS NULL OR status = ?3) ORDER BY created_at, rowid`,
    );
    this.#call = db.prepare('UPDATE forged_tools SET calls = calls + 1, successes = successes + ?, total_ms = total_ms + ?, updated_at = ? WHERE id = ?');
  }

  put(record: ForgedToolRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        const [first, ...rest] = forgedToolValues(record);
        this.#put.run(first ?? null, ...rest);
      },
      () => ({ action: `store forged tool "${record.name}"` }),
    );
  }

  get(id: string): Promise<ForgedToolRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(id);
        return row === undefined ? undefined : parseForgedTool(row);
      },
      () => ({ action: `read forged tool "${id}"` }),
    );
  }

  list(filter: { agentId?: string; tier?: ForgedToolTier; status?: ForgedToolStatus } = {}): Promise<ForgedToolRecord[]> {
    return this.#connection.execute(
      () => this.#list.all(filter.agentId ?? null, filter.tier ?? null, filter.status ?? null).map(parseForgedTool),
      () => ({ action: 'list forged tools' }),
    );
  }

  recordCall(id: string, success: boolean, durationMs: number, at: number): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#call.run(success ? 1 : 0, durationMs, at, id);
      },
      () => ({ action: `count a call of forged tool "${id}"` }),
    );
  }
}

function parseForgedTool(row: SqliteRow): ForgedToolRecord {
  return parseRow(forgedToolRow, row, 'forged_tools', ['id']);
}
