import type { PackageRunRecord, PackageRunRepository } from '../contracts/index.ts';
import { StoreNotFoundError } from '../errors/index.ts';
import { type Parameter, type PostgresConnection, type Queryable, query } from './postgres-connection.ts';
import { checkLimit, parseRow, type Row } from './rows.ts';
import { interruptedRun, packageRunColumns as columns, packageRunRow, packageRunValues } from './table-rows.ts';

const update = 'UPDATE package_runs SET package = $1, binding = $2, trigger = $3, status = $4, inputs = $5, activities = $6, emitted = $7, error = $8, started_at = $9, ended_at = $10, node_id = $11, check_hash = $12 WHERE id = $13';

/** `PackageRunRepository` on PostgreSQL: one row per run, its activities as JSON. */
export class PostgresPackageRunRepository implements PackageRunRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  create(record: PackageRunRecord): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(db, `INSERT INTO package_runs (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`, [record.id, ...packageRunValues(record)]);
      },
      () => ({ action: `store package run "${record.id}"` }),
    );
  }

  update(record: PackageRunRecord): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        if ((await replace(db, record)) === 0) throw new StoreNotFoundError(`cannot update package run "${record.id}": there is no such run`);
      },
      () => ({ action: `update package run "${record.id}"` }),
    );
  }

  get(id: string): Promise<PackageRunRecord | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, `SELECT ${columns} FROM package_runs WHERE id = $1`, [id])).rows;
        return row === undefined ? undefined : parseRun(row);
      },
      () => ({ action: `read package run "${id}"` }),
    );
  }

  list(runQuery: { package?: string; binding?: string; limit?: number } = {}): Promise<PackageRunRecord[]> {
    return this.#connection.execute(
      async (db) => {
        const where: string[] = [];
        const values: Parameter[] = [];
        if (runQuery.package !== undefined) where.push(`package = $${values.push(runQuery.package)}`);
        if (runQuery.binding !== undefined) where.push(`binding = $${values.push(runQuery.binding)}`);
        const clause = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
        const limit = checkLimit(runQuery.limit ?? 100, 'list package runs') ?? null;
        const { rows } = await query(db, `SELECT ${columns} FROM package_runs ${clause} ORDER BY started_at DESC, insert_order DESC LIMIT $${values.push(limit)}`, values);
        return rows.map(parseRun);
      },
      () => ({ action: 'list package runs' }),
    );
  }

  interruptRunning(at: number, error: string): Promise<PackageRunRecord[]> {
    return this.#connection.execute(
      () =>
        this.#connection.transaction(async (client) => {
          const { rows } = await query(client, `SELECT ${columns} FROM package_runs WHERE status = 'running' ORDER BY started_at, insert_order FOR UPDATE`);
          const changed = rows.map((row) => interruptedRun(parseRun(row), at, error));
          for (const run of changed) await replace(client, run);
          return changed;
        }),
      () => ({ action: 'mark interrupted package runs' }),
    );
  }

  lastCheckHash(pkg: string, binding: string): Promise<string | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, 'SELECT check_hash FROM package_runs WHERE package = $1 AND binding = $2 AND check_hash IS NOT NULL ORDER BY started_at DESC, insert_order DESC LIMIT 1', [pkg, binding])).rows;
        const hash = row?.['check_hash'];
        return typeof hash === 'string' ? hash : undefined;
      },
      () => ({ action: `read the last check of binding "${binding}" (package "${pkg}")` }),
    );
  }
}

/** Replaces the stored run with `record`; how many rows changed (0 when there is none). */
async function replace(db: Queryable, record: PackageRunRecord): Promise<number> {
  return (await query(db, update, [...packageRunValues(record), record.id])).changed;
}

function parseRun(row: Row): PackageRunRecord {
  return parseRow(packageRunRow, row, 'package_runs', ['id']);
}
