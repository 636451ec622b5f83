import type { StatementSync } from 'node:sqlite';
import type { PackageRunRecord, PackageRunRepository } from '../contracts/index.ts';
import { StoreNotFoundError } from '../errors/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { parseRow } from './rows.ts';
import { limitParameter, type SqliteRow } from './sqlite-rows.ts';
import { interruptedRun, packageRunColumns as columns, packageRunRow as runRow, packageRunValues } from './table-rows.ts';

/** `PackageRunRepository` on SQLite (migration 6): one row per run, its activities as JSON. */
export class SqlitePackageRunRepository implements PackageRunRepository {
  readonly #connection: SqliteConnection;
  readonly #create: StatementSync;
  readonly #update: StatementSync;
  readonly #get: StatementSync;
  readonly #running: StatementSync;
  readonly #lastCheck: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#create = db.prepare(`INSERT INTO package_runs (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.#update = db.prepare(
      'UPDATE package_runs SET package = ?, binding = ?, trigger = ?, status = ?, inputs = ?, activities = ?, emitted = ?, error = ?, started_at = ?, ended_at = ?, node_id = ?, check_hash = ? WHERE id = ?',
    );
    this.#get = db.prepare(`SELECT ${columns} FROM package_runs WHERE id = ?`);
    this.#running = db.prepare(`SELECT ${columns} FROM package_runs WHERE status = 'running' ORDER BY started_at, rowid`);
    this.#lastCheck = db.prepare('SELECT check_hash FROM package_runs WHERE package = ? AND binding = ? AND check_hash IS NOT NULL ORDER BY started_at DESC, rowid DESC LIMIT 1');
  }

  create(record: PackageRunRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#create.run(record.id, ...packageRunValues(record));
      },
      () => ({ action: `store package run "${record.id}"` }),
    );
  }

  update(record: PackageRunRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        const [first, ...rest] = packageRunValues(record);
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
          const changed = this.#running.all().map((row) => interruptedRun(parseRun(row), at, error));
          for (const run of changed) {
            const [first, ...rest] = packageRunValues(run);
            this.#update.run(first, ...rest, run.id);
          }
          return changed;
        }),
      () => ({ action: 'mark interrupted package runs' }),
    );
  }

  lastCheckHash(pkg: string, binding: string): Promise<string | undefined> {
    return this.#connection.execute(
      () => {
        const hash = this.#lastCheck.get(pkg, binding)?.['check_hash'];
        return typeof hash === 'string' ? hash : undefined;
      },
      () => ({ action: `read the last check of binding "${binding}" (package "${pkg}")` }),
    );
  }
}

function parseRun(row: SqliteRow): PackageRunRecord {
  return parseRow(runRow, row, 'package_runs', ['id']);
}
