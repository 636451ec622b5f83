import type { CopyStoreOptions, StoreCopyReport } from './copy-store.ts';
import type { PostgresInspection, PostgresStore, PostgresStoreOptions } from './postgres-store.ts';

// The PostgreSQL store and `pg` load with the first call: a daemon on SQLite never holds them.

/** Opens the PostgreSQL store (see `postgres-store.ts`). */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const { openPostgresStore: open } = await import('./postgres-store.ts');
  return open(options);
}

/** Reads a PostgreSQL database's schema version and clock without migrating it (see `postgres-store.ts`). */
export async function inspectPostgresDatabase(url: string, options: { connectTimeoutMs?: number } = {}): Promise<PostgresInspection> {
  const { inspectPostgresDatabase: inspect } = await import('./postgres-store.ts');
  return inspect(url, options);
}

/** Copies a SQLite store into an empty PostgreSQL database and verifies the copy (see `copy-store.ts`). */
export async function copySqliteToPostgres(options: CopyStoreOptions): Promise<StoreCopyReport> {
  const { copySqliteToPostgres: copy } = await import('./copy-store.ts');
  return copy(options);
}
