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
