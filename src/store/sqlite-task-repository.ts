import type { StatementSync } from 'node:sqlite';
import type { TaskQuery as A2aTaskQuery, TaskRecord as A2aTaskRecord, TaskRepository as A2aTaskRepository } from '../contracts/index.ts';
import { parseRow } from './rows.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import type { SqliteRow } from './sqlite-rows.ts';
import { taskColumns as columns, taskRow } from './table-rows.ts';

function toRecord(row: SqliteRow): A2aTaskRecord {
  return parseRow(taskRow, row, 'tasks', ['id']);
}

/** The `tasks` domain on SQLite (migration 5). */
export class SqliteTaskRepository implements A2aTaskRepository {
  readonly #connection: SqliteConnection;
  readonly #get: StatementSync;
  readonly #put: StatementSync;
  readonly #delete: StatementSync;
  readonly #count: StatementSync;
  readonly #oldestFinished: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#get = db.prepare(`SELECT ${columns} FROM tasks WHERE id = ?`);
    this.#put = db.prepare(
      `INSERT INTO tasks (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET context_id = excluded.context_id, agent = excluded.agent, state = excluded.state,
         finished = excluded.finished, task = excluded.task, updated_at = excluded.updated_at`,
    );
    this.#delete = db.prepare('DELETE FROM tasks WHERE id = ?');
    this.#count = db.prepare('SELECT COUNT(*) AS n FROM tasks');
    this.#oldestFinished = db.prepare('SELECT id FROM tasks WHERE finished = 1 ORDER BY created_at, rowid LIMIT 1');
  }

  get(id: string): Promise<A2aTaskRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(id);
        return row === undefined ? undefined : toRecord(row);
      },
      () => ({ action: `read task "${id}"` }),
    );
  }

  put(record: A2aTaskRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#put.run(record.id, record.contextId, record.agent, record.state, record.finished ? 1 : 0, JSON.stringify(record.task), record.createdAt, record.updatedAt);
      },
      () => ({ action: `store task "${record.id}"` }),
    );
  }

  delete(id: string): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#delete.run(id);
      },
      () => ({ action: `delete task "${id}"` }),
    );
  }

  count(): Promise<number> {
    return this.#connection.execute(() => Number((this.#count.get() as { n: number }).n), () => ({ action: 'count tasks' }));
  }

  oldestFinished(): Promise<string | undefined> {
    return this.#connection.execute(() => (this.#oldestFinished.get() as { id: string } | undefined)?.id, () => ({ action: 'find the oldest finished task' }));
  }

  list(query: A2aTaskQuery): Promise<{ records: A2aTaskRecord[]; total: number }> {
    return this.#connection.execute(
      () => {
        const where: string[] = [];
        const values: (string | number)[] = [];
        if (query.contextId !== undefined) {
          where.push('context_id = ?');
          values.push(query.contextId);
        }
        if (query.state !== undefined) {
          where.push('state = ?');
          values.push(query.state);
        }
        if (query.updatedAfter !== undefined) {
          where.push('updated_at >= ?');
          values.push(query.updatedAfter);
        }
        const clause = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
        const { db } = this.#connection;
        const total = Number((db.prepare(`SELECT COUNT(*) AS n FROM tasks ${clause}`).get(...values) as { n: number }).n);
        const rows = db.prepare(`SELECT ${columns} FROM tasks ${clause} ORDER BY updated_at DESC, rowid DESC LIMIT ? OFFSET ?`).all(...values, query.limit, query.offset);
        return { records: rows.map(toRecord), total };
      },
      () => ({ action: 'list tasks' }),
    );
  }
}
