/**
 * The embedded store: the `Store` contract on one SQLite file (`node:sqlite`, WAL mode).
 */
export { migrations } from './migrations.ts';
export type { Migration } from './migrations.ts';
export { DEFAULT_BUSY_TIMEOUT_MS, openSqliteStore } from './sqlite-store.ts';
export type { SqliteStore, SqliteStoreOptions } from './sqlite-store.ts';
