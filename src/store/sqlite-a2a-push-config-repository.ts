import type { StatementSync } from 'node:sqlite';
import type { A2aPushConfigRecord, A2aPushConfigRepository } from '../contracts/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { parseRow } from './rows.ts';
import type { SqliteRow } from './sqlite-rows.ts';
import { a2aPushConfigColumns as columns, a2aPushConfigRow as configRow } from './table-rows.ts';

function toRecord(row: SqliteRow): A2aPushConfigRecord {
  return parseRow(configRow, row, 'a2a_push_configs', ['task_id', 'id']);
}

/** `A2aPushConfigRepository` on SQLite (migration 11). */
export class SqliteA2aPushConfigRepository implements A2aPushConfigRepository {
  readonly #connection: SqliteConnection;
  readonly #put: StatementSync;
  readonly #get: StatementSync;
  readonly #list: StatementSync;
  readonly #delete: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#put = db.prepare(
      `INSERT INTO a2a_push_configs (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (task_id, id) DO UPDATE SET url = excluded.url, token = excluded.token, auth_scheme = excluded.auth_scheme,
         auth_credentials = excluded.auth_credentials, wire_version = excluded.wire_version, created_by = excluded.created_by`,
    );
    this.#get = db.prepare(`SELECT ${columns} FROM a2a_push_configs WHERE task_id = ? AND id = ?`);
    this.#list = db.prepare(`SELECT ${columns} FROM a2a_push_configs WHERE task_id = ? ORDER BY created_at, rowid`);
    this.#delete = db.prepare('DELETE FROM a2a_push_configs WHERE task_id = ? AND id = ?');
  }

  put(record: A2aPushConfigRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#put.run(
          record.taskId,
          record.id,
          record.url,
          record.token,
          record.authentication?.scheme ?? null,
          record.authentication?.credentials ?? null,
          record.wireVersion,
          record.createdBy,
          record.createdAt,
        );
      },
      () => ({ action: `store push-notification config "${record.id}" of task "${record.taskId}"` }),
    );
  }

  get(taskId: string, id: string): Promise<A2aPushConfigRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(taskId, id);
        return row === undefined ? undefined : toRecord(row);
      },
      () => ({ action: `read push-notification config "${id}" of task "${taskId}"` }),
    );
  }

  list(taskId: string): Promise<A2aPushConfigRecord[]> {
    return this.#connection.execute(
      () => this.#list.all(taskId).map(toRecord),
      () => ({ action: `list the push-notification configs of task "${taskId}"` }),
    );
  }

  delete(taskId: string, id: string): Promise<boolean> {
    return this.#connection.execute(
      () => Number(this.#delete.run(taskId, id).changes) > 0,
      () => ({ action: `delete push-notification config "${id}" of task "${taskId}"` }),
    );
  }
}
