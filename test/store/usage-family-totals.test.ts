import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { AgentRecord, SessionRecord, Store, UsageRecord, UsageTotals } from '../../src/contracts/index.ts';
import { StoreError } from '../../src/errors/index.ts';
import { openPostgresStore, postgresMigrations } from '../../src/store/index.ts';
import { SEED_LOCK_TIMEOUT_MS } from '../../src/store/postgres-usage-repository.ts';
import { postgresStoreFrom } from '../support/store-from-version.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';
import { waitFor } from '../support/wait-for.ts';
import { agentRecord, sessionOf } from './contract/fixtures.ts';

// The running totals of capped agents' families on PostgreSQL (schema 20): seeded at a family's
// first read from its usage rows (those written before the migration too), kept by the database at
// every insert since (a node of an older version's too, and inserts of several nodes at once), equal
// to the sums of the rows; a family never read (no cap) has none, and its usage writes nothing there.

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

/** The agents that have a row of totals (a family read, so seeded). */
async function keptFamilies(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ agent_id: string }>('SELECT agent_id FROM loom_family_usage ORDER BY agent_id');
    return rows.map((row) => row.agent_id);
  } finally {
    await client.end();
  }
}

describe("usage: running totals of capped agents' families on PostgreSQL (schema 20)", () => {
  it('seeds a family at its first read from the rows written before the migration, NULL lineages counting for their own agent only', async () => {
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
      // The migration fills nothing: only a read knows a family is capped.
      expect(await keptFamilies(url)).toEqual([]);
      const totals = await expectTotalsAsSums(store);
      expect(await keptFamilies(url)).toEqual(['dead', 'grand', 'kid', 'nobody', 'other', 'root']);
      expect(totals.map((total) => total.calls)).toEqual([3_000, 3_000, 1_000, 1_000, 1_000, 0]);
      expect(totals[0]).toMatchObject({ inputTokens: 3 * 500_500, outputTokens: 6 * 500_500, cacheReadTokens: 3 * 1_000 });
      expect(totals[0]?.costUsd).toBeCloseTo(3, 9);
      expect(totals[5]).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: 0, calls: 0 });
    } finally {
      await store.close();
    }
  }, 60_000);

  it('counts every insert into a read family since: a turn commit, usage written alone, a node of an older version that writes no lineage', async () => {
    const { name, url } = await server.createDatabase();
    const store = await openPostgresStore({ url });
    try {
      for (const [id, parent] of AGENTS) await store.agents.create(agentOf(id, parent), session(id));
      await store.usage.record(call('kid', 64, 'root/'));
      await expectTotalsAsSums(store);
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
      expect(totals.map((total) => total.costUsd)).toEqual([64 + 1 + 2 + 4 + 8 + 16, 64 + 1 + 2 + 4, 1 + 32, 8, 0, 0]);
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
      await expectTotalsAsSums(first);
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

  it("writes no totals for a family no cap read: an uncapped family's usage leaves loom_family_usage as it was", async () => {
    const { url } = await server.createDatabase();
    const store = await openPostgresStore({ url });
    try {
      for (const [id, parent] of AGENTS) await store.agents.create(agentOf(id, parent), session(id));
      await store.usage.familyTotals([{ agentId: 'other', descendants: 'other/' }]);
      const revision = await store.sessions.save(session('kid'), { usage: [call('kid', 2, 'root/')] });
      await store.sessions.append('s-kid', [], { expectedRevision: revision, updatedAt: 3, usage: [call('grand', 4, 'root/kid/'), call('root', 1)] });
      await store.usage.record(call('other', 8));

      expect(await keptFamilies(url)).toEqual(['other']);
      const [other] = await store.usage.familyTotals([{ agentId: 'other', descendants: 'other/' }]);
      expect(other?.costUsd).toBe(8);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('seeds a family exactly while another node inserts its usage: a row uncommitted at the read is waited for, none counted twice', async () => {
    const { name, url } = await server.createDatabase();
    const [reader, writer] = [await openPostgresStore({ url, poolSize: 4 }), await openPostgresStore({ url, poolSize: 4 })];
    const open = new pg.Client({ connectionString: url });
    await open.connect();
    try {
      await writer.usage.record(call('kid', 1, 'root/'));
      // A turn of the other node has inserted its usage and not committed yet.
      await open.query('BEGIN');
      await open.query(
        `INSERT INTO usage (agent_id, at, model, input_tokens, output_tokens, cost_usd, lineage) VALUES ('grand', 1, 'm', 1, 1, 2, 'root/kid/')`,
      );
      const read = reader.usage.familyTotals(FAMILIES.slice(0, 2));
      await waitFor('the seed to wait for the open insert', async () => {
        // Another connection: one in a transaction sees the activity as it was when it first looked.
        const { rows } = await server.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'LOCK TABLE usage%'", [], name);
        return rows.length === 1;
      });
      // Meanwhile the writer goes on: its inserts wait for the seed, then add to the seeded totals.
      let writing = true;
      const writes = Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let i = 0; writing || i < 5; i += 1) await writer.usage.record(call(i % 2 === 0 ? 'grand' : 'kid', 4, i % 2 === 0 ? 'root/kid/' : 'root/'));
        }),
      );
      await open.query('COMMIT');
      const seeded = await read;
      writing = false;
      await writes;

      // The seed holds the row committed while it waited; the writes after it, the trigger adds.
      expect(seeded.map((total) => total.costUsd)).toEqual([1 + 2, 1 + 2]);
      await expectTotalsAsSums(reader);
    } finally {
      await open.end();
      for (const node of [reader, writer]) await node.close();
    }
  }, 60_000);

  it('fails a first read retryable, without holding the other writers, when a writer keeps usage locked past SEED_LOCK_TIMEOUT_MS', async () => {
    const { url } = await server.createDatabase();
    const store = await openPostgresStore({ url, poolSize: 4 });
    const open = new pg.Client({ connectionString: url });
    await open.connect();
    try {
      await store.usage.record(call('kid', 1, 'root/'));
      // A transaction left open after its insert into usage.
      await open.query('BEGIN');
      await open.query(`INSERT INTO usage (agent_id, at, model, input_tokens, output_tokens, cost_usd, lineage) VALUES ('kid', 1, 'm', 1, 1, 2, 'root/')`);
      const started = Date.now();
      const failed = await store.usage.familyTotals(FAMILIES.slice(0, 2)).then(
        () => undefined,
        (error: unknown) => error as StoreError,
      );
      expect(failed).toBeInstanceOf(StoreError);
      expect(failed?.isRetryable).toBe(true);
      expect(failed?.message).toContain('another writer holds the rows it needs');
      expect(Date.now() - started).toBeGreaterThanOrEqual(SEED_LOCK_TIMEOUT_MS - 100);
      // The lock given up, other writers go on at once; the family is seeded at its next read.
      await store.usage.record(call('kid', 4, 'root/'));
      await open.query('ROLLBACK');
      expect((await store.usage.familyTotals(FAMILIES.slice(0, 2))).map((total) => total.costUsd)).toEqual([5, 5]);
    } finally {
      await open.end();
      await store.close();
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
