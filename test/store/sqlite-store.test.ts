import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreConflictError, StoreError } from '../../src/errors/index.ts';
import { applyMigrations, type Migration } from '../../src/store/migrations.ts';
import { migrations, openSqliteStore, type SqliteStore } from '../../src/store/index.ts';
import { agentRecord, describeStoreContract, sessionOf } from './store-contract.ts';

const latestVersion = migrations.at(-1)?.version ?? 0;

describeStoreContract('SQLite file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'loom-store-contract-'));
  const store = openSqliteStore({ path: join(dir, 'loom.db') });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('SqliteStore', () => {
  let dir: string;
  let path: string;
  const opened: SqliteStore[] = [];

  function open(options: { synchronous?: 'normal' | 'full' } = {}): SqliteStore {
    const store = openSqliteStore({ path, ...options });
    opened.push(store);
    return store;
  }

  /** A raw connection to the same file, to see what the store wrote or to tamper with it. */
  function withRawDatabase<T>(work: (db: DatabaseSync) => T): T {
    const db = new DatabaseSync(path);
    try {
      return work(db);
    } finally {
      db.close();
    }
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'loom-sqlite-store-'));
    path = join(dir, 'data', 'loom.db');
  });

  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('creates the missing data folder and puts the file in WAL mode', () => {
    open();

    const mode = withRawDatabase((db) => db.prepare('PRAGMA journal_mode').get()?.['journal_mode']);
    expect(mode).toBe('wal');
  });

  it('migrates a new file to the newest schema version', () => {
    const store = open();

    expect(store.schemaVersion).toBe(latestVersion);
    expect(withRawDatabase((db) => db.prepare('PRAGMA user_version').get()?.['user_version'])).toBe(latestVersion);
    const tables = withRawDatabase((db) =>
      db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all(),
    ).map((row) => row['name']);
    expect(tables).toEqual([
      'a2a_push_configs',
      'agents',
      'approvals',
      'channel_messages',
      'channel_pairings',
      'events',
      'forged_tools',
      'installed_packages',
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

  it('does not re-apply migrations when an existing file is reopened', async () => {
    const first = open();
    const agent = agentRecord('a1');
    await first.agents.create(agent, sessionOf(agent));
    await first.close();

    // Re-running version 1 would fail on CREATE TABLE, so a clean reopen shows it was skipped.
    const second = open();

    expect(second.schemaVersion).toBe(latestVersion);
    expect(await second.agents.list()).toEqual([agent]);
  });

  it('keeps every domain’s data across close and reopen', async () => {
    const first = open({ synchronous: 'full' });
    const agent = agentRecord('a1');
    await first.agents.create(agent, sessionOf(agent));
    await first.agents.setState('a1', 'suspended', 2_000);
    await first.memory.put({ agentId: 'a1', key: 'k', value: { v: 1 }, updatedAt: 3 });
    await first.usage.record({ agentId: 'a1', at: 4, model: 'm', inputTokens: 5, outputTokens: 6, costUsd: 0.5 });
    const seq = await first.events.append({ at: 5, type: 'agent-spawn', agentId: 'a1', data: { ok: true } });
    await first.close();

    const second = open();

    expect(await second.agents.get('a1')).toEqual({ ...agent, state: 'suspended', updatedAt: 2_000 });
    expect(await second.sessions.get(agent.sessionId)).toEqual(sessionOf(agent));
    expect(await second.memory.get('a1', 'k')).toEqual({ agentId: 'a1', key: 'k', value: { v: 1 }, updatedAt: 3 });
    expect(await second.usage.list()).toEqual([{ agentId: 'a1', at: 4, model: 'm', inputTokens: 5, outputTokens: 6, costUsd: 0.5 }]);
    expect(await second.events.list()).toEqual([{ seq, at: 5, type: 'agent-spawn', agentId: 'a1', data: { ok: true } }]);
  });

  it('refuses a file that is not a SQLite database, naming the file', async () => {
    await mkdir(join(dir, 'data'));
    await writeFile(path, 'these are my notes, not a database\n'.repeat(200));

    expect(() => open()).toThrow(StoreError);
    expect(() => open()).toThrow(`cannot open store "${path}": the file is not a SQLite database`);
  });

  it('refuses a path that is a folder, naming it', async () => {
    await mkdir(path, { recursive: true });

    expect(() => open()).toThrow(StoreError);
    expect(() => open()).toThrow(`cannot open store "${path}"`);
  });

  it('refuses a file whose schema version is newer than it knows, and leaves the file alone', async () => {
    await mkdir(join(dir, 'data'));
    withRawDatabase((db) => db.exec(`PRAGMA user_version = ${latestVersion + 98}`));

    expect(() => open()).toThrow(StoreError);
    expect(() => open()).toThrow(
      `cannot open store "${path}": its schema version is ${latestVersion + 98}, but this Loom knows versions up to ${latestVersion}; upgrade Loom`,
    );
    expect(withRawDatabase((db) => db.prepare('SELECT count(*) AS n FROM sqlite_schema').get()?.['n'])).toBe(0);
  });

  it('integrityCheck() reports ["ok"] for a healthy file, and throws once closed', async () => {
    const store = open();
    const agent = agentRecord('a1');
    await store.agents.create(agent, sessionOf(agent));

    expect(store.integrityCheck()).toEqual(['ok']);
    await store.close();
    expect(() => store.integrityCheck()).toThrow(StoreError);
  });

  it('two stores open on the same file see each other’s committed writes', async () => {
    const one = open();
    const two = open();
    const agent = agentRecord('a1');

    await one.agents.create(agent, sessionOf(agent));
    expect(await two.agents.get('a1')).toEqual(agent);
    await two.memory.put({ agentId: 'a1', key: 'k', value: 'from two', updatedAt: 1 });
    expect((await one.memory.get('a1', 'k'))?.value).toBe('from two');
    const first = await one.events.append({ at: 1, type: 'x', agentId: null, data: {} });
    const second = await two.events.append({ at: 1, type: 'x', agentId: null, data: {} });
    expect(second).toBeGreaterThan(first);
    await two.agents.delete(['a1']);
    expect(await one.memory.list('a1')).toEqual([]);
  });

  it('moves the messages of sessions written before migration 4 into rows, in order', async () => {
    await mkdir(join(path, '..'), { recursive: true });
    withRawDatabase((db) => {
      db.exec('PRAGMA foreign_keys = ON');
      applyMigrations(db, path, migrations.slice(0, 3));
      db.exec(
        `INSERT INTO agents (id, name, state, parent_id, session_id, manifest, created_at, updated_at) VALUES ('a1', 'old', 'running', NULL, 's1', '{}', 1, 1)`,
      );
      db.exec(
        `INSERT INTO sessions (id, agent_id, messages, created_at, updated_at) VALUES ('s1', 'a1', '[{"role":"user","content":"one"},{"role":"assistant","content":"two"},"junk"]', 1, 1)`,
      );
    });
    const store = open();
    expect(store.schemaVersion).toBe(latestVersion);
    expect((await store.sessions.get('s1'))?.messages).toEqual([
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'two' },
    ]);
  });

  it('keeps the package runs written before migration 7, which adds skipped and missed runs', async () => {
    await mkdir(join(path, '..'), { recursive: true });
    withRawDatabase((db) => {
      applyMigrations(db, path, migrations.slice(0, 6));
      db.exec(
        `INSERT INTO package_runs (id, package, binding, trigger, status, inputs, activities, emitted, error, started_at, ended_at) VALUES ('r1', 'p', 'b', 'manual', 'completed', '{}', '[]', 'p.done', NULL, 1, 2)`,
      );
    });
    const store = open();
    expect(await store.packageRuns.get('r1')).toMatchObject({ id: 'r1', status: 'completed', emitted: 'p.done', startedAt: 1, endedAt: 2 });
    await store.packageRuns.create({
      id: 'r2',
      package: 'p',
      binding: 'b',
      trigger: 'schedule',
      status: 'missed',
      inputs: {},
      activities: [],
      emitted: null,
      error: '3 fire(s) missed',
      startedAt: 3,
      endedAt: 4,
      nodeId: null,
    });
    expect((await store.packageRuns.list()).map((run) => run.status)).toEqual(['missed', 'completed']);
  });

  it('keeps the turns journaled before migration 23 (their steps, order and keys), and still refuses a key twice', async () => {
    await mkdir(join(path, '..'), { recursive: true });
    withRawDatabase((db) => {
      db.exec('PRAGMA foreign_keys = ON');
      applyMigrations(
        db,
        path,
        migrations.filter((step) => step.version < 23),
      );
      db.exec(
        `INSERT INTO agents (id, name, state, parent_id, session_id, manifest, created_at, updated_at) VALUES ('a1', 'old', 'running', NULL, 's1', '{}', 1, 1)`,
      );
      const turn = db.prepare(
        `INSERT INTO turn_journal (id, agent_id, session_id, conversation, request, idempotency_key, received_at, state, outcome) VALUES (?, 'a1', 's1', NULL, '{"message":"hi"}', ?, 5, ?, NULL)`,
      );
      // Received in the same millisecond: the one written first resumes first.
      turn.run('t-z', null, 'running');
      turn.run('t-a', null, 'running');
      turn.run('t-k', 'key-1', 'done');
      db.exec(
        `INSERT INTO turn_steps (turn_id, seq, kind, at, data) VALUES ('t-z', 0, 'model', 6, '{"text":"one"}'), ('t-z', 1, 'tool-result', 7, '{"text":"two"}')`,
      );
    });
    const store = open();
    expect((await store.turns.running()).map((turn) => [turn.id, turn.steps.map((step) => step.kind)])).toEqual([
      ['t-z', ['model', 'tool-result']],
      ['t-a', []],
    ]);
    expect((await store.turns.byKey('a1', 'key-1'))?.state).toBe('done');
    await expect(
      store.turns.open({ id: 't-k2', agentId: 'a1', sessionId: 's1', conversation: null, request: {}, idempotencyKey: 'key-1', receivedAt: 9 }),
    ).rejects.toBeInstanceOf(StoreConflictError);
    await store.turns.finish({ turnId: 't-z', outcome: { status: 'finished', result: null } }, 10);
    expect((await store.turns.running()).map((turn) => turn.id)).toEqual(['t-a']);
  });

  it("forgets a day's keyed turns a part at a time, letting other work run meanwhile", async () => {
    const store = open();
    withRawDatabase((db) => {
      db.exec(
        `INSERT INTO agents (id, name, state, parent_id, session_id, manifest, created_at, updated_at) VALUES ('a1', 'busy', 'running', NULL, 's1', '{}', 1, 1)`,
      );
      const turn = db.prepare(
        `INSERT INTO turn_journal (id, agent_id, session_id, conversation, request, idempotency_key, received_at, state, outcome, finished_at) VALUES (?, 'a1', 's1', NULL, '{"message":"hi"}', ?, ?, 'done', '{"status":"finished"}', ?)`,
      );
      db.exec('BEGIN');
      for (let index = 0; index < 2_000; index += 1) turn.run(`t-${index}`, `key-${index}`, index, index + 1);
      db.exec('COMMIT');
    });
    // Work that asks for the event loop again and again while the prune runs.
    let turnsOfTheLoop = 0;
    let pruning = true;
    const tick = (): void => {
      turnsOfTheLoop += 1;
      if (pruning) setImmediate(tick);
    };
    setImmediate(tick);
    expect(await store.turns.prune(1_501)).toBe(1_500);
    pruning = false;
    // Let through between the parts, not once at the end.
    expect(turnsOfTheLoop).toBeGreaterThanOrEqual(10);
    expect((await store.turns.byKey('a1', 'key-1500'))?.state).toBe('done');
  });

  it('reports a corrupt row as a StoreError naming the table and the row', async () => {
    const store = open();
    const agent = agentRecord('a1');
    await store.agents.create(agent, sessionOf(agent, { messages: [{ role: 'user', content: 'hi' }] }));
    await store.memory.put({ agentId: 'a1', key: 'k', value: 1, updatedAt: 1 });
    withRawDatabase((db) => {
      db.exec(`UPDATE agents SET manifest = '{"truncated": ' WHERE id = 'a1'`);
      db.exec(`UPDATE session_messages SET message = '{"cut' `);
      db.exec(`UPDATE memory SET value = 'nope'`);
    });

    await expect(store.agents.get('a1')).rejects.toThrow(/cannot read row id "a1" of table "agents": manifest: invalid JSON/);
    await expect(store.agents.list()).rejects.toBeInstanceOf(StoreError);
    await expect(store.sessions.get(agent.sessionId)).rejects.toThrow(
      `cannot read row session_id "${agent.sessionId}", seq 0 of table "session_messages": message: invalid JSON`,
    );
    await expect(store.memory.list('a1')).rejects.toThrow('row agent_id "a1", key "k" of table "memory"');
  });

  it('refuses a limit that is not a non-negative integer', async () => {
    const store = open();

    await expect(store.events.list({ limit: -1 })).rejects.toThrow('cannot list events: limit must be a non-negative integer, got -1');
    await expect(store.usage.list({ limit: 1.5 })).rejects.toBeInstanceOf(StoreError);
  });

  it('reports another SQLite failure as a StoreError with the original as cause', async () => {
    const store = open();

    const attempt = store.usage.record({ agentId: 'a1', at: 1.5, model: 'm', inputTokens: 1, outputTokens: 1, costUsd: 0 });

    const error = await attempt.then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).cause).toMatchObject({ code: 'ERR_SQLITE_ERROR' });
    expect(await store.usage.list()).toEqual([]);
  });
});

describe('applyMigrations()', () => {
  it('rolls back a failing migration entirely and leaves the previous version', () => {
    const db = new DatabaseSync(':memory:');
    const steps: Migration[] = [
      { version: 1, name: 'first', sql: 'CREATE TABLE one (x INTEGER) STRICT;' },
      { version: 2, name: 'broken', sql: 'CREATE TABLE two (x INTEGER) STRICT; INSERT INTO missing VALUES (1);' },
    ];
    try {
      expect(() => applyMigrations(db, 'test.db', steps)).toThrow(
        'cannot migrate store "test.db" to schema version 2 (broken): no such table: missing; the database stays at version 1',
      );
      expect(db.prepare('PRAGMA user_version').get()?.['user_version']).toBe(1);
      const tables = db
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
        .all()
        .map((row) => row['name']);
      expect(tables).toEqual(['one']);
      expect(db.isTransaction).toBe(false);
    } finally {
      db.close();
    }
  });

  it('applies only the steps above the current version', () => {
    const db = new DatabaseSync(':memory:');
    const first: Migration = { version: 1, name: 'first', sql: 'CREATE TABLE one (x INTEGER) STRICT;' };
    const second: Migration = { version: 2, name: 'second', sql: 'CREATE TABLE two (x INTEGER) STRICT;' };
    try {
      expect(applyMigrations(db, 'test.db', [first])).toBe(1);
      expect(applyMigrations(db, 'test.db', [first, second])).toBe(2);
      expect(applyMigrations(db, 'test.db', [first, second])).toBe(2);
    } finally {
      db.close();
    }
  });

  it('refuses a migration list that is out of order', () => {
    const db = new DatabaseSync(':memory:');
    try {
      expect(() =>
        applyMigrations(db, 'test.db', [
          { version: 2, name: 'b', sql: '' },
          { version: 1, name: 'a', sql: '' },
        ]),
      ).toThrow('migration "a" has version 1, expected an integer above 2');
    } finally {
      db.close();
    }
  });
});
