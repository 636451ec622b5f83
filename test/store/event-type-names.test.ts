import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/contracts/index.ts';
import { migrations, postgresMigrations } from '../../src/store/index.ts';
import { AUDIT_KINDS, EVENT_TYPES, RENAMED_EVENT_TYPES } from '../../src/wire/index.ts';
import { postgresStoreFrom, sqliteStoreFrom } from '../support/store-from-version.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';

// Event types in one tense (decision 0072; SQLite schema 25, PostgreSQL 16): rows the audit log
// stored under the old names read back under the new ones, so a filter by type or kind finds old
// rows and new alike; rows of other types are left as they were.

const OLD_NAMES = Object.keys(RENAMED_EVENT_TYPES);
/** One row per old name, in that order, then a row of a type that kept its name. */
const OLD_ROWS = [
  ...OLD_NAMES.map((type, index) => ({ type, at: 1_000 + index, data: JSON.stringify({ name: 'old', row: index }) })),
  { type: 'agent-spawn', at: 2_000, data: '{"name":"old"}' },
];

/** What a store migrated from the old rows reads back, and what a filter by the new names finds. */
async function expectRenamed(store: Store): Promise<void> {
  const rows = await store.events.list();
  expect(rows.map((row) => row.type)).toEqual([...Object.values(RENAMED_EVENT_TYPES), 'agent-spawn']);
  expect(rows.map((row) => row.data)).toEqual(OLD_ROWS.map((row) => JSON.parse(row.data) as unknown));
  expect(rows.every((row) => Object.hasOwn(EVENT_TYPES, row.type))).toBe(true);

  // A new row under the new name sits beside the migrated one: a filter by a kind finds both.
  await store.events.append({ type: 'tool-deny', at: 3_000, agentId: null, data: { name: 'new' } });
  const refusals = await store.events.list({ types: AUDIT_KINDS.refusal });
  expect(refusals.map((row) => [row.type, row.data['name']])).toEqual([
    ['tool-deny', 'old'],
    ['tool-reject', 'old'],
    ['tool-block', 'old'],
    ['channel-refuse', 'old'],
    ['tool-deny', 'new'],
  ]);
  expect(await store.events.list({ types: OLD_NAMES })).toEqual([]);
}

describe('event types renamed on SQLite (schema 25)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'loom-event-names-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads the rows a store at schema 23 holds under the old names by the new ones', async () => {
    const store = await sqliteStoreFrom(join(dir, 'data', 'loom.db'), 23, (db) => {
      const insert = db.prepare('INSERT INTO events (at, type, agent_id, data) VALUES (?, ?, NULL, ?)');
      for (const row of OLD_ROWS) insert.run(row.at, row.type, row.data);
    });
    try {
      expect(store.schemaVersion).toBe(migrations.at(-1)?.version);
      await expectRenamed(store);
    } finally {
      await store.close();
    }
  });
});

describe('event types renamed on PostgreSQL (schema 16)', () => {
  const server = useTestPostgres();

  it('reads the rows a store at schema 14 holds under the old names by the new ones', async () => {
    const { url } = await server.createDatabase();
    const store = await postgresStoreFrom(url, 14, async (pool) => {
      for (const row of OLD_ROWS) await pool.query('INSERT INTO events (at, type, agent_id, data) VALUES ($1, $2, NULL, $3)', [row.at, row.type, row.data]);
    });
    try {
      expect(store.schemaVersion).toBe(postgresMigrations.at(-1)?.version);
      await expectRenamed(store);
    } finally {
      await store.close();
    }
  }, 60_000);
});
