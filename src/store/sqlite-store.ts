import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type {
  AgentRepository,
  ApprovalRepository,
  EventRepository,
  InstalledPackageRepository,
  MemoryRepository,
  PackageRunRepository,
  SessionRepository,
  Store,
  TaskRepository,
  UsageRepository,
  WorkflowRepository,
} from '../contracts/index.ts';
import { messageOf, StoreError } from '../errors/index.ts';
import { applyMigrations } from './migrations.ts';
import { SqliteAgentRepository } from './sqlite-agent-repository.ts';
import { SqliteConnection } from './sqlite-connection.ts';
import { SqliteDatabase } from './sql/sqlite-database.ts';
import { SqlA2aPushConfigRepository } from './domains/a2a-push-configs.ts';
import { SqlApprovalRepository } from './domains/approvals.ts';
import { SqlChannelRepository } from './domains/channels.ts';
import { SqlForgedToolRepository } from './domains/forged-tools.ts';
import { SqlInstalledPackageRepository } from './domains/installed-packages.ts';
import { SqlMemoryRepository } from './domains/memory.ts';
import { SqlPackageRunRepository } from './domains/package-runs.ts';
import { SqlScheduleRunRepository } from './domains/schedule-runs.ts';
import { SqlTaskRepository } from './domains/tasks.ts';
import { SqlWorkflowRepository } from './domains/workflows.ts';
import { toOpenError } from './sqlite-errors.ts';
import { SqliteEventRepository } from './sqlite-event-repository.ts';
import { SqliteSessionRepository } from './sqlite-session-repository.ts';
import { SqliteUsageRepository } from './sqlite-usage-repository.ts';
import { SqliteTurnJournalRepository } from './sqlite-turn-journal-repository.ts';

/** How long a write waits for another process's lock before it fails, in milliseconds. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

/** Options of `openSqliteStore`. */
export interface SqliteStoreOptions {
  /** The database file; its folder is created when missing. `:memory:` gives a private, unsaved store. */
  path: string;
  /**
   * `normal` (the default): a commit survives a crash of Loom, and in WAL mode costs no fsync;
   * a power loss may undo the last commits. `full`: each commit is fsynced and survives a power loss.
   */
  synchronous?: 'normal' | 'full';
}

/** A `Store` on one SQLite file, with what only SQLite has. */
export interface SqliteStore extends Store {
  /** The schema version of the file once migrated (`PRAGMA user_version`). */
  readonly schemaVersion: number;
  /**
   * The rows of `PRAGMA integrity_check`: `['ok']` when the file is healthy, else one line per problem.
   * @throws {StoreError} when the store is closed or the check cannot run.
   */
  integrityCheck(): string[];
}

/**
 * Opens (creating when missing) the SQLite store at `options.path`: WAL journal, foreign keys on,
 * a 5 s busy timeout so that several Loom processes can share the file, and the schema migrated
 * to the newest version.
 *
 * @throws {StoreError} when the file cannot be opened, is not a SQLite database, or has a schema
 *   newer than this Loom knows; the message names the file and what to do.
 * @example
 * const store = openSqliteStore({ path: join(loomHome, 'data', 'loom.db') });
 * try { await store.agents.list(); } finally { await store.close(); }
 */
export function openSqliteStore(options: SqliteStoreOptions): SqliteStore {
  const { path, synchronous = 'normal' } = options;
  let db: DatabaseSync | undefined;
  try {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    db = new DatabaseSync(path, { timeout: DEFAULT_BUSY_TIMEOUT_MS, enableForeignKeyConstraints: true });
    // The first statement reads the file header, so a file that is not a database fails here.
    db.exec('PRAGMA journal_mode = WAL');
    db.exec(`PRAGMA synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    db.exec('PRAGMA foreign_keys = ON');
    const schemaVersion = applyMigrations(db, path);
    return createSqliteStore(new SqliteConnection(db, path), schemaVersion);
  } catch (error) {
    if (db?.isOpen === true) db.close();
    throw toOpenError(error, path);
  }
}

function createSqliteStore(connection: SqliteConnection, schemaVersion: number): SqliteStore {
  const db = new SqliteDatabase(connection);
  const agents: AgentRepository = new SqliteAgentRepository(connection);
  const sessions: SessionRepository = new SqliteSessionRepository(connection);
  const memory: MemoryRepository = new SqlMemoryRepository(db);
  const usage: UsageRepository = new SqliteUsageRepository(connection);
  const events: EventRepository = new SqliteEventRepository(connection);
  const approvals: ApprovalRepository = new SqlApprovalRepository(db);
  const tasks: TaskRepository = new SqlTaskRepository(db);
  const a2aPushConfigs = new SqlA2aPushConfigRepository(db);
  const packageRuns: PackageRunRepository = new SqlPackageRunRepository(db);
  const scheduleRuns = new SqlScheduleRunRepository(db);
  const packages: InstalledPackageRepository = new SqlInstalledPackageRepository(db);
  const workflows: WorkflowRepository = new SqlWorkflowRepository(db);
  const forgedTools = new SqlForgedToolRepository(db);
  const channels = new SqlChannelRepository(db);
  const turns = new SqliteTurnJournalRepository(connection);
  return {
    agents,
    sessions,
    memory,
    usage,
    events,
    approvals,
    tasks,
    a2aPushConfigs,
    packageRuns,
    scheduleRuns,
    packages,
    workflows,
    forgedTools,
    channels,
    turns,
    schemaVersion,
    integrityCheck(): string[] {
      if (connection.closed) {
        throw new StoreError(`cannot check the integrity of store "${connection.path}": the store is closed`);
      }
      try {
        return connection.db
          .prepare('PRAGMA integrity_check')
          .all()
          .map((row) => String(row['integrity_check']));
      } catch (error) {
        throw new StoreError(`cannot check the integrity of store "${connection.path}": ${messageOf(error)}`, {
          cause: error,
        });
      }
    },
    close(): Promise<void> {
      try {
        // Closing the last connection checkpoints the WAL into the database file.
        connection.close();
        return Promise.resolve();
      } catch (error) {
        return Promise.reject(new StoreError(`cannot close store "${connection.path}": ${messageOf(error)}`, { cause: error }));
      }
    },
  };
}
