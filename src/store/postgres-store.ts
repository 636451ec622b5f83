import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { Logger, Store } from '../contracts/index.ts';
import { StoreError } from '../errors/index.ts';
import { redactDatabaseUrl } from './database-url.ts';
import { PostgresAgentRepository } from './postgres-agent-repository.ts';
import { PostgresConnection } from './postgres-connection.ts';
import { PostgresDatabase } from './sql/postgres-database.ts';
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
import { toPostgresOpenError } from './postgres-errors.ts';
import { PostgresEventRepository } from './postgres-event-repository.ts';
import { applyPostgresMigrations, postgresMigrations, readPostgresSchemaVersion } from './postgres-migrations.ts';
import { PostgresSessionRepository } from './postgres-session-repository.ts';
import { PostgresUsageRepository } from './postgres-usage-repository.ts';
import { PostgresTurnJournalRepository } from './postgres-turn-journal-repository.ts';
import { SERVER_NOW_MS } from './server-clock.ts';

/** How many connections one store opens at most, unless told otherwise. */
export const DEFAULT_POSTGRES_POOL_SIZE = 10;

/** How long opening a connection may take before it fails, in milliseconds. */
export const DEFAULT_POSTGRES_CONNECT_TIMEOUT_MS = 10_000;

/** Options of `openPostgresStore`. */
export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database` (libpq's parameters, such as `sslmode`, may follow). */
  url: string;
  /** The most connections the pool opens (default 10). */
  poolSize?: number;
  /** How long connecting may take, in milliseconds (default 10 s). */
  connectTimeoutMs?: number;
  /** Where a connection lost while idle is reported (the pool opens another when next needed). */
  logger?: Logger;
  /**
   * Named in the notification of each event this store appends (`NOTIFY loom_events`, see
   * `EVENT_CHANNEL`): a daemon passes its node id, so that it skips its own events. A random
   * UUID by default.
   */
  origin?: string;
  /**
   * How long the node (`origin`) holds a turn of the journal it records before another node may
   * take it over, unless renewed (`[cluster] turn_lease_seconds`; 15 s by default; decision 0061).
   */
  turnLeaseMs?: number;
}

/** A `Store` on a PostgreSQL database, with what only it has. */
export interface PostgresStore extends Store {
  /** The database's URL without its password: safe to show. */
  readonly target: string;
  /** The schema version of the database once migrated (the newest row of `loom_schema`). */
  readonly schemaVersion: number;
  /**
   * Asks the server for its schema version and its clock (ms since the epoch) now.
   * @throws {StoreError} when the store is closed or the server cannot be reached.
   */
  ping(): Promise<{ schemaVersion: number; serverTime: number }>;
}

// BIGINT (int8) comes back as a string by default, since it can exceed 2^53. The store's BIGINTs
// are milliseconds, counts and sequence numbers, all far below that, so they are read as numbers.
const INT8_OID = 20;
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): unknown =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : (pg.types.getTypeParser(oid, format ?? 'text') as unknown)) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * Opens the PostgreSQL store at `options.url`: a pool of connections, and the schema migrated to
 * the newest version (under an advisory lock, so several nodes may start at once).
 *
 * @throws {StoreError} when the server cannot be reached, refuses the user, has no such database,
 *   or holds a schema newer than this Loom knows; the message names the server and database
 *   (never the password) and says what to do.
 * @example
 * const store = await openPostgresStore({ url: 'postgres://loom:secret@db.internal/loom' });
 * try { await store.agents.list(); } finally { await store.close(); }
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const target = redactDatabaseUrl(options.url);
  const poolSize = options.poolSize ?? DEFAULT_POSTGRES_POOL_SIZE;
  if (!Number.isSafeInteger(poolSize) || poolSize < 1)
    throw new StoreError(`cannot open store ${target}: poolSize must be a positive integer, got ${poolSize}`);
  let pool: pg.Pool;
  try {
    pool = new pg.Pool({
      connectionString: options.url,
      max: poolSize,
      connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_POSTGRES_CONNECT_TIMEOUT_MS,
      application_name: 'loom',
      types,
    });
  } catch (error) {
    throw toPostgresOpenError(error, target);
  }
  // Without a listener, a connection the server drops while idle would crash the process.
  pool.on('error', (error) =>
    options.logger?.warn({ database: target, err: error.message }, 'lost an idle connection to the database; the pool opens another when needed'),
  );
  try {
    const schemaVersion = await applyPostgresMigrations(pool, target);
    return createPostgresStore(new PostgresConnection(pool, target, options.origin ?? randomUUID()), schemaVersion, options.turnLeaseMs);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw toPostgresOpenError(error, target);
  }
}

/** What `inspectPostgresDatabase` finds. */
export interface PostgresInspection {
  /** The database's URL without its password. */
  target: string;
  /** The schema version the database holds (0 when Loom never ran on it). */
  schemaVersion: number;
  /** The newest schema version this Loom knows: the database is migrated to it at open. */
  latestVersion: number;
  /** The server's clock, ms since the epoch, read with `localTime` its local counterpart (the midpoint of the round trip). */
  serverTime: number;
  localTime: number;
}

/**
 * Connects to the PostgreSQL database at `url` once and reads its schema version and its clock,
 * changing nothing (no migration): what `loom doctor` checks.
 *
 * @throws {StoreError} when the server cannot be reached, refuses the user or has no such
 *   database; the message names the server and database, never the password.
 */
export async function inspectPostgresDatabase(url: string, options: { connectTimeoutMs?: number } = {}): Promise<PostgresInspection> {
  const target = redactDatabaseUrl(url);
  let client: pg.Client | undefined;
  try {
    client = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_POSTGRES_CONNECT_TIMEOUT_MS,
      application_name: 'loom',
      types,
    });
    // A connection dropped by the server is reported by the query that needed it.
    client.on('error', () => undefined);
    await client.connect();
    const schemaVersion = await readPostgresSchemaVersion(client);
    const sent = Date.now();
    const clock = await client.query<{ now: number }>(`SELECT ${SERVER_NOW_MS} AS now`);
    const localTime = Math.round((sent + Date.now()) / 2);
    return { target, schemaVersion, latestVersion: postgresMigrations.at(-1)?.version ?? 0, serverTime: clock.rows[0]?.now ?? Number.NaN, localTime };
  } catch (error) {
    throw toPostgresOpenError(error, target);
  } finally {
    await client?.end().catch(() => undefined);
  }
}

function createPostgresStore(connection: PostgresConnection, schemaVersion: number, turnLeaseMs: number | undefined): PostgresStore {
  const db = new PostgresDatabase(connection);
  const turns = new PostgresTurnJournalRepository(connection, turnLeaseMs);
  return {
    agents: new PostgresAgentRepository(connection),
    sessions: new PostgresSessionRepository(connection, turns.owner),
    memory: new SqlMemoryRepository(db),
    usage: new PostgresUsageRepository(connection),
    events: new PostgresEventRepository(connection),
    approvals: new SqlApprovalRepository(db),
    tasks: new SqlTaskRepository(db),
    a2aPushConfigs: new SqlA2aPushConfigRepository(db),
    packageRuns: new SqlPackageRunRepository(db),
    scheduleRuns: new SqlScheduleRunRepository(db),
    packages: new SqlInstalledPackageRepository(db),
    workflows: new SqlWorkflowRepository(db),
    forgedTools: new SqlForgedToolRepository(db),
    // Its claims are the node's (`origin`): the node answering a message (decision 0061).
    channels: new SqlChannelRepository(db, connection.origin),
    turns,
    target: connection.target,
    schemaVersion,
    ping(): Promise<{ schemaVersion: number; serverTime: number }> {
      return connection.execute(
        async (db) => {
          const now = await db.query<{ now: number }>(`SELECT ${SERVER_NOW_MS} AS now`);
          return { schemaVersion: await readPostgresSchemaVersion(db), serverTime: now.rows[0]?.now ?? Number.NaN };
        },
        () => ({ action: 'reach the database' }),
      );
    },
    async close(): Promise<void> {
      try {
        await connection.close();
      } catch (error) {
        throw new StoreError(`cannot close store ${connection.target}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
      }
    },
  };
}
