import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreConflictError, StoreError } from '../../src/errors/index.ts';
import { copiedTables, isPostgresOnlyTable, listSqliteTables } from '../../src/store/copy-tables.ts';
import { copySqliteToPostgres, migrations, openPostgresStore, openSqliteStore, type SqliteStore } from '../../src/store/index.ts';
import { applyMigrations } from '../../src/store/migrations.ts';
import { checksumPostgresTable, checksumSqliteTable } from '../../src/store/table-checksum.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { readEveryDomain, seedEveryDomain } from '../support/every-domain.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';
import { agentRecord, sessionOf } from './store-contract.ts';

const server = useTestPostgres();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let sqlitePath: string;
let database: { name: string; url: string };

beforeEach(async () => {
  dir = await makeTempDir('loom-copy-store-');
  sqlitePath = join(dir.path, 'loom.db');
  database = await server.createDatabase();
});

afterEach(async () => {
  await server.dropDatabase(database.name);
  await dir.remove();
});

/** Opens the SQLite store of the test, runs `work` on it, and closes it. */
async function withSqlite<T>(work: (store: SqliteStore) => Promise<T>): Promise<T> {
  const store = openSqliteStore({ path: sqlitePath });
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

/** Runs `work` on a raw connection to the SQLite file of the test, foreign keys off, to write what the repositories would not. */
function withRawSqlite<T>(work: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(sqlitePath);
  try {
    return work(db);
  } finally {
    db.close();
  }
}

async function raw(text: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
  return (await server.query(text, values, database.name)).rows as Record<string, unknown>[];
}

/** How many rows each copied table of the test's database holds, the tables with none left out. */
async function filledTables(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of copiedTables) {
    const [row] = await raw(`SELECT count(*)::int AS count FROM ${table.name}`);
    const count = Number(row?.['count']);
    if (count > 0) counts[table.name] = count;
  }
  return counts;
}

describe('copiedTables', () => {
  it('covers every table the SQLite migrations create, so none can be skipped without notice', () => {
    const db = new DatabaseSync(':memory:');
    try {
      applyMigrations(db, ':memory:', migrations);
      expect(listSqliteTables(db)).toEqual(copiedTables.map((table) => table.name).sort());
    } finally {
      db.close();
    }
  });

  it('leaves out of the copy only PostgreSQL’s own loom_* tables', async () => {
    const store = await openPostgresStore({ url: database.url });
    await store.close();
    const tables = (await raw("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).map((row) => String(row['tablename']));
    expect(tables.filter((name) => !isPostgresOnlyTable(name)).sort()).toEqual(copiedTables.map((table) => table.name).sort());
  });
});

describe('copySqliteToPostgres()', () => {
  it('copies every domain so the PostgreSQL store gives back what the SQLite store gave, and reports every table matched', async () => {
    const parent = agentRecord('parent', { createdAt: 1_000 });
    const child = agentRecord('child', { parentId: 'parent', createdAt: 1_000 });
    const before = await withSqlite(async (store) => {
      await store.agents.create(parent, sessionOf(parent));
      await store.agents.create(child, sessionOf(child));
      await seedEveryDomain(store, [parent, child]);
      return readEveryDomain(store, ['parent', 'child']);
    });

    const report = await copySqliteToPostgres({ sqlitePath, url: database.url });

    expect(report.ok).toBe(true);
    expect(report.tables.map((table) => table.table)).toEqual(copiedTables.map((table) => table.name));
    for (const table of report.tables)
      expect(table, table.table).toMatchObject({ ok: true, postgresRows: table.sqliteRows, postgresChecksum: table.sqliteChecksum });
    expect(report.tables.every((table) => table.sqliteRows > 0)).toBe(true);
    const postgres = await openPostgresStore({ url: database.url });
    try {
      expect(await readEveryDomain(postgres, ['parent', 'child'])).toEqual(before);
    } finally {
      await postgres.close();
    }
  });

  it('keeps the order SQLite breaks ties in, and a child stored before its parent keeps its parent', async () => {
    await withSqlite(async (store) => {
      for (const id of ['c', 'a', 'b']) await store.agents.create(agentRecord(id, { createdAt: 1_000 }), sessionOf(agentRecord(id)));
    });
    // A child whose row comes before its parent's (as a rebuilt table could leave it).
    withRawSqlite((db) => {
      db.exec('PRAGMA foreign_keys = OFF');
      db.exec(
        "INSERT INTO agents (id, name, state, parent_id, session_id, manifest, created_at, updated_at) VALUES ('kid', 'kid', 'running', 'zparent', 'session-kid', '{}', 1000, 1000)",
      );
      db.exec(
        "INSERT INTO agents (id, name, state, parent_id, session_id, manifest, created_at, updated_at) VALUES ('zparent', 'zparent', 'running', NULL, 'session-zparent', '{}', 1000, 1000)",
      );
    });
    const expected = await withSqlite((store) => store.agents.list());

    const report = await copySqliteToPostgres({ sqlitePath, url: database.url });

    expect(report.ok).toBe(true);
    const postgres = await openPostgresStore({ url: database.url });
    try {
      const agents = await postgres.agents.list();
      expect(agents.map((agent) => agent.id)).toEqual(['c', 'a', 'b', 'kid', 'zparent']);
      expect(agents).toEqual(expected);
      expect(agents.find((agent) => agent.id === 'kid')?.parentId).toBe('zparent');
    } finally {
      await postgres.close();
    }
  });

  it('numbers the next event above every number SQLite handed out, even those of deleted events', async () => {
    await withSqlite(async (store) => {
      for (let index = 0; index < 5; index += 1) await store.events.append({ at: index, type: 'tick', agentId: null, data: { index } });
    });
    withRawSqlite((db) => db.exec('DELETE FROM events WHERE seq > 3'));

    const report = await copySqliteToPostgres({ sqlitePath, url: database.url });

    expect(report.eventSeq).toBe(5);
    const postgres = await openPostgresStore({ url: database.url });
    try {
      expect((await postgres.events.list({})).map((event) => event.seq)).toEqual([1, 2, 3]);
      expect(await postgres.events.append({ at: 9, type: 'tick', agentId: null, data: {} })).toBe(6);
    } finally {
      await postgres.close();
    }
  });

  it('refuses a database that holds Loom data, naming the table, and writes nothing', async () => {
    await withSqlite(async (store) => {
      const agent = agentRecord('a1');
      await store.agents.create(agent, sessionOf(agent));
    });
    const postgres = await openPostgresStore({ url: database.url });
    await postgres.usage.record({ agentId: 'x', at: 1, model: 'm', inputTokens: 1, outputTokens: 1, costUsd: 0 });
    await postgres.close();

    const attempt = copySqliteToPostgres({ sqlitePath, url: database.url });

    await expect(attempt).rejects.toThrow(StoreConflictError);
    await expect(attempt).rejects.toThrow(/holds Loom data already \(table "usage" has rows\); nothing was written/);
    expect(await filledTables()).toEqual({ usage: 1 });
  });

  it("copies into a database emptied as its refusal says (TRUNCATE or DELETE) with capped families' totals equal to their rows' sums", async () => {
    await withSqlite(async (store) => {
      for (const [id, parentId] of [
        ['root', null],
        ['kid', 'root'],
      ] as const) {
        const agent = agentRecord(id, { parentId });
        await store.agents.create(agent, sessionOf(agent));
      }
      await store.usage.record({ agentId: 'root', at: 1, model: 'm', inputTokens: 1, outputTokens: 1, costUsd: 1 });
      await store.usage.record({ agentId: 'kid', at: 2, model: 'm', inputTokens: 2, outputTokens: 2, costUsd: 2, lineage: 'root/' });
    });
    const families = [
      { agentId: 'root', descendants: 'root/' },
      { agentId: 'kid', descendants: 'root/kid/' },
    ];
    /** The capped families' totals (seeded by this read when the database has none) and the sums of their rows. */
    const read = async (): Promise<[number[], number[]]> => {
      const postgres = await openPostgresStore({ url: database.url });
      try {
        const totals = await postgres.usage.familyTotals(families);
        const sums = await Promise.all(families.map((family) => postgres.usage.totals({ since: 0, ...family })));
        return [totals.map((total) => total.costUsd), sums.map((sum) => sum.costUsd)];
      } finally {
        await postgres.close();
      }
    };
    const tables = (except?: string): string =>
      copiedTables
        .map((table) => table.name)
        .filter((name) => name !== except)
        .join(', ');
    const copied = async (): Promise<boolean> => (await copySqliteToPostgres({ sqlitePath, url: database.url })).ok;

    expect(await copied()).toBe(true);
    expect(await read()).toEqual([
      [3, 2],
      [3, 2],
    ]);
    await raw(`TRUNCATE ${tables()}`);
    expect(await raw('SELECT agent_id FROM loom_family_usage')).toEqual([]);
    expect(await copied()).toBe(true);
    expect(await read()).toEqual([
      [3, 2],
      [3, 2],
    ]);
    // Deleted row by row, the usage leaves its totals behind: the copy clears them.
    await raw('DELETE FROM usage');
    await raw(`TRUNCATE ${tables('usage')}`);
    expect(await raw('SELECT agent_id FROM loom_family_usage ORDER BY agent_id')).toEqual([{ agent_id: 'kid' }, { agent_id: 'root' }]);
    expect(await copied()).toBe(true);
    expect(await read()).toEqual([
      [3, 2],
      [3, 2],
    ]);
  });

  it('refuses a database a Loom daemon runs on, even an empty one, naming the node', async () => {
    await withSqlite(async (store) => {
      const agent = agentRecord('a1');
      await store.agents.create(agent, sessionOf(agent));
    });
    const postgres = await openPostgresStore({ url: database.url });
    await postgres.close();
    await raw(
      "INSERT INTO loom_nodes (id, name, url, version, schema_version, started_at, last_seen) VALUES ('n1', 'web-1', NULL, 'test', 2, 0, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)",
    );

    await expect(copySqliteToPostgres({ sqlitePath, url: database.url })).rejects.toThrow(
      /a Loom daemon runs on that database \(node "web-1"\); stop it first/,
    );
    expect(await filledTables()).toEqual({});
  });

  it('refuses a SQLite file with a table it does not cover, before touching the database', async () => {
    await withSqlite(() => Promise.resolve());
    withRawSqlite((db) => db.exec('CREATE TABLE later_feature (id TEXT PRIMARY KEY)'));

    await expect(copySqliteToPostgres({ sqlitePath, url: database.url })).rejects.toThrow(/has table\(s\) "later_feature" that the copy does not cover/);
    expect(await raw("SELECT to_regclass('loom_schema')::text AS schema")).toEqual([{ schema: null }]);
  });

  it('refuses a SQLite file whose schema is older than this Loom’s, without migrating it', async () => {
    withRawSqlite((db) => applyMigrations(db, sqlitePath, migrations.slice(0, 3)));

    await expect(copySqliteToPostgres({ sqlitePath, url: database.url })).rejects.toThrow(
      /its schema version is 3, older than this Loom's \d+; run any command on the home once/,
    );
    withRawSqlite((db) => expect(db.prepare('PRAGMA user_version').get()?.['user_version']).toBe(3));
  });

  it('fails on a row PostgreSQL cannot store (a NUL character in text), naming the table, and writes nothing', async () => {
    await withSqlite(async (store) => {
      const agent = agentRecord('a1');
      await store.agents.create(agent, sessionOf(agent));
      await store.events.append({ at: 1, type: 'tick', agentId: null, data: {} });
      await store.channels.requestPairing({ code: 'P', channel: 'tg', userId: 'nul\u0000user', userName: null, createdAt: 1, approvedAt: null });
    });

    const attempt = copySqliteToPostgres({ sqlitePath, url: database.url });

    await expect(attempt).rejects.toThrow(StoreError);
    await expect(attempt).rejects.toThrow(/cannot copy table "channel_pairings" \(nothing was written\): PostgreSQL cannot store text with a NUL character/);
    expect(await filledTables()).toEqual({});
  });

  it('writes nothing when aborted', async () => {
    await withSqlite(async (store) => {
      const agent = agentRecord('a1');
      await store.agents.create(agent, sessionOf(agent));
    });
    const controller = new AbortController();
    controller.abort(new Error('stopped by the test'));

    await expect(copySqliteToPostgres({ sqlitePath, url: database.url, signal: controller.signal })).rejects.toThrow('stopped by the test');
    expect(await filledTables()).toEqual({});
  });
});

describe('table checksums', () => {
  it('are equal on both sides after a copy and differ once a single value differs', async () => {
    const agent = agentRecord('a1');
    await withSqlite(async (store) => {
      await store.agents.create(agent, sessionOf(agent));
      await seedEveryDomain(store, [agent]);
    });
    await copySqliteToPostgres({ sqlitePath, url: database.url });
    // A cost two units in the last place away: the same to the eye, not to the checksum.
    const cost = 0.1 + 2 / 3;
    await raw("UPDATE usage SET cost_usd = $1 WHERE agent_id = 'killed-agent'", [cost + Number.EPSILON]);
    const [changed] = await raw("SELECT cost_usd FROM usage WHERE agent_id = 'killed-agent'");
    expect(changed?.['cost_usd']).not.toBe(cost);

    const usage = copiedTables.find((table) => table.name === 'usage');
    const agents = copiedTables.find((table) => table.name === 'agents');
    if (usage === undefined || agents === undefined) throw new Error('no usage or agents table in copiedTables');
    const sqlite = withRawSqlite((db) => ({
      usage: checksumSqliteTable(db, usage, ['agent_id', 'at', 'model', 'input_tokens', 'output_tokens', 'cost_usd']),
      agents: checksumSqliteTable(db, agents, ['id', 'name', 'state', 'parent_id', 'session_id', 'manifest', 'created_at', 'updated_at']),
    }));
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      await client.query('BEGIN');
      const postgresUsage = await checksumPostgresTable(client, usage, [
        { name: 'agent_id', dataType: 'text' },
        { name: 'at', dataType: 'bigint' },
        { name: 'model', dataType: 'text' },
        { name: 'input_tokens', dataType: 'bigint' },
        { name: 'output_tokens', dataType: 'bigint' },
        { name: 'cost_usd', dataType: 'double precision' },
      ]);
      const postgresAgents = await checksumPostgresTable(
        client,
        agents,
        ['id', 'name', 'state', 'parent_id', 'session_id', 'manifest', 'created_at', 'updated_at'].map((name) => ({
          name,
          dataType: name.endsWith('_at') ? 'bigint' : 'text',
        })),
      );
      await client.query('COMMIT');
      expect(postgresAgents).toEqual(sqlite.agents);
      expect(postgresUsage.rows).toBe(sqlite.usage.rows);
      expect(postgresUsage.checksum).not.toBe(sqlite.usage.checksum);
    } finally {
      await client.end();
    }
  });
});
