import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema, loadConfig, resolveLoomHome, resolveStoreUrl } from '../../src/config/index.ts';
import { ConfigError } from '../../src/errors/index.ts';
import { openPostgresStore, postgresMigrations } from '../../src/store/index.ts';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';

const latestVersion = postgresMigrations.at(-1)?.version ?? 0;

const server = useTestPostgres();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-postgres-selection-');
  home = join(dir.path, 'home');
  await runCli(home, ['init']);
  await writeFile(join(home, 'config.toml'), '[daemon]\nport = 0\n');
});
afterEach(async () => {
  await dir.remove();
});

/** The URL with a password of its own, to check that nothing prints it. */
function withPassword(url: string, password: string): string {
  const parsed = new URL(url);
  parsed.password = password;
  return parsed.toString();
}

describe('[store] url and LOOM_DATABASE_URL', () => {
  it('config.toml accepts a postgres:// or postgresql:// URL in [store] url', async () => {
    await writeFile(join(home, 'config.toml'), '[store]\nurl = "postgresql://loom:pw@db.example.com:5432/loom?sslmode=require"\n');

    const config = await loadConfig(resolveLoomHome({ LOOM_HOME: home }, '/'));

    expect(config.store.url).toBe('postgresql://loom:pw@db.example.com:5432/loom?sslmode=require');
  });

  it('config.toml refuses another URL in [store] url, naming the field and never echoing the value', async () => {
    await writeFile(join(home, 'config.toml'), '[store]\nurl = "mysql://loom:hunter2@db.example.com/loom"\n');

    const attempt = loadConfig(resolveLoomHome({ LOOM_HOME: home }, '/'));

    await expect(attempt).rejects.toBeInstanceOf(ConfigError);
    await expect(attempt).rejects.toThrow(
      '[store].url: expected a postgres:// or postgresql:// URL such as "postgres://loom:password@db.example.com:5432/loom" (the value is not shown: it may hold a password)',
    );
    await expect(attempt).rejects.not.toThrow('hunter2');
  });

  it('LOOM_DATABASE_URL wins over [store] url; an empty one counts as unset; neither means SQLite', () => {
    const config = ConfigSchema.parse({ store: { url: 'postgres://file@db/loom' } });

    expect(resolveStoreUrl(config, { LOOM_DATABASE_URL: 'postgres://env@db/loom' })).toEqual({ url: 'postgres://env@db/loom', from: 'LOOM_DATABASE_URL' });
    expect(resolveStoreUrl(config, { LOOM_DATABASE_URL: '' })).toEqual({ url: 'postgres://file@db/loom', from: '[store] url' });
    expect(resolveStoreUrl(ConfigSchema.parse({}), {})).toBeUndefined();
    expect(() => resolveStoreUrl(config, { LOOM_DATABASE_URL: 'db.example.com:5432 password=hunter2' })).toThrow(
      'cannot use LOOM_DATABASE_URL: expected a postgres:// or postgresql:// URL',
    );
    expect(() => resolveStoreUrl(config, { LOOM_DATABASE_URL: 'db.example.com:5432 password=hunter2' })).not.toThrow('hunter2');
  });

  it('the CLI keeps agents in the PostgreSQL database LOOM_DATABASE_URL names, not in the SQLite file', async () => {
    const { url } = await server.createDatabase();
    const env = { LOOM_DATABASE_URL: url };

    const spawn = await runCli(home, ['agent', 'spawn', '-', '--json'], { stdin: 'name = "kept-in-postgres"\n', env });
    expect(spawn.code, spawn.stderr).toBe(0);

    const listed = await runCli(home, ['agent', 'list', '--json'], { env });
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((agent) => agent.name)).toEqual(['kept-in-postgres']);
    const store = await openPostgresStore({ url });
    try {
      expect((await store.agents.list()).map((agent) => agent.name)).toEqual(['kept-in-postgres']);
    } finally {
      await store.close();
    }
    const sqlite = await runCli(home, ['agent', 'list', '--json']);
    expect(JSON.parse(sqlite.stdout)).toEqual([]);
  });
});

describe('loom doctor with PostgreSQL', () => {
  it('reports the connection and the schema version, migrating nothing, and the newest version once Loom ran', async () => {
    const { name, url } = await server.createDatabase();
    const env = { LOOM_DATABASE_URL: url };
    const shown = `postgres://${new URL(url).username}@${server.address}/${name}`;

    const fresh = await runCli(home, ['doctor'], { env });

    expect(fresh.stdout).toContain(`✓ database ${shown} (from LOOM_DATABASE_URL): connected`);
    expect(fresh.stdout).toContain(`✓ database schema version 0: Loom migrates it to ${latestVersion} when it starts`);
    expect(fresh.stdout).toMatch(/[✓!] this machine's clock is \d+ ms (behind|ahead of) the database server's/);
    expect(fresh.stdout).not.toContain('loom.db');
    expect((await server.query("SELECT to_regclass('loom_schema') AS t", [], name)).rows).toEqual([{ t: null }]);

    await (await openPostgresStore({ url })).close();
    await writeFile(join(home, 'config.toml'), `[daemon]\nport = 0\n[store]\nurl = "${url}"\n`);
    const migrated = await runCli(home, ['doctor']);

    expect(migrated.stdout).toContain(`✓ database ${shown} (from [store] url): connected`);
    expect(migrated.stdout).toContain(`✓ database schema version ${latestVersion} (the newest)`);
    expect(fresh.stdout + migrated.stdout).not.toContain(`:${new URL(url).password}@`);
  });

  it('fails when the database cannot be reached, naming the host and never the password', async () => {
    const { url } = await server.createDatabase();
    const unreachable = new URL(withPassword(url, 'hunter2-secret'));
    unreachable.port = '1';

    const result = await runCli(home, ['doctor'], { env: { LOOM_DATABASE_URL: unreachable.toString() } });

    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /✗ database postgres:\/\/\w+@127\.0\.0\.1:1\/\w+ \(from LOOM_DATABASE_URL\): cannot open store .*: nothing answers at 127\.0\.0\.1:1 \(connection refused\)/,
    );
    expect(result.stdout + result.stderr).not.toContain('hunter2');
  });

  it('fails when the schema is newer than this Loom knows, saying what to do', async () => {
    const { name, url } = await server.createDatabase();
    await server.query('CREATE TABLE loom_schema (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)', [], name);
    await server.query("INSERT INTO loom_schema VALUES ($1, 'future', 0)", [latestVersion + 1], name);

    const result = await runCli(home, ['doctor'], { env: { LOOM_DATABASE_URL: url } });

    expect(result.code).toBe(1);
    expect(result.stdout).toContain(
      `✗ database schema version ${latestVersion + 1} is newer than this Loom knows (${latestVersion}): upgrade Loom, or point [store] url at another database`,
    );
  });

  it('fails when LOOM_DATABASE_URL is not a PostgreSQL URL', async () => {
    const result = await runCli(home, ['doctor'], { env: { LOOM_DATABASE_URL: 'sqlite:///tmp/x.db' } });

    expect(result.code).toBe(1);
    expect(result.stdout).toContain('✗ database: cannot use LOOM_DATABASE_URL: expected a postgres:// or postgresql:// URL');
  });
});
