import { afterAll, beforeAll } from 'vitest';
import { startTestPostgres, type TestPostgres } from './postgres-server.ts';

/**
 * The test file's PostgreSQL server (see `startTestPostgres`): started before its tests, stopped
 * after them (hooks the file registers later run after the start and before the stop). The object
 * answers for the server while it runs.
 */
export function useTestPostgres(): TestPostgres {
  let server: TestPostgres | undefined;
  const running = (): TestPostgres => {
    if (server === undefined) throw new Error('the test PostgreSQL server is not running: use it inside the tests and their hooks');
    return server;
  };
  beforeAll(async () => {
    server = await startTestPostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  }, 60_000);
  return {
    get address() {
      return running().address;
    },
    get adminUrl() {
      return running().adminUrl;
    },
    createDatabase: (options) => running().createDatabase(options),
    dropDatabase: (name) => running().dropDatabase(name),
    query: (text, values, database) => running().query(text, values, database),
    stop: () => running().stop(),
  };
}

/**
 * Creates a database on `postgres` migrated to the newest schema (a store opened on it, then
 * closed) and answers its name: each test copies it (`createDatabase({ template })`) rather than
 * migrating a database of its own.
 */
export async function migratedTemplate(postgres: Pick<TestPostgres, 'createDatabase'>): Promise<string> {
  const migrated = await postgres.createDatabase();
  const { openPostgresStore } = await import('../../src/store/index.ts');
  await (await openPostgresStore({ url: migrated.url })).close();
  return migrated.name;
}
