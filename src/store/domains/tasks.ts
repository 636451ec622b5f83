import { z } from 'zod';
import type { TaskQuery, TaskRecord, TaskRepository } from '../../contracts/index.ts';
import { flag, jsonText, parseRow, type Row } from '../rows.ts';
import type { Database, Work } from '../sql/database.ts';
import { insert, raw, type Sql, sql, where } from '../sql/statement.ts';

const columns = 'id, context_id, agent, state, finished, task, created_at, updated_at';

/** A row of `tasks` (A2A tasks). */
const taskRow = z
  .object({
    id: z.string(),
    context_id: z.string(),
    agent: z.string(),
    state: z.string(),
    finished: flag,
    task: jsonText,
    created_at: z.number(),
    updated_at: z.number(),
  })
  .transform((row): TaskRecord => ({
    id: row.id,
    contextId: row.context_id,
    agent: row.agent,
    state: row.state,
    finished: row.finished,
    task: row.task,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }));

/** The `tasks` domain (A2A tasks) on either database. */
export class SqlTaskRepository implements TaskRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async get(id: string): Promise<TaskRecord | undefined> {
    const row = await this.#db.one(sql`SELECT ${raw(columns)} FROM tasks WHERE id = ${id}`, () => ({ action: `read task "${id}"` }));
    return row === undefined ? undefined : parseTask(row);
  }

  async put(record: TaskRecord): Promise<void> {
    const values = [record.id, record.contextId, record.agent, record.state, record.finished, JSON.stringify(record.task), record.createdAt, record.updatedAt];
    // created_at stays that of the first put.
    const update = ['context_id', 'agent', 'state', 'finished', 'task', 'updated_at'];
    await this.#db.run(insert('tasks', columns, values, { key: 'id', update }), () => ({ action: `store task "${record.id}"` }));
  }

  delete(id: string): Promise<void> {
    // The task's push-notification configs go with it (an evicted task notifies no one).
    return this.#db.transaction(
      function* (): Work<void> {
        yield sql`DELETE FROM a2a_push_configs WHERE task_id = ${id}`;
        yield sql`DELETE FROM tasks WHERE id = ${id}`;
      },
      () => ({ action: `delete task "${id}"` }),
    );
  }

  async count(): Promise<number> {
    const row = await this.#db.one(sql`SELECT count(*) AS n FROM tasks`, () => ({ action: 'count tasks' }));
    return Number(row?.['n'] ?? 0);
  }

  async oldestFinished(): Promise<string | undefined> {
    const row = await this.#db.one(sql`SELECT id FROM tasks WHERE finished = ${true} ORDER BY created_at, ${this.#db.insertOrder} LIMIT 1`, () => ({
      action: 'find the oldest finished task',
    }));
    return typeof row?.['id'] === 'string' ? row['id'] : undefined;
  }

  list(query: TaskQuery): Promise<{ records: TaskRecord[]; total: number }> {
    const conditions: Sql[] = [];
    if (query.agent !== undefined) conditions.push(sql`agent = ${query.agent}`);
    if (query.contextId !== undefined) conditions.push(sql`context_id = ${query.contextId}`);
    if (query.state !== undefined) conditions.push(sql`state = ${query.state}`);
    if (query.updatedAfter !== undefined) conditions.push(sql`updated_at >= ${query.updatedAfter}`);
    const clause = where(conditions);
    const order = this.#db.insertOrder;
    return this.#db.steps(
      function* (): Work<{ records: TaskRecord[]; total: number }> {
        const counted = yield sql`SELECT count(*) AS n FROM tasks ${clause}`;
        const page = yield sql`SELECT ${raw(columns)} FROM tasks ${clause} ORDER BY updated_at DESC, ${order} DESC LIMIT ${query.limit} OFFSET ${query.offset}`;
        return { records: page.rows.map(parseTask), total: Number(counted.rows[0]?.['n'] ?? 0) };
      },
      () => ({ action: 'list tasks' }),
    );
  }
}

function parseTask(row: Row): TaskRecord {
  return parseRow(taskRow, row, 'tasks', ['id']);
}
