import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { migrations, openPostgresStore, openSqliteStore, postgresMigrations, type PostgresStore, type SqliteStore } from '../../src/store/index.ts';
import { applyMigrations } from '../../src/store/migrations.ts';
import { applyPostgresMigrations } from '../../src/store/postgres-migrations.ts';

/**
 * A SQLite store at `path` as a Loom of an older schema left it: migrated up to `version`, `seed`
 * run on the database (rows written the way they were then), then opened, which migrates the rest.
 */
export async function sqliteStoreFrom(path: string, version: number, seed: (db: DatabaseSync) => void): Promise<SqliteStore> {
  await mkdir(dirname(path), { recursive: true });
  const db = new DatabaseSync(path);
  try {
    db.exec('PRAGMA foreign_keys = ON');
    applyMigrations(
      db,
      path,
      migrations.filter((step) => step.version <= version),
    );
    seed(db);
  } finally {
    db.close();
  }
  return openSqliteStore({ path });
}

/** The same on the PostgreSQL database at `url`: migrated up to `version`, seeded, then opened. */
export async function postgresStoreFrom(url: string, version: number, seed: (pool: pg.Pool) => Promise<void>): Promise<PostgresStore> {
  const pool = new pg.Pool({ connectionString: url });
  try {
    await applyPostgresMigrations(
      pool,
      'test',
      postgresMigrations.filter((step) => step.version <= version),
    );
    await seed(pool);
  } finally {
    await pool.end();
  }
  return openPostgresStore({ url });
}
