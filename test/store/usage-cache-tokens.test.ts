import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/contracts/index.ts';
import { migrations, postgresMigrations } from '../../src/store/index.ts';
import { postgresStoreFrom, sqliteStoreFrom } from '../support/store-from-version.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';

// The cached input tokens of model calls (SQLite schema 15, PostgreSQL 7): a call recorded before
// them reads back as it was, one recorded with them keeps them, and the sums add them up.

const cached = {
  agentId: 'a1',
  at: 2_000,
  model: 'anthropic/claude-sonnet-4-5',
  inputTokens: 1_000,
  outputTokens: 50,
  cacheReadTokens: 900,
  cacheWriteTokens: 60,
  costUsd: 0.002,
};
const older = { agentId: 'a1', at: 1_000, model: 'anthropic/claude-sonnet-4-5', inputTokens: 100, outputTokens: 10, costUsd: 0.0005 };

/** What a store reads back of a call recorded before the migration, and of one recorded with cached tokens after it. */
async function expectCachedTokens(store: Store): Promise<void> {
  await store.usage.record(cached);
  await store.sessions.save(
    { id: 's1', agentId: 'a1', messages: [], createdAt: 3_000, updatedAt: 3_000 },
    { usage: [{ ...cached, at: 3_000, cacheReadTokens: 10, cacheWriteTokens: 0 }] },
  );
  expect(await store.usage.list()).toEqual([older, cached, { ...cached, at: 3_000, cacheReadTokens: 10, cacheWriteTokens: undefined }]);
  const { costUsd, ...totals } = await store.usage.totals({ since: 0 });
  expect(totals).toEqual({ inputTokens: 2_100, outputTokens: 110, cacheReadTokens: 910, cacheWriteTokens: 60, calls: 3 });
  expect(costUsd).toBeCloseTo(0.0045, 10);
  expect(await store.usage.series({ since: 0, until: 4_000, stepMs: 4_000 })).toMatchObject([{ cacheReadTokens: 910, cacheWriteTokens: 60, calls: 3 }]);
}

describe('usage: cached input tokens on SQLite (schema 15)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'loom-usage-cache-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the calls recorded at schema 14 and records the cached tokens of new ones', async () => {
    const store = await sqliteStoreFrom(join(dir, 'data', 'loom.db'), 14, (db) => {
      db.exec(
        `INSERT INTO agents (id, name, state, parent_id, session_id, manifest, created_at, updated_at) VALUES ('a1', 'old', 'running', NULL, 's1', '{}', 1, 1)`,
      );
      db.prepare('INSERT INTO usage (agent_id, at, model, input_tokens, output_tokens, cost_usd) VALUES (?, ?, ?, ?, ?, ?)').run(
        older.agentId,
        older.at,
        older.model,
        older.inputTokens,
        older.outputTokens,
        older.costUsd,
      );
    });
    try {
      expect(store.schemaVersion).toBe(migrations.at(-1)?.version);
      await expectCachedTokens(store);
    } finally {
      await store.close();
    }
  });
});

describe('usage: cached input tokens on PostgreSQL (schema 7)', () => {
  const server = useTestPostgres();

  it('keeps the calls recorded at schema 6 and records the cached tokens of new ones', async () => {
    const { url } = await server.createDatabase();
    const store = await postgresStoreFrom(url, 6, async (pool) => {
      await pool.query(
        `INSERT INTO agents (id, name, state, parent_id, session_id, manifest, created_at, updated_at) VALUES ('a1', 'old', 'running', NULL, 's1', '{}', 1, 1)`,
      );
      await pool.query('INSERT INTO usage (agent_id, at, model, input_tokens, output_tokens, cost_usd) VALUES ($1, $2, $3, $4, $5, $6)', [
        older.agentId,
        older.at,
        older.model,
        older.inputTokens,
        older.outputTokens,
        older.costUsd,
      ]);
    });
    try {
      expect(store.schemaVersion).toBe(postgresMigrations.at(-1)?.version);
      await expectCachedTokens(store);
    } finally {
      await store.close();
    }
  }, 60_000);
});
