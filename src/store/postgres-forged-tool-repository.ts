import type { ForgedToolRecord, ForgedToolRepository, ForgedToolStatus, ForgedToolTier } from '../contracts/index.ts';
import { type Parameter, type PostgresConnection, query } from './postgres-connection.ts';
import { parseRow, type Row } from './rows.ts';
import { forgedToolColumns as columns, forgedToolRow, forgedToolValues } from './table-rows.ts';

/** `ForgedToolRepository` on PostgreSQL: one row per tool, its request and verdicts as JSON text, its stats as columns. */
export class PostgresForgedToolRepository implements ForgedToolRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  put(record: ForgedToolRecord): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(
          db,
          `INSERT INTO forged_tools (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
           ON CONFLICT (id) DO UPDATE SET name = excluded.name, agent_id = excluded.agent_id, tier = excluded.tier, status = excluded.status, data = excluded.data,
             calls = excluded.calls, successes = excluded.successes, total_ms = excluded.total_ms, updated_at = excluded.updated_at`,
          forgedToolValues(record),
        );
      },
      () => ({ action: `store forged tool "${record.name}"` }),
    );
  }

  get(id: string): Promise<ForgedToolRecord | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, `SELECT ${columns} FROM forged_tools WHERE id = $1`, [id])).rows;
        return row === undefined ? undefined : parseForgedTool(row);
      },
      () => ({ action: `read forged tool "${id}"` }),
    );
  }

  list(filter: { agentId?: string; tier?: ForgedToolTier; status?: ForgedToolStatus } = {}): Promise<ForgedToolRecord[]> {
    return this.#connection.execute(
      async (db) => {
        const where: string[] = [];
        const values: Parameter[] = [];
        if (filter.agentId !== undefined) where.push(`agent_id = $${values.push(filter.agentId)}`);
        if (filter.tier !== undefined) where.push(`tier = $${values.push(filter.tier)}`);
        if (filter.status !== undefined) where.push(`status = $${values.push(filter.status)}`);
        const clause = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
        return (await query(db, `SELECT ${columns} FROM forged_tools ${clause} ORDER BY created_at, insert_order`, values)).rows.map(parseForgedTool);
      },
      () => ({ action: 'list forged tools' }),
    );
  }

  recordCall(id: string, success: boolean, durationMs: number, at: number): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(db, 'UPDATE forged_tools SET calls = calls + 1, successes = successes + $1, total_ms = total_ms + $2, updated_at = $3 WHERE id = $4', [success ? 1 : 0, durationMs, at, id]);
      },
      () => ({ action: `count a call of forged tool "${id}"` }),
    );
  }
}

function parseForgedTool(row: Row): ForgedToolRecord {
  return parseRow(forgedToolRow, row, 'forged_tools', ['id']);
}
