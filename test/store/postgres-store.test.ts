import { randomUUID } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/contracts/index.ts';
import { StoreConflictError, StoreError } from '../../src/errors/index.ts';
import { openPostgresStore, type PostgresStore, postgresMigrations, SERVER_NOW_MS } from '../../src/store/index.ts';
import { insertEvent } from '../../src/store/postgres-event-repository.ts';
import { applyPostgresMigrations } from '../../src/store/postgres-migrations.ts';
import pg from 'pg';
import { startTestPostgres } from '../support/postgres-server.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';
import { waitFor } from '../support/wait-for.ts';
import type { OtherNodeState } from './contract/fixtures.ts';
import { agentRecord, describeStoreContract, sessionOf } from './store-contract.ts';

const latestVersion = postgresMigrations.at(-1)?.version ?? 0;

const server = useTestPostgres();
/** A database migrated once; each contract test gets a copy, so none migrates again. */
let template: string;

beforeAll(async () => {
  const { name, url } = await server.createDatabase();
  const store = await openPostgresStore({ url });
  await store.close();
  template = name;
}, 60_000);

describeStoreContract('PostgreSQL', async () => {
  const { name, url } = await server.createDatabase({ template });
  const self = randomUUID();
  const store = await openPostgresStore({ url, poolSize: 4, origin: self });
  const others: Store[] = [];
  /** Records node `id` in `loom_nodes` as the cluster would: its heartbeat fresh, a minute old, or fresh with the node stopped. */
  const join = (id: string, state: OtherNodeState): Promise<unknown> =>
    server.query(
      `INSERT INTO loom_nodes (id, name, version, schema_version, started_at, last_seen, stopped_at)
       VALUES ($1, $2, 'test', 0, ${SERVER_NOW_MS}, ${SERVER_NOW_MS} + $3, ${state === 'stopped' ? SERVER_NOW_MS : 'NULL'})`,
      // Alive for the test's length: seen last an hour ahead.
      [id, `node-${state}`, state === 'silent' ? -60_000 : 3_600_000],
      name,
    );
  return {
    store,
    origin: self,
    otherNode: async (state, origin = randomUUID()) => {
      if (others.length === 0) await join(self, 'alive');
      const other = await openPostgresStore({ url, origin, poolSize: 1 });
      others.push(other);
      await join(origin, state);
      return other;
    },
    cleanup: async () => {
      for (const other of others) await other.close();
      await store.close();
      await server.dropDatabase(name);
    },
  };
});

describe('PostgresStore', () => {
  const opened: Store[] = [];
  let database: { name: string; url: string };

  async function open(url = database.url): Promise<PostgresStore> {
    const store = await openPostgresStore({ url });
    opened.push(store);
    return store;
  }

  /** Runs one statement on the test's database as the superuser, to see what the store wrote or to tamper with it. */
  async function raw(text: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
    return (await server.query(text, values, database.name)).rows as Record<string, unknown>[];
  }

  beforeAll(async () => {
    database = await server.createDatabase();
  });

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    database = await server.createDatabase();
  });

  it('writes a channel message’s claim once: taken again by its node (before streamed words, before the reply), it is only read', async () => {
    const store = await open();
    await store.channels.receive({
      channel: 'tg',
      platformId: 'm1',
      userId: '42',
      userName: 'Ada',
      conversationId: '42',
      conversationKind: 'direct',
      thread: null,
      mentioned: false,
      text: 'Hi!',
      status: 'received',
      note: null,
      receivedAt: 1_000,
      updatedAt: 1_000,
    });
    /** The row's version: a new one for every write of it. */
    const version = async (): Promise<unknown> => (await raw("SELECT xmin::text AS version FROM channel_messages WHERE platform_id = 'm1'"))[0]?.['version'];
    expect((await store.channels.claim('tg', 'm1'))?.held).toBe(true);
    const claimed = await version();
    expect((await store.channels.claim('tg', 'm1'))?.held).toBe(true);
    expect((await store.channels.claim('tg', 'm1'))?.held).toBe(true);
    expect(await version()).toBe(claimed);
  });

  it('migrates a new database to the newest schema version, recording each step in loom_schema', async () => {
    const store = await open();

    expect(store.schemaVersion).toBe(latestVersion);
    expect(await raw('SELECT version, name FROM loom_schema ORDER BY version')).toEqual(
      postgresMigrations.map((step) => ({ version: step.version, name: step.name })),
    );
    const tables = await raw('SELECT tablename FROM pg_tables WHERE schemaname = \'public\' ORDER BY tablename COLLATE "C"');
    expect(tables.map((row) => row['tablename'])).toEqual([
      'a2a_push_configs',
      'agents',
      'approvals',
      'channel_messages',
      'channel_pairings',
      'events',
      'forged_tools',
      'installed_packages',
      'loom_channel_leases',
      'loom_family_usage',
      'loom_job_attempts',
      'loom_jobs',
      'loom_nodes',
      'loom_schema',
      'loom_timer_fires',
      'memory',
      'package_runs',
      'schedule_runs',
      'session_messages',
      'sessions',
      'tasks',
      'turn_journal',
      'turn_steps',
      'usage',
      'workflows',
    ]);
  });

  it('keeps every domain’s data across close and reopen, without migrating again', async () => {
    const first = await open();
    const agent = agentRecord('a1');
    await first.agents.create(agent, sessionOf(agent, { messages: [{ role: 'user', content: 'hi' }] }));
    await first.memory.put({ agentId: 'a1', key: 'k', value: { v: 1 }, updatedAt: 3 });
    await first.usage.record({ agentId: 'a1', at: 1_700_000_000_123, model: 'm', inputTokens: 5, outputTokens: 6, costUsd: 0.5 });
    const seq = await first.events.append({ at: 5, type: 'agent-spawn', agentId: 'a1', data: { ok: true } });
    await first.close();

    const second = await open();

    expect(second.schemaVersion).toBe(latestVersion);
    expect(await raw('SELECT count(*)::int AS n FROM loom_schema')).toEqual([{ n: postgresMigrations.length }]);
    expect(await second.agents.get('a1')).toEqual(agent);
    expect((await second.sessions.get(agent.sessionId))?.messages).toEqual([{ role: 'user', content: 'hi' }]);
    expect(await second.memory.get('a1', 'k')).toEqual({ agentId: 'a1', key: 'k', value: { v: 1 }, updatedAt: 3 });
    expect(await second.usage.list()).toEqual([{ agentId: 'a1', at: 1_700_000_000_123, model: 'm', inputTokens: 5, outputTokens: 6, costUsd: 0.5 }]);
    expect(await second.events.list()).toEqual([{ seq, at: 5, type: 'agent-spawn', agentId: 'a1', data: { ok: true } }]);
  });

  it('two stores opening a new database at once migrate it once, under the advisory lock', async () => {
    const [one, two] = await Promise.all([open(), open()]);

    expect(one.schemaVersion).toBe(latestVersion);
    expect(two.schemaVersion).toBe(latestVersion);
    expect(await raw('SELECT version FROM loom_schema ORDER BY version')).toEqual(postgresMigrations.map((step) => ({ version: step.version })));
    const agent = agentRecord('a1');
    await one.agents.create(agent, sessionOf(agent));
    expect(await two.agents.get('a1')).toEqual(agent);
  });

  it('refuses a database whose schema is newer than it knows, saying what to do, and changes nothing', async () => {
    await raw('CREATE TABLE loom_schema (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)');
    await raw("INSERT INTO loom_schema VALUES ($1, 'from the future', 0)", [latestVersion + 98]);

    const attempt = open();

    await expect(attempt).rejects.toBeInstanceOf(StoreError);
    await expect(attempt).rejects.toThrow(
      `its schema version is ${latestVersion + 98}, but this Loom knows versions up to ${latestVersion}; upgrade Loom (every node sharing the database runs the same version), or point [store] url at another database`,
    );
    const tables = await raw("SELECT tablename FROM pg_tables WHERE schemaname = 'public'");
    expect(tables.map((row) => row['tablename'])).toEqual(['loom_schema']);
  });

  it('rolls a failing migration back entirely, leaving the version it had', async () => {
    const pool = new pg.Pool({ connectionString: database.url });
    try {
      const first = { version: 1, name: 'first', sql: 'CREATE TABLE one (x INTEGER);' };
      expect(await applyPostgresMigrations(pool, 'test', [first])).toBe(1);
      const broken = [
        first,
        { version: 2, name: 'second', sql: 'CREATE TABLE two (x INTEGER);' },
        { version: 3, name: 'broken', sql: 'INSERT INTO missing VALUES (1);' },
      ];

      await expect(applyPostgresMigrations(pool, 'test', broken)).rejects.toThrow(
        'cannot migrate store test to schema version 3 (broken): relation "missing" does not exist; the database stays at version 1',
      );

      expect(await raw('SELECT max(version) AS version FROM loom_schema')).toEqual([{ version: 1 }]);
      expect(await raw("SELECT to_regclass('two') AS two")).toEqual([{ two: null }]);
    } finally {
      await pool.end();
    }
  });

  it('says plainly that nothing answers at the host and port, without the password', async () => {
    const closed = new URL(database.url);
    closed.port = '1';
    closed.password = 'hunter2-secret';

    const attempt = openPostgresStore({ url: closed.toString() });

    await expect(attempt).rejects.toBeInstanceOf(StoreError);
    const error = (await attempt.catch((reason: unknown) => reason)) as StoreError;
    expect(error.message).toBe(
      `cannot open store postgres://postgres@127.0.0.1:1/${database.name}: nothing answers at 127.0.0.1:1 (connection refused); check that PostgreSQL runs there and that [store] url (or LOOM_DATABASE_URL) names it`,
    );
    expect(error.isRetryable).toBe(true);
    expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain('hunter2');
  });

  it('says that the password was refused, and that a database is missing, never showing the password', async () => {
    const wrong = new URL(database.url);
    wrong.password = 'not-the-password';
    const missing = new URL(database.url);
    missing.pathname = '/no_such_database';

    const refused = (await openPostgresStore({ url: wrong.toString() }).catch((reason: unknown) => reason)) as StoreError;
    const absent = (await openPostgresStore({ url: missing.toString() }).catch((reason: unknown) => reason)) as StoreError;

    expect(refused).toBeInstanceOf(StoreError);
    expect(refused.message).toBe(
      `cannot open store postgres://postgres@${server.address}/${database.name}: password authentication failed for user "postgres"; check the user and password in [store] url (or LOOM_DATABASE_URL)`,
    );
    expect(refused.message).not.toContain('not-the-password');
    expect(absent.message).toBe(
      `cannot open store postgres://postgres@${server.address}/no_such_database: database "no_such_database" does not exist; create it (createdb), or name another database in the URL`,
    );
  });

  it('ping() gives the schema version and the server’s clock; a closed store refuses it', async () => {
    const store = await open();
    const before = Date.now();

    const answer = await store.ping();

    expect(answer.schemaVersion).toBe(latestVersion);
    expect(Math.abs(answer.serverTime - before)).toBeLessThan(60_000);
    await store.close();
    await expect(store.ping()).rejects.toThrow(`cannot reach the database: the store ${store.target} is closed`);
  });

  it('lets one of two concurrent saves expecting the same revision win, from two nodes', async () => {
    const [one, two] = await Promise.all([open(), open()]);
    const agent = agentRecord('a1');
    await one.agents.create(agent, sessionOf(agent));
    const revision = (await one.sessions.revision(agent.sessionId)) ?? 0;

    const outcomes = await Promise.allSettled([
      one.sessions.append(agent.sessionId, [{ role: 'user', content: 'from one' }], { expectedRevision: revision, updatedAt: 2 }),
      two.sessions.append(agent.sessionId, [{ role: 'user', content: 'from two' }], { expectedRevision: revision, updatedAt: 2 }),
      one.sessions.save({ id: 'fresh', agentId: 'a1', messages: [], createdAt: 1, updatedAt: 1 }, { expectedRevision: 0 }),
      two.sessions.save({ id: 'fresh', agentId: 'a1', messages: [{ role: 'user', content: 'x' }], createdAt: 1, updatedAt: 1 }, { expectedRevision: 0 }),
    ]);

    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected']);
    for (const outcome of outcomes) if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(StoreConflictError);
    expect((await one.sessions.get(agent.sessionId))?.messages).toHaveLength(1);
    expect(await one.sessions.revision('fresh')).toBe(1);
  });

  it('numbers events appended at once from two nodes once each, and lists them in the order of their numbers', async () => {
    const [one, two] = await Promise.all([open(), open()]);

    const seqs = await Promise.all(
      Array.from({ length: 20 }, (_, index) => (index % 2 === 0 ? one : two).events.append({ at: index, type: 'tick', agentId: null, data: { index } })),
    );

    expect(new Set(seqs).size).toBe(20);
    expect((await one.events.list()).map((event) => event.seq)).toEqual([...seqs].sort((a, b) => a - b));
  });

  it("appends while another node's append is in flight, and a read waits for that append so it never skips a lower number", async () => {
    const store = await open();
    // Another node's turn commit, its event inserted (its number taken) but not yet committed.
    const other = new pg.Client({ connectionString: database.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      const held = await insertEvent(other, { at: 1, type: 'turn-finish', agentId: null, data: { node: 'other' } }, 'other-node');

      // Appends do not wait for each other: this one commits first, with the higher number.
      const later = await store.events.append({ at: 2, type: 'turn-finish', agentId: null, data: { node: 'this' } });
      expect(later).toBeGreaterThan(held);

      // A read waits for the append in flight, then sees both: one that saw `later` cannot miss `held`.
      const reading = store.events.list({ after: 0 });
      await waitFor(
        'the read to wait for the append in flight',
        async () =>
          (await raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"))[0]?.['n'] === 1,
      );
      await other.query('COMMIT');
      expect((await reading).map((event) => [event.seq, event.data])).toEqual([
        [held, { node: 'other' }],
        [later, { node: 'this' }],
      ]);
    } finally {
      await other.end();
    }
  });

  it('reports a corrupt row as a StoreError naming the table and the row', async () => {
    const store = await open();
    const agent = agentRecord('a1');
    await store.agents.create(agent, sessionOf(agent, { messages: [{ role: 'user', content: 'hi' }] }));
    await raw(`UPDATE agents SET manifest = '{"truncated": ' WHERE id = 'a1'`);
    await raw(`UPDATE session_messages SET message = '{"cut'`);

    await expect(store.agents.get('a1')).rejects.toThrow(/cannot read row id "a1" of table "agents": manifest: invalid JSON/);
    await expect(store.sessions.get(agent.sessionId)).rejects.toThrow(
      `cannot read row session_id "${agent.sessionId}", seq 0 of table "session_messages": message: invalid JSON`,
    );
  });

  it('refuses text PostgreSQL cannot hold (a NUL character) with a StoreError that says so, and keeps one inside JSON', async () => {
    const store = await open();
    const agent = agentRecord('a1');
    await store.agents.create(agent, sessionOf(agent));

    await expect(store.memory.put({ agentId: 'a1', key: 'nul\u0000key', value: 1, updatedAt: 1 })).rejects.toThrow(
      'cannot put memory key "nul\u0000key" of agent "a1": PostgreSQL cannot store text with a NUL character',
    );
    await store.memory.put({ agentId: 'a1', key: 'k', value: 'binary\u0000output', updatedAt: 1 });
    expect((await store.memory.get('a1', 'k'))?.value).toBe('binary\u0000output');
  });

  it('reports another failure as a StoreError naming the database without its password, with the original as cause', async () => {
    const store = await open();

    const error = (await store.usage
      .record({ agentId: 'a1', at: 1.5, model: 'm', inputTokens: 1, outputTokens: 1, costUsd: 0 })
      .catch((reason: unknown) => reason)) as StoreError;

    expect(error).toBeInstanceOf(StoreError);
    expect(error.message).toBe(
      `cannot record usage of agent "a1": invalid input syntax for type bigint: "1.5" (database postgres://postgres@${server.address}/${database.name})`,
    );
    expect(error.cause).toMatchObject({ code: '22P02' });
    expect(await store.usage.list()).toEqual([]);
  });
});

describe('the test PostgreSQL server', () => {
  it('uses the server LOOM_TEST_DATABASE_URL names instead of starting one', async () => {
    const previous = process.env['LOOM_TEST_DATABASE_URL'];
    process.env['LOOM_TEST_DATABASE_URL'] = server.adminUrl;
    try {
      const other = await startTestPostgres();
      expect(other.address).toBe(server.address);
      const { name, url } = await other.createDatabase();
      const store = await openPostgresStore({ url });
      await store.close();
      await other.stop();

      // Stopping it dropped its database and left the server running.
      expect((await server.query('SELECT count(*)::int AS n FROM pg_database WHERE datname = $1', [name])).rows).toEqual([{ n: 0 }]);
    } finally {
      if (previous === undefined) delete process.env['LOOM_TEST_DATABASE_URL'];
      else process.env['LOOM_TEST_DATABASE_URL'] = previous;
    }
  });
});
