import type { InstalledPackageRecord, InstalledPackageRepository } from '../contracts/index.ts';
import { type PostgresConnection, query } from './postgres-connection.ts';
import { parseRow, type Row } from './rows.ts';
import { installedPackageColumns as columns, installedPackageRow, installedPackageValues } from './table-rows.ts';

/** `InstalledPackageRepository` on PostgreSQL: one row per package, its documents as JSON text. */
export class PostgresInstalledPackageRepository implements InstalledPackageRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  create(record: InstalledPackageRecord): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(db, `INSERT INTO installed_packages (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`, installedPackageValues(record));
      },
      () => ({ action: `store installed package "${record.slug}"` }),
    );
  }

  get(slug: string): Promise<InstalledPackageRecord | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, `SELECT ${columns} FROM installed_packages WHERE slug = $1`, [slug])).rows;
        return row === undefined ? undefined : parsePackage(row);
      },
      () => ({ action: `read installed package "${slug}"` }),
    );
  }

  list(): Promise<InstalledPackageRecord[]> {
    return this.#connection.execute(
      async (db) => (await query(db, `SELECT ${columns} FROM installed_packages ORDER BY slug`)).rows.map(parsePackage),
      () => ({ action: 'list installed packages' }),
    );
  }

  delete(slug: string): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(db, 'DELETE FROM installed_packages WHERE slug = $1', [slug]);
      },
      () => ({ action: `remove installed package "${slug}"` }),
    );
  }

  setLastFire(slug: string, binding: string, at: number): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        // One statement: a concurrent setLastFire of another binding is not lost.
        await query(db, 'UPDATE installed_packages SET last_fires = jsonb_set(last_fires::jsonb, ARRAY[$1::text], to_jsonb($2::bigint))::text WHERE slug = $3', [binding, at, slug]);
      },
      () => ({ action: `record a fire of package "${slug}"` }),
    );
  }
}

function parsePackage(row: Row): InstalledPackageRecord {
  return parseRow(installedPackageRow, row, 'installed_packages', ['slug']);
}
