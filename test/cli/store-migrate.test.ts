import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureLoomHome, resolveLoomHome } from '../../src/config/index.ts';
import { writeDaemonFile } from '../../src/daemon/index.ts';
import { formatStoreCopyReport } from '../../src/cli/commands/store-commands.ts';
import { copiedTables } from '../../src/store/copy-tables.ts';
import { openPostgresStore, openSqliteStore, redactDatabaseUrl, type StoreCopyReport } from '../../src/store/index.ts';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { readEveryDomain, seedEveryDomain } from '../support/every-domain.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';

const examples = join(import.meta.dirname, '../../examples/agents');

const server = useTestPostgres();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;
let database: { name: string; url: string };

beforeEach(async () => {
  dir = await makeTempDir('loom-store-migrate-');
  home = join(dir.path, 'home');
  database = await server.createDatabase();
});

afterEach(async () => {
  await dir.remove();
});

async function raw(text: string, name = database.name): Promise<Record<string, unknown>[]> {
  return (await server.query(text, [], name)).rows as Record<string, unknown>[];
}

/** The password of the test server's URLs, which no output may show. */
function password(): string {
  return decodeURIComponent(new URL(database.url).password);
}

/** A home with a coordinator and its child spawned by the CLI, and a little of every other domain written through the store. */
async function seedHome(): Promise<string[]> {
  expect((await runCli(home, ['agent', 'spawn', join(examples, 'coordinator.toml')])).code).toBe(0);
  expect((await runCli(home, ['agent', 'spawn', join(examples, 'helper.toml'), '--parent', 'coordinator'])).code).toBe(0);
  const store = openSqliteStore({ path: join(home, 'data', 'loom.db') });
  try {
    const agents = await store.agents.list();
    await seedEveryDomain(store, agents);
    return agents.map((agent) => agent.id);
  } finally {
    await store.close();
  }
}

describe('loom store migrate', () => {
  it('copies the home into PostgreSQL, where a user sees the same agents, messages, events and usage, and says what to do next', async () => {
    const agentIds = await seedHome();
    const listed = await runCli(home, ['agent', 'list', '--json']);
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((agent) => agent.name)).toEqual(['coordinator', 'helper-wiki']);
    const sqlite = openSqliteStore({ path: join(home, 'data', 'loom.db') });
    const before = await readEveryDomain(sqlite, agentIds);
    await sqlite.close();

    const result = await runCli(home, ['store', 'migrate', '--to', database.url]);

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toMatch(/^TABLE\s+ROWS\s+CHECKSUM$/);
    for (const table of copiedTables) expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^${table.name}\\s+[1-9]\\d*\\s+ok$`)));
    expect(result.stdout).toContain(`into ${redactDatabaseUrl(database.url)}: ${copiedTables.length} tables`);
    expect(result.stdout).toContain('every count and checksum matched');
    expect(result.stdout).toContain('[store]');
    expect(result.stdout).toContain('LOOM_DATABASE_URL');
    expect(result.stdout).toContain('Start the daemon: loom start');
    expect(result.stdout).toContain('is left as it was');
    expect(result.stdout).not.toContain(password());

    const postgres = await openPostgresStore({ url: database.url });
    try {
      expect(await readEveryDomain(postgres, agentIds)).toEqual(before);
      const coordinator = (await postgres.agents.list()).find((agent) => agent.parentId === null);
      const session = await postgres.sessions.get(coordinator?.sessionId ?? '');
      expect(session?.messages.slice(-3)).toEqual([
        { role: 'user', content: 'hello "there" — ça va? 🧵' },
        { role: 'assistant', content: [{ type: 'text', text: 'line one\nline two' }] },
        { role: 'user', content: 'and \\u0000 escaped in JSON: \u0000' },
      ]);
      const events = await postgres.events.list({});
      const middle = events[Math.floor(events.length / 2)]?.seq ?? 0;
      expect((await postgres.events.list({ after: middle })).map((event) => event.seq)).toEqual(
        events.filter((event) => event.seq > middle).map((event) => event.seq),
      );
      expect(await postgres.events.append({ at: 99_000, type: 'tick', agentId: null, data: {} })).toBe((events.at(-1)?.seq ?? 0) + 1);
    } finally {
      await postgres.close();
    }
    // The home's agents as the CLI lists them, now from PostgreSQL.
    const fromPostgres = await runCli(home, ['agent', 'list', '--json'], { env: { LOOM_DATABASE_URL: database.url } });
    expect(fromPostgres.code).toBe(0);
    expect(JSON.parse(fromPostgres.stdout)).toEqual(JSON.parse(listed.stdout));
  });

  it('prints the report as JSON with --json', async () => {
    await seedHome();

    const result = await runCli(home, ['store', 'migrate', '--to', database.url, '--json']);

    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as StoreCopyReport;
    expect(report).toMatchObject({ source: join(home, 'data', 'loom.db'), target: redactDatabaseUrl(database.url), ok: true });
    expect(
      report.tables.map((table) => [table.table, table.ok, table.sqliteRows === table.postgresRows, table.sqliteChecksum === table.postgresChecksum]),
    ).toEqual(copiedTables.map((table) => [table.name, true, true, true]));
    expect(result.stdout).not.toContain(password());
  });

  it('refuses a database that holds Loom data, says which table, and writes nothing', async () => {
    await seedHome();
    const postgres = await openPostgresStore({ url: database.url });
    await postgres.events.append({ at: 1, type: 'tick', agentId: null, data: {} });
    await postgres.close();

    const result = await runCli(home, ['store', 'migrate', '--to', database.url]);

    expect(result.code).toBe(2);
    expect(result.stderr).toContain('holds Loom data already (table "events" has rows); nothing was written');
    expect(result.stderr).not.toContain(password());
    expect(result.stdout).toBe('');
    expect(await raw('SELECT (SELECT count(*)::int FROM agents) AS agents, (SELECT count(*)::int FROM events) AS events')).toEqual([{ agents: 0, events: 1 }]);
  });

  it('refuses while a daemon runs on the home, before touching the database', async () => {
    await seedHome();
    const loomHome = resolveLoomHome({ LOOM_HOME: home }, dir.path);
    await ensureLoomHome(loomHome);
    await writeDaemonFile(loomHome, {
      pid: process.pid,
      host: '127.0.0.1',
      port: 4200,
      url: 'http://127.0.0.1:4200',
      startedAt: new Date().toISOString(),
      version: 'test',
    });

    const result = await runCli(home, ['store', 'migrate', '--to', database.url]);

    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `cannot move the store of ${home}: its daemon is running (pid ${process.pid}, http://127.0.0.1:4200); stop the daemon first (loom stop)`,
    );
    expect(await raw("SELECT to_regclass('loom_schema')::text AS schema")).toEqual([{ schema: null }]);
  });

  it('says what is wrong with a bad URL, a wrong password or a home with no store, never showing the password', async () => {
    const notPostgres = await runCli(home, ['store', 'migrate', '--to', 'mysql://loom:hunter2@db.example.com/loom']);
    expect(notPostgres.code).toBe(2);
    expect(notPostgres.stderr).toContain('--to: expected a postgres:// or postgresql:// URL');
    expect(notPostgres.stderr).not.toContain('hunter2');

    const missing = await runCli(home, ['store', 'migrate']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("required option '--to <url>' not specified");

    await seedHome();
    const wrong = new URL(database.url);
    wrong.password = 'wrong-hunter2';
    const refused = await runCli(home, ['store', 'migrate', '--to', wrong.toString()]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`cannot open store ${redactDatabaseUrl(wrong.toString())}: password authentication failed`);
    expect(refused.stderr).not.toContain('wrong-hunter2');

    const empty = await runCli(join(dir.path, 'empty-home'), ['store', 'migrate', '--to', database.url]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/cannot copy store ".*empty-home\/data\/loom\.db" into .*: there is no such file/);
    expect(empty.stderr).not.toContain(password());
  });

  it('names the tables that did not match and says nothing was written', () => {
    const table = (name: string, ok: boolean) => ({
      table: name,
      sqliteRows: 3,
      postgresRows: ok ? 3 : 2,
      sqliteChecksum: 'aa',
      postgresChecksum: ok ? 'aa' : 'bb',
      ok,
    });
    const text = formatStoreCopyReport(
      {
        source: '/home/me/.loom/data/loom.db',
        target: 'postgres://loom@db/loom',
        sqliteSchemaVersion: 11,
        postgresSchemaVersion: 3,
        tables: [table('agents', true), table('events', false)],
        ok: false,
        eventSeq: 3,
      },
      '/home/me/.loom/config.toml',
    );
    expect(text).toMatch(/^events\s+3 in SQLite, 2 in PostgreSQL\s+differs$/m);
    expect(text).toMatch(/^agents\s+3\s+ok$/m);
    expect(text).toContain('The copy did not match in events: nothing was written to postgres://loom@db/loom (the copy was rolled back).');
    expect(text).not.toContain('Next:');
  });
});
