import type { A2aPushConfigRecord, A2aPushConfigRepository } from '../contracts/index.ts';
import { type PostgresConnection, query } from './postgres-connection.ts';
import { parseRow, type Row } from './rows.ts';
import { a2aPushConfigColumns as columns, a2aPushConfigRow } from './table-rows.ts';

/** `A2aPushConfigRepository` on PostgreSQL (deleted with their task by the task repository). */
export class PostgresA2aPushConfigRepository implements A2aPushConfigRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  put(record: A2aPushConfigRecord): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(
          db,
          `INSERT INTO a2a_push_configs (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (task_id, id) DO UPDATE SET url = excluded.url, token = excluded.token, auth_scheme = excluded.auth_scheme,
             auth_credentials = excluded.auth_credentials, wire_version = excluded.wire_version, created_by = excluded.created_by`,
          [
            record.taskId,
            record.id,
            record.url,
            record.token,
            record.authentication?.scheme ?? null,
            record.authentication?.credentials ?? null,
            record.wireVersion,
            record.createdBy,
            record.createdAt,
          ],
        );
      },
      () => ({ action: `store push-notification config "${record.id}" of task "${record.taskId}"` }),
    );
  }

  get(taskId: string, id: string): Promise<A2aPushConfigRecord | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, `SELECT ${columns} FROM a2a_push_configs WHERE task_id = $1 AND id = $2`, [taskId, id])).rows;
        return row === undefined ? undefined : parseConfig(row);
      },
      () => ({ action: `read push-notification config "${id}" of task "${taskId}"` }),
    );
  }

  list(taskId: string): Promise<A2aPushConfigRecord[]> {
    return this.#connection.execute(
      async (db) => (await query(db, `SELECT ${columns} FROM a2a_push_configs WHERE task_id = $1 ORDER BY created_at, insert_order`, [taskId])).rows.map(parseConfig),
      () => ({ action: `list the push-notification configs of task "${taskId}"` }),
    );
  }

  delete(taskId: string, id: string): Promise<boolean> {
    return this.#connection.execute(
      async (db) => (await query(db, 'DELETE FROM a2a_push_configs WHERE task_id = $1 AND id = $2', [taskId, id])).changed > 0,
      () => ({ action: `delete push-notification config "${id}" of task "${taskId}"` }),
    );
  }
}

function parseConfig(row: Row): A2aPushConfigRecord {
  return parseRow(a2aPushConfigRow, row, 'a2a_push_configs', ['task_id', 'id']);
}
