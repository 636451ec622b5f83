import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { ActivityRunRecord, PackageRunRecord, PackageRunRepository, PackageRunStart } from '../../contracts/index.ts';
import { StoreNotFoundError } from '../../errors/index.ts';
import { jsonObjectText, jsonText, parseRow, type Row } from '../rows.ts';
import { nodeAliveSql } from '../server-clock.ts';
import type { Database, Work } from '../sql/database.ts';
import { insert, type Parameter, raw, type Sql, sql, update, where } from '../sql/statement.ts';

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

const columns = 'id, package, binding, trigger, status, inputs, activities, emitted, error, started_at, ended_at, node_id, check_hash';
const select = raw(`SELECT ${columns} FROM package_runs`);

/** The node that recorded a run (`package_runs.node_id`) is alive now, by the cluster's measure, as SQL (PostgreSQL). */
const RUN_NODE_ALIVE = raw(`EXISTS (SELECT 1 FROM loom_nodes WHERE loom_nodes.id = package_runs.node_id AND ${nodeAliveSql()})`);

/**
 * The first key of the transaction-level advisory lock under which a run of a binding starts on
 * PostgreSQL (`Runs` in ASCII; the cluster's own locks use `Loom`, so none is ever this one); the
 * second is drawn from the package and the binding ({@link bindingLockKey}).
 */
const RUN_START_LOCK = 0x52756e73;

/** The second key of a binding's start lock: 32 bits of a hash of its package and name (two bindings sharing one only wait for each other). */
function bindingLockKey(pkg: string, binding: string): number {
  return createHash('sha256').update(`${pkg}\n${binding}`).digest().readInt32BE(0);
}

/** A row of `package_runs`: one run, its activities as JSON. */
const packageRunRow = z
  .object({
    id: z.string(),
    package: z.string(),
    binding: z.string(),
    trigger: z.string(),
    status: z.enum(['running', 'completed', 'aborted', 'interrupted', 'skipped', 'missed', 'unchanged']),
    inputs: jsonObjectText,
    activities: jsonText.pipe(z.array(activityRecord)),
    emitted: z.string().nullable(),
    error: z.string().nullable(),
    started_at: z.number(),
    ended_at: z.number().nullable(),
    node_id: z.string().nullable(),
    check_hash: z.string().nullable(),
  })
  .transform((row): PackageRunRecord => ({
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
    nodeId: row.node_id,
    ...(row.check_hash === null ? {} : { checkHash: row.check_hash }),
  }));

/** `PackageRunRepository` on either database: one row per run, its activities as JSON. */
export class SqlPackageRunRepository implements PackageRunRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async create(record: PackageRunRecord): Promise<void> {
    await this.#db.run(insert('package_runs', columns, runValues(record)), () => ({ action: `store package run "${record.id}"` }));
  }

  start(record: PackageRunRecord): Promise<PackageRunStart> {
    const db = this.#db;
    const { package: pkg, binding } = record;
    // Nodes share the database only on PostgreSQL. Without the lock, two transactions would each
    // find no run going (neither sees the other's insert before it commits) and both start one.
    const shared = db.dialect === 'postgres';
    const going = sql`${select} WHERE package = ${pkg} AND binding = ${binding} AND status = 'running' AND id <> ${record.id}
      AND node_id IS DISTINCT FROM ${record.nodeId} AND ${RUN_NODE_ALIVE} ORDER BY started_at DESC, ${db.insertOrder} DESC LIMIT 1`;
    return db.transaction(
      function* (): Work<PackageRunStart> {
        if (shared) {
          yield sql`SELECT pg_advisory_xact_lock(${RUN_START_LOCK}, ${bindingLockKey(pkg, binding)})`;
          const [row] = (yield going).rows;
          if (row !== undefined) return { started: false, going: parseRun(row) };
        }
        if ((yield replace(record)).changed === 0) yield insert('package_runs', columns, runValues(record));
        return { started: true };
      },
      () => ({ action: `start run "${record.id}" of binding "${binding}" (package "${pkg}")` }),
    );
  }

  async update(record: PackageRunRecord): Promise<void> {
    const changed = await this.#db.run(replace(record), () => ({ action: `update package run "${record.id}"` }));
    if (changed === 0) throw new StoreNotFoundError(`cannot update package run "${record.id}": there is no such run`);
  }

  async get(id: string): Promise<PackageRunRecord | undefined> {
    const row = await this.#db.one(sql`${select} WHERE id = ${id}`, () => ({ action: `read package run "${id}"` }));
    return row === undefined ? undefined : parseRun(row);
  }

  async list(query: { package?: string; binding?: string; limit?: number } = {}): Promise<PackageRunRecord[]> {
    const conditions: Sql[] = [];
    if (query.package !== undefined) conditions.push(sql`package = ${query.package}`);
    if (query.binding !== undefined) conditions.push(sql`binding = ${query.binding}`);
    const limit = this.#db.limit(query.limit ?? 100, 'list package runs');
    const rows = await this.#db.all(sql`${select} ${where(conditions)} ORDER BY started_at DESC, ${this.#db.insertOrder} DESC LIMIT ${limit}`, () => ({
      action: 'list package runs',
    }));
    return rows.map(parseRun);
  }

  interruptRunning(at: number, error: string): Promise<PackageRunRecord[]> {
    const read = sql`${select} WHERE status = 'running' ORDER BY started_at, ${this.#db.insertOrder}${this.#db.forUpdate}`;
    return this.#db.transaction(
      function* (): Work<PackageRunRecord[]> {
        const changed = (yield read).rows.map((row) => interruptedRun(parseRun(row), at, error));
        for (const run of changed) yield replace(run);
        return changed;
      },
      () => ({ action: 'mark interrupted package runs' }),
    );
  }

  async lastCheckHash(pkg: string, binding: string): Promise<string | undefined> {
    const statement = sql`SELECT check_hash FROM package_runs WHERE package = ${pkg} AND binding = ${binding} AND check_hash IS NOT NULL ORDER BY started_at DESC, ${this.#db.insertOrder} DESC LIMIT 1`;
    const hash = (await this.#db.one(statement, () => ({ action: `read the last check of binding "${binding}" (package "${pkg}")` })))?.['check_hash'];
    return typeof hash === 'string' ? hash : undefined;
  }
}

function runValues(record: PackageRunRecord): Parameter[] {
  return [
    record.id,
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
    record.nodeId,
    record.checkHash ?? null,
  ];
}

/** The statement that replaces the stored run with `record` (changing no row when there is none). */
function replace(record: PackageRunRecord): Sql {
  return update('package_runs', columns, runValues(record), sql`id = ${record.id}`);
}

/** A package run whose process is gone: `interrupted`, and its running activity `failed`, at `at` with `error`. */
function interruptedRun(run: PackageRunRecord, at: number, error: string): PackageRunRecord {
  return {
    ...run,
    status: 'interrupted',
    error,
    endedAt: at,
    activities: run.activities.map((activity) => (activity.status === 'running' ? { ...activity, status: 'failed', error, endedAt: at } : activity)),
  };
}

function parseRun(row: Row): PackageRunRecord {
  return parseRow(packageRunRow, row, 'package_runs', ['id']);
}
