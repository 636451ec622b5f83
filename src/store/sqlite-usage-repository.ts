import type { StatementSync } from 'node:sqlite';
import type { UsageBucket, UsageRecord, UsageRepository, UsageTotals } from '../contracts/index.ts';
import { StoreError } from '../errors/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { familiesAction, lineageRange, parseRow } from './rows.ts';
import { limitParameter, type SqliteRow } from './sqlite-rows.ts';
import { usageBucketRow as bucketRow, usageRow, usageTotalsRow as totalsRow } from './table-rows.ts';

const columns = 'rowid, agent_id, at, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, lineage';
const sums = `coalesce(sum(input_tokens), 0) AS input_tokens, coalesce(sum(output_tokens), 0) AS output_tokens,
  coalesce(sum(cache_read_tokens), 0) AS cache_read_tokens, coalesce(sum(cache_write_tokens), 0) AS cache_write_tokens,
  coalesce(sum(cost_usd), 0.0) AS cost_usd, count(*) AS calls`;

/** `UsageRepository` on SQLite. Statements are prepared once, when the store opens. */
export class SqliteUsageRepository implements UsageRepository {
  readonly #connection: SqliteConnection;
  readonly #record: StatementSync;
  readonly #totals: StatementSync;
  readonly #totalsByAgent: StatementSync;
  readonly #totalsByFamily: StatementSync;
  readonly #list: StatementSync;
  readonly #listByAgent: StatementSync;
  readonly #series: StatementSync;
  readonly #seriesByAgent: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#record = db.prepare(
      'INSERT INTO usage (agent_id, at, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, lineage) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    // One statement per filter rather than `? IS NULL OR …`, which keeps SQLite off the indexes.
    this.#totals = db.prepare(`SELECT ${sums} FROM usage WHERE at >= ?`);
    this.#totalsByAgent = db.prepare(`SELECT ${sums} FROM usage WHERE agent_id = ? AND at >= ?`);
    // Each side of the OR from its own index: the agent's rows, then its descendants' by their lineage's prefix.
    this.#totalsByFamily = db.prepare(`SELECT ${sums} FROM usage WHERE (agent_id = ? AND at >= ?) OR (lineage >= ? AND lineage < ? AND at >= ?)`);
    this.#list = db.prepare(`SELECT ${columns} FROM usage WHERE at >= ? ORDER BY at, rowid LIMIT ?`);
    this.#listByAgent = db.prepare(`SELECT ${columns} FROM usage WHERE agent_id = ? AND at >= ? ORDER BY at, rowid LIMIT ?`);
    // Integer division puts a record in the bucket its time falls in: since + n * step. Numbers are bound as REAL: the casts keep the division an integer one.
    const bucket = `(CAST(? AS INTEGER) + ((at - CAST(? AS INTEGER)) / CAST(? AS INTEGER)) * CAST(? AS INTEGER)) AS start, agent_id, model, ${sums}`;
    const grouped = 'GROUP BY start, agent_id, model ORDER BY start, agent_id, model';
    this.#series = db.prepare(`SELECT ${bucket} FROM usage WHERE at >= ? AND at < ? ${grouped}`);
    this.#seriesByAgent = db.prepare(`SELECT ${bucket} FROM usage WHERE agent_id = ? AND at >= ? AND at < ? ${grouped}`);
  }

  record(usage: UsageRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#record.run(
          usage.agentId,
          usage.at,
          usage.model,
          usage.inputTokens,
          usage.outputTokens,
          usage.cacheReadTokens ?? 0,
          usage.cacheWriteTokens ?? 0,
          usage.costUsd,
          usage.lineage ?? null,
        );
      },
      () => ({ action: `record usage of agent "${usage.agentId}"` }),
    );
  }

  totals(options: { since: number; agentId?: string; descendants?: string }): Promise<UsageTotals> {
    const { since, agentId, descendants } = options;
    const action = agentId === undefined ? 'total usage' : `total usage of agent "${agentId}"${descendants === undefined ? '' : ' and its descendants'}`;
    return this.#connection.execute(
      () => {
        let row;
        if (agentId === undefined) row = this.#totals.get(since);
        else if (descendants === undefined) row = this.#totalsByAgent.get(agentId, since);
        else row = this.#totalsByFamily.get(agentId, since, ...lineageRange(descendants, action), since);
        return parseRow(totalsRow, row ?? {}, 'usage', []);
      },
      () => ({ action }),
    );
  }

  familyTotals(families: readonly { agentId: string; descendants: string }[]): Promise<UsageTotals[]> {
    const action = familiesAction(families);
    return this.#connection.execute(
      () =>
        // The sum of each family's rows: alone, a family is read once (decision 0040), so nothing keeps a running total.
        families.map((family) =>
          parseRow(totalsRow, this.#totalsByFamily.get(family.agentId, 0, ...lineageRange(family.descendants, action), 0) ?? {}, 'usage', []),
        ),
      () => ({ action }),
    );
  }

  list(options: { since?: number; agentId?: string; limit?: number } = {}): Promise<UsageRecord[]> {
    const { since = Number.NEGATIVE_INFINITY, agentId } = options;
    const action = agentId === undefined ? 'list usage' : `list usage of agent "${agentId}"`;
    return this.#connection.execute(
      () => {
        const limit = limitParameter(options.limit, action);
        const rows = agentId === undefined ? this.#list.all(since, limit) : this.#listByAgent.all(agentId, since, limit);
        return rows.map((row) => parseUsage(row));
      },
      () => ({ action }),
    );
  }

  series(options: { since: number; until: number; stepMs: number; agentId?: string }): Promise<UsageBucket[]> {
    const { since, until, stepMs, agentId } = options;
    const action = agentId === undefined ? 'add usage up over time' : `add usage of agent "${agentId}" up over time`;
    return this.#connection.execute(
      () => {
        if (!Number.isSafeInteger(stepMs) || stepMs <= 0) throw new StoreError(`cannot ${action}: stepMs must be a positive integer, got ${stepMs}`);
        if (!Number.isSafeInteger(since) || !Number.isSafeInteger(until))
          throw new StoreError(`cannot ${action}: since and until must be integers, got ${since} and ${until}`);
        const bucket = [since, since, stepMs, stepMs];
        const rows = agentId === undefined ? this.#series.all(...bucket, since, until) : this.#seriesByAgent.all(...bucket, agentId, since, until);
        return rows.map((row) => parseRow(bucketRow, row, 'usage', ['start', 'agent_id', 'model']));
      },
      () => ({ action }),
    );
  }
}

function parseUsage(row: SqliteRow): UsageRecord {
  return parseRow(usageRow, row, 'usage', ['rowid']);
}
