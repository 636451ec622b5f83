import type { StatementSync } from 'node:sqlite';
import { z } from 'zod';
import type { ActivityRunRecord, PackageRunRecord, PackageRunRepository } from '../contracts/index.ts';
import { StoreNotFoundError } from '../errors/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { jsonObjectText, jsonText, limitParameter, parseRow, type SqliteRow } from './sqlite-rows.ts';

const activityRecord = z.object({
  id: z.string(),
  status: z.enum(['pending', 'running', 'completed', 'failed', 'skipped']),
  attempts: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  costUsd: z.number(),
  output: z.string().nullable(),
  error: z.string().nullable(),
  fallback: z.string().nullable(),
  startedAt: z.number().nullable(),
  endedAt: z.number().nullable(),
}) satisfies z.ZodType<ActivityRunRecord>;

const runRow = z
  .object({
    id: z.string(),
    package: z.string(),
    binding: z.string(),
    trigger: z.string(),
    status: z.enum(['running', 'completed', 'aborted', 'interrupted', 'skipped', 'missed']),
    inputs: jsonObjectText,
    activities: jsonText.pipe(z.array(activityRecord)),
    emitted: z.string().nullable(),
    error: z.string().nullable(),
    started_at: z.number(),
    ended_at: z.number().nullable(),
  })
  .transform(
    (row): PackageRunRecord => ({
      id: row.id,
      package: row.package,
      binding: row.binding,
      trigger: row.trigger,
      status: row.status,
      inputs: row.inputs,
      activities: row.activities,
      emitted: row.emitted,
      error: row.error,
      startedAt: row.started_at,
      endedAt: row.ended_at,
    }),
  );

const columns = 'id, package, binding, trigger, status, inputs, activities, emitted, error, started_at, ended_at';

/** `PackageRunRepository` on SQLite (migration 6): one row per run, its activities as JSON. */
export class SqlitePackageRunRepository implements PackageRunRepository {
  readonly #connection: SqliteConnection;
  readonly #create: StatementSync;
  readonly #update: StatementSync;
  readonly #get: StatementSync;
  readonly #running: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#create = db.prepare(`INSERT INTO package_runs (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.#update = db.prepare(
      'UPDATE package_runs SET package = ?, binding = ?, trigger = ?, status = ?, inputs = ?, activities = ?, emitted = ?, error = ?, started_at = ?, ended_at = ? WHERE id = ?',
    );
    this.#get = db.prepare(`SELECT ${columns} FROM package_runs WHERE id = ?`);
    this.#running = db.prepare(`SELECT ${columns} FROM package_runs WHERE status = 'running' ORDER BY started_at, rowid`);
  }

  create(record: PackageRunRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#create.run(record.id, ...this.#values(record));
      },
      () => ({ action: `store package run "${record.id}"` }),
    );
  }

  update(record: PackageRunRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        const [first, ...rest] = this.#values(record);
        const result = this.#update.run(first, ...rest, record.id);
        if (Number(result.changes) === 0) throw new StoreNotFoundError(`cannot update package run "${record.id}": there is no such run`);
      },
      () => ({ action: `update package run "${record.id}"` }),
    );
  }

  get(id: string): Promise<PackageRunRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(id);
        return row === undefined ? undefined : parseRun(row);
      },
      () => ({ action: `read package run "${id}"` }),
    );
  }

  list(query: { package?: string; binding?: string; limit?: number } = {}): Promise<PackageRunRecord[]> {
    return this.#connection.execute(
      () => {
        const where: string[] = [];
        const values: string[] = [];
        if (query.package !== undefined) {
          where.push('package = ?');
          values.push(query.package);
        }
        if (query.binding !== undefined) {
          where.push('binding = ?');
          values.push(query.binding);
        }
        const clause = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
        const limit = limitParameter(query.limit ?? 100, 'list package runs');
        const rows = this.#connection.db.prepare(`SELECT ${columns} FROM package_runs ${clause} ORDER BY started_at DESC, rowid DESC LIMIT ?`).all(...values, limit);
        return rows.map(parseRun);
      },
      () => ({ action: 'list package runs' }),
    );
  }

  interruptRunning(at: number, error: string): Promise<PackageRunRecord[]> {
    return this.#connection.execute(
      () =>
        this.#connection.transaction(() => {
          const changed = this.#running.all().map(parseRun).map(
            (run): PackageRunRecord => ({
              ...run,
              status: 'interrupted',
              error,
              endedAt: at,
              activities: run.activities.map((activity) => (activity.status === 'running' ? { ...activity, status: 'failed', error, endedAt: at } : activity)),
            }),
          );
          for (const run of changed) {
            const [first, ...rest] = this.#values(run);
            this.#update.run(first, ...rest, run.id);
          }
          return changed;
        }),
      () => ({ action: 'mark interrupted package runs' }),
    );
  }

  #values(record: PackageRunRecord): [string, string, string, string, string, string, string | null, string | null, number, number | null] {
    return [
      record.package,
      record.binding,
      record.trigger,
      record.status,
      JSON.stringify(record.inputs),
      JSON.stringify(record.activities),
      record.emitted,
      record.error,
      record.startedAt,
      record.endedAt,
    ];
  }
}

function parseRun(row: SqliteRow): PackageRunRecord {
  return parseRow(runRow, row, 'package_runs', ['id']);
}
