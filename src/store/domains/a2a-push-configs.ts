import { z } from 'zod';
import type { A2aPushConfigRecord, A2aPushConfigRepository } from '../../contracts/index.ts';
import { parseRow, type Row } from '../rows.ts';
import type { Database } from '../sql/database.ts';
import { insert, raw, sql } from '../sql/statement.ts';

const columns = 'task_id, id, url, token, auth_scheme, auth_credentials, wire_version, created_by, created_at';
const select = raw(`SELECT ${columns} FROM a2a_push_configs`);

/** A row of `a2a_push_configs`. */
const a2aPushConfigRow = z
  .object({
    task_id: z.string(),
    id: z.string(),
    url: z.string(),
    token: z.string().nullable(),
    auth_scheme: z.string().nullable(),
    auth_credentials: z.string().nullable(),
    wire_version: z.string(),
    created_by: z.string(),
    created_at: z.number(),
  })
  .transform((row): A2aPushConfigRecord => ({
    taskId: row.task_id,
    id: row.id,
    url: row.url,
    token: row.token,
    authentication: row.auth_scheme === null ? null : { scheme: row.auth_scheme, credentials: row.auth_credentials ?? '' },
    wireVersion: row.wire_version,
    createdBy: row.created_by,
    createdAt: row.created_at,
  }));

/** `A2aPushConfigRepository` on either database (deleted with their task by the task repository). */
export class SqlA2aPushConfigRepository implements A2aPushConfigRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async put(record: A2aPushConfigRecord): Promise<void> {
    const values = [
      record.taskId,
      record.id,
      record.url,
      record.token,
      record.authentication?.scheme ?? null,
      record.authentication?.credentials ?? null,
      record.wireVersion,
      record.createdBy,
      record.createdAt,
    ];
    // created_at stays that of the first put.
    const update = ['url', 'token', 'auth_scheme', 'auth_credentials', 'wire_version', 'created_by'];
    await this.#db.run(insert('a2a_push_configs', columns, values, { key: 'task_id, id', update }), () => ({
      action: `store push-notification config "${record.id}" of task "${record.taskId}"`,
    }));
  }

  async get(taskId: string, id: string): Promise<A2aPushConfigRecord | undefined> {
    const row = await this.#db.one(sql`${select} WHERE task_id = ${taskId} AND id = ${id}`, () => ({
      action: `read push-notification config "${id}" of task "${taskId}"`,
    }));
    return row === undefined ? undefined : parseConfig(row);
  }

  async list(taskId: string): Promise<A2aPushConfigRecord[]> {
    const rows = await this.#db.all(sql`${select} WHERE task_id = ${taskId} ORDER BY created_at, ${this.#db.insertOrder}`, () => ({
      action: `list the push-notification configs of task "${taskId}"`,
    }));
    return rows.map(parseConfig);
  }

  async delete(taskId: string, id: string): Promise<boolean> {
    return (
      (await this.#db.run(sql`DELETE FROM a2a_push_configs WHERE task_id = ${taskId} AND id = ${id}`, () => ({
        action: `delete push-notification config "${id}" of task "${taskId}"`,
      }))) > 0
    );
  }
}

function parseConfig(row: Row): A2aPushConfigRecord {
  return parseRow(a2aPushConfigRow, row, 'a2a_push_configs', ['task_id', 'id']);
}
