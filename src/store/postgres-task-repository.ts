import type { TaskQuery, TaskRecord, TaskRepository } from '../contracts/index.ts';
import { type Parameter, type PostgresConnection, query } from './postgres-connection.ts';
import { parseRow, type Row } from './rows.ts';
import { taskColumns as columns, taskRow } from './table-rows.ts';

/** The `tasks` domain (A2A tasks) on PostgreSQL. */
export class PostgresTaskRepository implements TaskRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  get(id: string): Promise<TaskRecord | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, `SELECT ${columns} FROM tasks WHERE id = $1`, [id])).rows;
        return row === undefined ? undefined : parseTask(row);
      },
      () => ({ action: `read task "${id}"` }),
    );
  }

  put(record: TaskRecord): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(
          db,
          `INSERT INTO tasks (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
           ON CONFLICT (id) DO UPDATE SET context_id = excluded.context_id, agent = excluded.agent, state = excluded.state,
             finished = excluded.finished, task = excluded.task, updated_at = excluded.updated_at`,
          [record.id, record.contextId, record.agent, record.state, record.finished, JSON.stringify(record.task), record.createdAt, record.updatedAt],
        );
      },
      () => ({ action: `store task "${record.id}"` }),
    );
  }

  delete(id: string): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        // The task's push-notification configs go with it, in the same statement (an evicted task notifies no one).
        await query(db, 'WITH gone AS (DELETE FROM tasks WHERE id = $1 RETURNING id) DELETE FROM a2a_push_configs WHERE task_id IN (SELECT id FROM gone)', [id]);
      },
      () => ({ action: `delete task "${id}"` }),
    );
  }

  count(): Promise<number> {
    return this.#connection.execute(
      async (db) => Number((await query(db, 'SELECT count(*) AS n FROM tasks')).rows[0]?.['n'] ?? 0),
      () => ({ action: 'count tasks' }),
    );
  }

  oldestFinished(): Promise<string | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, 'SELECT id FROM tasks WHERE finished ORDER BY created_at, insert_order LIMIT 1')).rows;
        return typeof row?.['id'] === 'string' ? row['id'] : undefined;
      },
      () => ({ action: 'find the oldest finished task' }),
    );
  }

  list(taskQuery: TaskQuery): Promise<{ records: TaskRecord[]; total: number }> {
    return this.#connection.execute(
      async (db) => {
        const where: string[] = [];
        const values: Parameter[] = [];
        if (taskQuery.contextId !== undefined) where.push(`context_id = $${values.push(taskQuery.contextId)}`);
        if (taskQuery.state !== undefined) where.push(`state = $${values.push(taskQuery.state)}`);
        if (taskQuery.updatedAfter !== undefined) where.push(`updated_at >= $${values.push(taskQuery.updatedAfter)}`);
        const clause = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
        const total = Number((await query(db, `SELECT count(*) AS n FROM tasks ${clause}`, values)).rows[0]?.['n'] ?? 0);
        const page = `SELECT ${columns} FROM tasks ${clause} ORDER BY updated_at DESC, insert_order DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}`;
        const { rows } = await query(db, page, [...values, taskQuery.limit, taskQuery.offset]);
        return { records: rows.map(parseTask), total };
      },
      () => ({ action: 'list tasks' }),
    );
  }
}

function parseTask(row: Row): TaskRecord {
  return parseRow(taskRow, row, 'tasks', ['id']);
}
