import { describe, expect, it } from 'vitest';
import type { AgentRecord, SessionRecord, Store, UsageRecord, UsageTotals } from '../../src/contracts/index.ts';
import { openPostgresStore, postgresMigrations } from '../../src/store/index.ts';
import { postgresStoreFrom } from '../support/store-from-version.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';
import { agentRecord, sessionOf } from './contract/fixtures.ts';

// The running totals of agents' families on PostgreSQL (schema 20): filled from the usage rows
// written before the migration, kept by the database at every insert since (a node of an older
// version's too, and inserts of several nodes at once), and equal to the sums of the rows.

const server = useTestPostgres();

const AGENTS = [
  ['root', null],
  ['kid', 'root'],
  ['grand', 'kid'],
  ['other', null],
] as const;
const FAMILIES = [
  { agentId: 'root', descendants: 'root/' },
  { agentId: 'kid', descendants: 'root/kid/' },
  { agentId: 'grand', descendants: 'root/kid/grand/' },
  { agentId: 'dead', descendants: 'root/dead/' },
  { agentId: 'other', descendants: 'other/' },
  { agentId: 'nobody', descendants: 'nobody/' },
];

/** The families' running totals beside the sums of their rows: tokens and calls equal, dollars to float's rounding (added in another order). */
async function expectTotalsAsSums(store: Store): Promise<UsageTotals[]> {
  const totals = await store.usage.familyTotals(FAMILIES);
  const sums = await Promise.all(FAMILIES.map((family) => store.usage.totals({ since: 0, ...family })));
  // Dollars within float's rounding: the sum has it too (it adds the rows in the order it finds them).
  expect(totals).toEqual(sums.map((sum) => ({ ...sum, costUsd: expect.closeTo(sum.costUsd, 9) as number })));
  return totals;
}

describe("usage: running totals of agents' families on PostgreSQL (schema 20)", () => {
  it('fills the totals from the rows written before the migration, NULL lineages counting for their own agent only', async () => {
    const { url } = await server.createDatabase();
    const store = await postgresStoreFrom(url, 19, async (pool) => {
      for (const [id, parent] of AGENTS)
        await pool.query(
          `INSERT INTO agents (id, name, state, parent_id, session_id, manifest, created_at, updated_at) VALUES ($1, $1, 'running', $2, $3, '{}', 1, 1)`,
          [id, parent, `s-${id}`],
        );
      // 1,000 calls of each at $0.001 (float's rounding shows), with their lineage; a child killed before
      // schema 18 (no lineage: it counts for nobody above it), and kid's calls of a node that wrote none.
      await pool.query(`INSERT INTO usage (agent_id, at, model, input_tokens, output_tokens, cache_read_tokens, cost_usd, lineage)
        SELECT agent.id, i, 'openai/gpt-4o', i, 2 * i, i % 3, 0.001, agent.lineage
        FROM (VALUES ('root', NULL), ('kid', 'root/'), ('grand', 'root/kid/'), ('dead', NULL), ('kid', NULL), ('other', NULL)) AS agent (id, lineage),
          generate_series(1, 1000) AS i`);
    });
    try {
      expect(store.schemaVersion).toBe(postgresMigrations.at(-1)?.version);
      const totals = await expectTotalsAsSums(store);
      expect(totals.map((total) => total.calls)).toEqual([3_000, 3_000, 1_000, 1_000, 1_000, 0]);
      expect(totals[0]).toMatchObject({ inputTokens: 3 * 500_500, outputTokens: 6 * 500_500, cacheReadTokens: 3 * 1_000 });
      expect(totals[0]?.costUsd).toBeCloseTo(3, 9);
      expect(totals[5]).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 });
    } finally {
      await store.close();
    }
  }, 60_000);

  it('counts every insert since: a turn commit, usage written alone, and a node of an older version that writes no lineage', async () => {
    const { name, url } = await server.createDatabase();
    const store = await openPostgresStore({ url });
    try {
      for (const [id, parent] of AGENTS) await store.agents.create(agentOf(id, parent), session(id));
      await store.usage.record(call('grand', 1, 'root/kid/'));
      const revision = await store.sessions.save(session('kid'), { usage: [call('kid', 2, 'root/')] });
      await store.sessions.append('s-kid', [{ role: 'assistant', content: 'done' }], {
        expectedRevision: revision,
        updatedAt: 3,
        usage: [call('kid', 4, 'root/'), call('dead', 8, 'root/'), call('root', 16)],
      });
      // What a node still on schema 17's code writes during a rolling upgrade: no lineage column.
      await server.query(
        `INSERT INTO usage (agent_id, at, model, input_tokens, output_tokens, cost_usd) VALUES ('grand', 5, 'openai/gpt-4o', 1, 1, 32)`,
        [],
        name,
      );

      const totals = await expectTotalsAsSums(store);
      expect(totals.map((total) => total.costUsd)).toEqual([1 + 2 + 4 + 8 + 16, 1 + 2 + 4, 1 + 32, 8, 0, 0]);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('counts exactly what nodes insert at once into the same families, each statement waiting for the others', async () => {
    const { url } = await server.createDatabase();
    const nodes = [await openPostgresStore({ url, poolSize: 4 }), await openPostgresStore({ url, poolSize: 4 })];
    try {
      const first = nodes[0] as Store;
      for (const [id, parent] of AGENTS) await first.agents.create(agentOf(id, parent), session(id));
      // Each write adds to root's, kid's and grand's totals, in an order of its own.
      const lines = [
        [call('grand', 1, 'root/kid/'), call('kid', 2, 'root/'), call('root', 4)],
        [call('root', 4), call('kid', 2, 'root/'), call('grand', 1, 'root/kid/')],
        [call('kid', 2, 'root/'), call('grand', 1, 'root/kid/'), call('other', 8)],
      ];
      await Promise.all(
        nodes.flatMap((node, n) =>
          Array.from({ length: 30 }, async (_, i) => {
            const usage = lines[i % lines.length] ?? [];
            const id = `s-${n}-${i}`;
            if (i % 2 === 0) await node.sessions.save({ id, agentId: 'other', messages: [], createdAt: 1, updatedAt: 1 }, { usage });
            else for (const record of usage) await node.usage.record(record);
          }),
        ),
      );

      const totals = await expectTotalsAsSums(first);
      expect(totals.map((total) => total.calls)).toEqual([160, 120, 60, 0, 20, 0]);
      expect(totals.map((total) => total.costUsd)).toEqual([7 * 40 + 3 * 20, 3 * 60, 60, 0, 8 * 20, 0]);
    } finally {
      for (const node of nodes) await node.close();
    }
  }, 60_000);
});

function agentOf(id: string, parentId: string | null): AgentRecord {
  return agentRecord(id, { parentId, sessionId: `s-${id}` });
}

function session(agentId: string): SessionRecord {
  return sessionOf(agentOf(agentId, null));
}

function call(agentId: string, costUsd: number, lineage?: string): UsageRecord {
  return { agentId, at: 1_000, model: 'openai/gpt-4o', inputTokens: 10, outputTokens: 1, costUsd, ...(lineage === undefined ? {} : { lineage }) };
}
