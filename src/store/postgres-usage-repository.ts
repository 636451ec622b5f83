import type { UsageBucket, UsageRecord, UsageRepository, UsageTotals } from '../contracts/index.ts';
import { StoreError } from '../errors/index.ts';
import { type NamedStatement, type Parameter, type PostgresConnection, type Queryable, query, queryNamed } from './postgres-connection.ts';
import { checkLimit, familiesAction, lineageRange, parseRow, type Row } from './rows.ts';
import { usageBucketRow, usageRow, usageTotalsRow } from './table-rows.ts';

/** How long a family's first read waits for the writers of usage before it fails, retryable (milliseconds). */
export const SEED_LOCK_TIMEOUT_MS = 3_000;
const columns = 'id, agent_id, at, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, lineage';
// sum() of BIGINT is NUMERIC (read back as text): cast back, as no total comes near 2^63.
const sums = `coalesce(sum(input_tokens), 0)::bigint AS input_tokens, coalesce(sum(output_tokens), 0)::bigint AS output_tokens,
  coalesce(sum(cache_read_tokens), 0)::bigint AS cache_read_tokens, coalesce(sum(cache_write_tokens), 0)::bigint AS cache_write_tokens,
  coalesce(sum(cost_usd), 0)::double precision AS cost_usd, count(*) AS calls`;

/**
 * The lifetime totals of the families of agents `$1` (an array), in its order: each agent's row of
 * `loom_family_usage` (PostgreSQL migration 20), which the database keeps with the usage rows once
 * seeded, zeros and `kept` false for an agent without one. Prepared: it runs before every model call
 * of a capped family.
 */
const FAMILY_TOTALS: NamedStatement = {
  name: 'loom_family_totals',
  text: `SELECT coalesce(total.input_tokens, 0) AS input_tokens, coalesce(total.output_tokens, 0) AS output_tokens,
      coalesce(total.cache_read_tokens, 0) AS cache_read_tokens, coalesce(total.cache_write_tokens, 0) AS cache_write_tokens,
      coalesce(total.cost_usd, 0) AS cost_usd, coalesce(total.calls, 0) AS calls, total.agent_id IS NOT NULL AS kept
    FROM unnest($1::text[]) WITH ORDINALITY AS family (agent_id, ordinality)
    LEFT JOIN loom_family_usage AS total ON total.agent_id = family.agent_id COLLATE "C"
    ORDER BY family.ordinality`,
};

/**
 * Seeds the totals of the families of agents `$1` from their usage rows (theirs, and those whose
 * lineage lies in `$2[i]` to `$3[i]`), in key order; a row another node seeded meanwhile is kept.
 * Run under a SHARE lock on usage: no insert runs meanwhile, so the sum holds every row committed
 * before it and the trigger adds every row after.
 */
const SEED_FAMILY_TOTALS = `INSERT INTO loom_family_usage (agent_id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, calls)
  SELECT family.agent_id, total.* FROM unnest($1::text[], $2::text[], $3::text[]) AS family (agent_id, low, high)
  CROSS JOIN LATERAL (SELECT ${sums} FROM usage WHERE agent_id = family.agent_id OR (lineage >= family.low AND lineage < family.high)) AS total
  ORDER BY family.agent_id COLLATE "C"
  ON CONFLICT (agent_id) DO NOTHING`;

/**
 * `records` as nine arrays, one per column, in the order `usage (agent_id, at, model,
 * input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, lineage)`: the
 * values of an `INSERT … SELECT FROM unnest(…)` (here and in a turn's commit).
 */
export function usageColumnArrays(records: readonly UsageRecord[]): Parameter[] {
  return [
    records.map((record) => record.agentId),
    records.map((record) => record.at),
    records.map((record) => record.model),
    records.map((record) => record.inputTokens),
    records.map((record) => record.outputTokens),
    records.map((record) => record.cacheReadTokens ?? 0),
    records.map((record) => record.cacheWriteTokens ?? 0),
    records.map((record) => record.costUsd),
    records.map((record) => record.lineage ?? null),
  ];
}

/**
 * Records usage in one statement, in order. Shared with the session repository, which records a
 * turn's usage in the transaction that saves its messages. The insert adds to the totals of the
 * capped families it counts in (`loom_family_usage`, by a trigger; an uncapped family has none),
 * whose rows it locks to its transaction's end: a transaction locks no other row after it (it
 * would wait for a turn's commit waiting for those totals), as a turn's commit adds to them last.
 */
export async function recordUsage(db: Queryable, records: readonly UsageRecord[]): Promise<void> {
  if (records.length === 0) return;
  await query(
    db,
    `INSERT INTO usage (agent_id, at, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, lineage)
     SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::double precision[], $9::text[])`,
    usageColumnArrays(records),
  );
}

/** `UsageRepository` on PostgreSQL. `agent_id` and `model` are `COLLATE "C"`, so buckets sort as SQLite sorts them. */
export class PostgresUsageRepository implements UsageRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  record(usage: UsageRecord): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await recordUsage(db, [usage]);
      },
      () => ({ action: `record usage of agent "${usage.agentId}"` }),
    );
  }

  totals(options: { since: number; agentId?: string; descendants?: string }): Promise<UsageTotals> {
    const { since, agentId, descendants } = options;
    const action = agentId === undefined ? 'total usage' : `total usage of agent "${agentId}"${descendants === undefined ? '' : ' and its descendants'}`;
    return this.#connection.execute(
      async (db) => {
        let result;
        if (agentId === undefined) result = await query(db, `SELECT ${sums} FROM usage WHERE at >= $1`, [since]);
        else if (descendants === undefined) result = await query(db, `SELECT ${sums} FROM usage WHERE agent_id = $1 AND at >= $2`, [agentId, since]);
        else {
          // The agent's rows, then its descendants' by their lineage's prefix (each from its own index).
          const [from, to] = lineageRange(descendants, action);
          result = await query(db, `SELECT ${sums} FROM usage WHERE at >= $2 AND (agent_id = $1 OR (lineage >= $3 AND lineage < $4))`, [
            agentId,
            since,
            from,
            to,
          ]);
        }
        return parseRow(usageTotalsRow, result.rows[0] ?? {}, 'usage', []);
      },
      () => ({ action }),
    );
  }

  familyTotals(families: readonly { agentId: string; descendants: string }[]): Promise<UsageTotals[]> {
    const action = familiesAction(families);
    return this.#connection.execute(
      async (db) => {
        // Kept by agent: a row counts for its agent and each agent its lineage names, which is the agent's
        // descendants' prefix (agents never move), so `descendants` serves only to seed.
        const ranges = families.map((family) => lineageRange(family.descendants, action));
        if (families.length === 0) return [];
        const ids = families.map((family) => family.agentId);
        let { rows } = await queryNamed(db, FAMILY_TOTALS, [ids]);
        const unseeded = ids.flatMap((_, index) => (rows[index]?.['kept'] === true ? [] : [index]));
        if (unseeded.length > 0) {
          // A family read the first time (no cap had read it): its total seeded once from its rows.
          rows = await this.#connection.transaction(async (client) => {
            // Every insert into usage waits behind the lock asked for: a writer that holds it long (a transaction left
            // open) fails the read, retryable, after SEED_LOCK_TIMEOUT_MS rather than stall the cluster's commits.
            await query(client, `SET LOCAL lock_timeout = ${SEED_LOCK_TIMEOUT_MS}`);
            await query(client, 'LOCK TABLE usage IN SHARE MODE');
            await query(client, SEED_FAMILY_TOTALS, [
              unseeded.map((index) => ids[index] ?? ''),
              ...[0, 1].map((end) => unseeded.map((index) => ranges[index]?.[end] ?? '')),
            ]);
            return (await queryNamed(client, FAMILY_TOTALS, [ids])).rows;
          });
        }
        return rows.map((row) => parseRow(usageTotalsRow, row, 'loom_family_usage', []));
      },
      () => ({ action }),
    );
  }

  list(options: { since?: number; agentId?: string; limit?: number } = {}): Promise<UsageRecord[]> {
    const { since, agentId } = options;
    const action = agentId === undefined ? 'list usage' : `list usage of agent "${agentId}"`;
    return this.#connection.execute(
      async (db) => {
        const limit = checkLimit(options.limit, action) ?? null;
        const where: string[] = [];
        const values: Parameter[] = [];
        if (agentId !== undefined) where.push(`agent_id = $${values.push(agentId)}`);
        if (since !== undefined) where.push(`at >= $${values.push(since)}`);
        const clause = where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
        const { rows } = await query(db, `SELECT ${columns} FROM usage ${clause} ORDER BY at, id LIMIT $${values.push(limit)}`, values);
        return rows.map(parseUsage);
      },
      () => ({ action }),
    );
  }

  series(options: { since: number; until: number; stepMs: number; agentId?: string }): Promise<UsageBucket[]> {
    const { since, until, stepMs, agentId } = options;
    const action = agentId === undefined ? 'add usage up over time' : `add usage of agent "${agentId}" up over time`;
    return this.#connection.execute(
      async (db) => {
        if (!Number.isSafeInteger(stepMs) || stepMs <= 0) throw new StoreError(`cannot ${action}: stepMs must be a positive integer, got ${stepMs}`);
        if (!Number.isSafeInteger(since) || !Number.isSafeInteger(until))
          throw new StoreError(`cannot ${action}: since and until must be integers, got ${since} and ${until}`);
        // Integer division puts a record in the bucket its time falls in: since + n * step.
        const text = `SELECT ($1::bigint + ((at - $1::bigint) / $2::bigint) * $2::bigint) AS start, agent_id, model, ${sums}
          FROM usage WHERE at >= $1 AND at < $3 ${agentId === undefined ? '' : 'AND agent_id = $4'}
          GROUP BY 1, agent_id, model ORDER BY 1, agent_id, model`;
        const { rows } = await query(db, text, agentId === undefined ? [since, stepMs, until] : [since, stepMs, until, agentId]);
        return rows.map((row) => parseRow(usageBucketRow, row, 'usage', ['start', 'agent_id', 'model']));
      },
      () => ({ action }),
    );
  }
}

function parseUsage(row: Row): UsageRecord {
  return parseRow(usageRow, row, 'usage', ['id']);
}
