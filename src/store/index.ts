/**
 * The store: the `Store` contract on one SQLite file (`node:sqlite`, WAL mode), the embedded
 * default, or on a PostgreSQL database (`pg`) when `[store] url` names one.
 */
export { redactDatabaseUrl } from './database-url.ts';
export { migrations } from './migrations.ts';
export type { Migration } from './migrations.ts';
export { MIGRATION_LOCK_KEY, postgresMigrations } from './postgres-migrations.ts';
export { EVENT_CHANNEL } from './postgres-event-repository.ts';
export { DEFAULT_TURN_LEASE_MS } from './postgres-turn-journal-repository.ts';
export { inTransaction } from './postgres-connection.ts';
export { NODE_STALE_AFTER_MS, nodeAliveSql, nodeBeatingSql, SERVER_NOW_MS } from './server-clock.ts';
export { copySqliteToPostgres, inspectPostgresDatabase, openPostgresStore } from './open-postgres-store.ts';
export type { CopyStoreOptions, StoreCopyReport, TableCopyReport } from './copy-store.ts';
export type { PostgresInspection, PostgresStore, PostgresStoreOptions } from './postgres-store.ts';
export { DEFAULT_BUSY_TIMEOUT_MS, openSqliteStore } from './sqlite-store.ts';
export type { SqliteStore, SqliteStoreOptions } from './sqlite-store.ts';
export { observeStoreCommits } from './store-commits.ts';
export type { StoreCommit } from './store-commits.ts';
