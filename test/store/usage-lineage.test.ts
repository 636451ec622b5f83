import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../src/contracts/index.ts';
import { migrations, postgresMigrations } from '../../src/store/index.ts';
import { postgresStoreFrom, sqliteStoreFrom } from '../support/store-from-version.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';

// The lineage of model calls (SQLite schema 27, PostgreSQL 18): the calls of agents alive at the
// migration get theirs from the agents' parents, new calls are recorded with it, and an agent's
// totals with `descendants` add up its own calls and those under it, killed agents' included.

const AGENTS = [
  ['root', null],
  ['kid', 'root'],
  ['grand', 'kid'],
  ['other', null],
] as const;

const call = (agentId: string, at: number, costUsd: number) => ({ agentId, at, model: 'openai/gpt-4o', inputTokens: 10, outputTokens: 1, costUsd });

/** What the store adds up after the migration, with calls recorded since (one by a killed child, two beside the family's prefix). */
async function expectFamilyTotals(store: Store): Promise<void> {
  expect((await store.usage.list({ agentId: 'grand' })).map((usage) => usage.lineage)).toEqual(['root/kid/']);
  expect((await store.usage.list({ agentId: 'other' })).map((usage) => usage.lineage)).toEqual([undefined]);

  await store.usage.record({ ...call('dead', 2_000, 16), lineage: 'root/' });
  const revision = await store.sessions.save(
    { id: 's-other', agentId: 'other', messages: [], createdAt: 2_000, updatedAt: 2_000 },
    { usage: [{ ...call('near', 2_000, 32), lineage: 'root-a/' }] },
  );
  await store.usage.record({ ...call('far', 2_000, 64), lineage: 'rootz/' });
  // A turn's commit: its messages appended at the revision read, with its usage.
  await store.sessions.append('s-other', [{ role: 'user', content: 'hi' }], {
    expectedRevision: revision,
    updatedAt: 3_000,
    usage: [{ ...call('ghost', 3_000, 128), lineage: 'root/kid/' }],
  });

  const root = await store.usage.totals({ since: 0, agentId: 'root', descendants: 'root/' });
  expect(root).toMatchObject({ calls: 5, costUsd: 1 + 2 + 4 + 16 + 128 });
  expect(await store.usage.totals({ since: 0, agentId: 'kid', descendants: 'root/kid/' })).toMatchObject({ calls: 3, costUsd: 2 + 4 + 128 });
  expect(await store.usage.totals({ since: 0, agentId: 'root' })).toMatchObject({ calls: 1, costUsd: 1 });
  await expect(store.usage.totals({ since: 0, agentId: 'root', descendants: 'root' })).rejects.toThrow(
    'cannot total usage of agent "root" and its descendants: descendants must end with "/", got "root"',
  );
}

describe('usage: lineage on SQLite (schema 27)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'loom-usage-lineage-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("gives the calls of live agents their lineage and adds an agent's descendants up by it", async () => {
    const store = await sqliteStoreFrom(join(dir, 'data', 'loom.db'), 26, (db) => {
      const agent = db.prepare(
        `INSERT INTO agents (id, name, state, parent_id, session_id, manifest, created_at, updated_at) VALUES (?, ?, 'running', ?, ?, '{}', 1, 1)`,
      );
      for (const [id, parent] of AGENTS) agent.run(id, id, parent, `s-${id}`);
      const usage = db.prepare('INSERT INTO usage (agent_id, at, model, input_tokens, output_tokens, cost_usd) VALUES (?, 1000, ?, 10, 1, ?)');
      for (const [id, cost] of [
        ['root', 1],
        ['kid', 2],
        ['grand', 4],
        ['other', 8],
      ] as const)
        usage.run(id, 'openai/gpt-4o', cost);
    });
    try {
      expect(store.schemaVersion).toBe(migrations.at(-1)?.version);
      await expectFamilyTotals(store);
    } finally {
      await store.close();
    }
  });
});

describe('usage: lineage on PostgreSQL (schema 18)', () => {
  const server = useTestPostgres();

  it("gives the calls of live agents their lineage and adds an agent's descendants up by it", async () => {
    const { url } = await server.createDatabase();
    const store = await postgresStoreFrom(url, 17, async (pool) => {
      for (const [id, parent] of AGENTS) {
        await pool.query(
          `INSERT INTO agents (id, name, state, parent_id, session_id, manifest, created_at, updated_at) VALUES ($1, $1, 'running', $2, $3, '{}', 1, 1)`,
          [id, parent, `s-${id}`],
        );
      }
      for (const [id, cost] of [
        ['root', 1],
        ['kid', 2],
        ['grand', 4],
        ['other', 8],
      ] as const)
        await pool.query(`INSERT INTO usage (agent_id, at, model, input_tokens, output_tokens, cost_usd) VALUES ($1, 1000, 'openai/gpt-4o', 10, 1, $2)`, [
          id,
          cost,
        ]);
    });
    try {
      expect(store.schemaVersion).toBe(postgresMigrations.at(-1)?.version);
      await expectFamilyTotals(store);
    } finally {
      await store.close();
    }
  }, 60_000);
});
