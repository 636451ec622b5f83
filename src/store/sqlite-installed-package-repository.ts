import type { StatementSync } from 'node:sqlite';
import type { InstalledPackageRecord, InstalledPackageRepository } from '../contracts/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { parseRow } from './rows.ts';
import type { SqliteRow } from './sqlite-rows.ts';
import { installedPackageColumns as columns, installedPackageRow as packageRow, installedPackageValues } from './table-rows.ts';

/** `InstalledPackageRepository` on SQLite (migration 7): one row per package, its documents as JSON. */
export class SqliteInstalledPackageRepository implements InstalledPackageRepository {
  readonly #connection: SqliteConnection;
  readonly #create: StatementSync;
  readonly #get: StatementSync;
  readonly #list: StatementSync;
  readonly #delete: StatementSync;
  readonly #setLastFire: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#create = db.prepare(`INSERT INTO installed_packages (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.#get = db.prepare(`SELECT ${columns} FROM installed_packages WHERE slug = ?`);
    this.#list = db.prepare(`SELECT ${columns} FROM installed_packages ORDER BY slug`);
    this.#delete = db.prepare('DELETE FROM installed_packages WHERE slug = ?');
    this.#setLastFire = db.prepare("UPDATE installed_packages SET last_fires = json_set(last_fires, '$.' || json_quote(?), ?) WHERE slug = ?");
  }

  create(record: InstalledPackageRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        const [first, ...rest] = installedPackageValues(record);
        this.#create.run(first ?? null, ...rest);
      },
      () => ({ action: `store installed package "${record.slug}"` }),
    );
  }

  get(slug: string): Promise<InstalledPackageRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(slug);
        return row === undefined ? undefined : parsePackage(row);
      },
      () => ({ action: `read installed package "${slug}"` }),
    );
  }

  list(): Promise<InstalledPackageRecord[]> {
    return this.#connection.execute(
      () => this.#list.all().map(parsePackage),
      () => ({ action: 'list installed packages' }),
    );
  }

  delete(slug: string): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#delete.run(slug);
      },
      () => ({ action: `remove installed package "${slug}"` }),
    );
  }

  setLastFire(slug: string, binding: string, at: number): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#setLastFire.run(binding, at, slug);
      },
      () => ({ action: `record a fire of package "${slug}"` }),
    );
  }
}

function parsePackage(row: SqliteRow): InstalledPackageRecord {
  return parseRow(packageRow, row, 'installed_packages', ['slug']);
}
