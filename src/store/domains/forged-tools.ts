import { z } from 'zod';
import type { ForgedToolRecord, ForgedToolRepository, ForgedToolStatus, ForgedToolTier } from '../../contracts/index.ts';
import { jsonObjectText, parseRow, type Row } from '../rows.ts';
import type { Database } from '../sql/database.ts';
import { insert, raw, type Sql, sql, where } from '../sql/statement.ts';

const FORGED_TOOL_TIERS = ['session', 'agent', 'shared'] as const satisfies readonly ForgedToolTier[];
const FORGED_TOOL_STATUSES = ['active', 'demoted', 'retired'] as const satisfies readonly ForgedToolStatus[];

const forgedToolData = z.object({
  agentName: z.string(),
  sessionId: z.string().nullable(),
  statusReason: z.string().nullable(),
  mode: z.enum(['compose', 'sandbox']),
  request: z.record(z.string(), z.json()),
  codeHash: z.string().nullable(),
  sourcePersisted: z.boolean(),
  verdicts: z.array(z.record(z.string(), z.json())),
  origin: z.enum(['forged', 'imported']),
});

const columns = 'id, name, agent_id, tier, status, data, calls, successes, total_ms, created_at, updated_at';
const select = raw(`SELECT ${columns} FROM forged_tools`);

/** A row of `forged_tools`: its request and verdicts as JSON, its stats as columns. */
const forgedToolRow = z
  .object({
    id: z.string(),
    name: z.string(),
    agent_id: z.string(),
    tier: z.enum(FORGED_TOOL_TIERS),
    status: z.enum(FORGED_TOOL_STATUSES),
    data: jsonObjectText.pipe(forgedToolData),
    calls: z.number(),
    successes: z.number(),
    total_ms: z.number(),
    created_at: z.number(),
    updated_at: z.number(),
  })
  .transform((row): ForgedToolRecord => ({
    id: row.id,
    name: row.name,
    agentId: row.agent_id,
    tier: row.tier,
    status: row.status,
    ...row.data,
    request: row.data.request,
    verdicts: row.data.verdicts,
    stats: { calls: row.calls, successes: row.successes, totalMs: row.total_ms },
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }));

/** `ForgedToolRepository` on either database: one row per tool, its request and verdicts as JSON text, its stats as columns. */
export class SqlForgedToolRepository implements ForgedToolRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async put(record: ForgedToolRecord): Promise<void> {
    const { agentName, sessionId, statusReason, mode, request, codeHash, sourcePersisted, verdicts, origin, stats } = record;
    const data = JSON.stringify({ agentName, sessionId, statusReason, mode, request, codeHash, sourcePersisted, verdicts, origin });
    const values = [
      record.id,
      record.name,
      record.agentId,
      record.tier,
      record.status,
      data,
      stats.calls,
      stats.successes,
      stats.totalMs,
      record.createdAt,
      record.updatedAt,
    ];
    // created_at stays that of the first put.
    const update = ['name', 'agent_id', 'tier', 'status', 'data', 'calls', 'successes', 'total_ms', 'updated_at'];
    await this.#db.run(insert('forged_tools', columns, values, { key: 'id', update }), () => ({ action: `store forged tool "${record.name}"` }));
  }

  async get(id: string): Promise<ForgedToolRecord | undefined> {
    const row = await this.#db.one(sql`${select} WHERE id = ${id}`, () => ({ action: `read forged tool "${id}"` }));
    return row === undefined ? undefined : parseForgedTool(row);
  }

  async list(filter: { agentId?: string; tier?: ForgedToolTier; status?: ForgedToolStatus } = {}): Promise<ForgedToolRecord[]> {
    const conditions: Sql[] = [];
    if (filter.agentId !== undefined) conditions.push(sql`agent_id = ${filter.agentId}`);
    if (filter.tier !== undefined) conditions.push(sql`tier = ${filter.tier}`);
    if (filter.status !== undefined) conditions.push(sql`status = ${filter.status}`);
    const rows = await this.#db.all(sql`${select} ${where(conditions)} ORDER BY created_at, ${this.#db.insertOrder}`, () => ({ action: 'list forged tools' }));
    return rows.map(parseForgedTool);
  }

  async recordCall(id: string, success: boolean, durationMs: number, at: number): Promise<void> {
    const statement = sql`UPDATE forged_tools SET calls = calls + 1, successes = successes + ${success ? 1 : 0}, total_ms = total_ms + ${durationMs}, updated_at = ${at} WHERE id = ${id}`;
    await this.#db.run(statement, () => ({ action: `count a call of forged tool "${id}"` }));
  }
}

function parseForgedTool(row: Row): ForgedToolRecord {
  return parseRow(forgedToolRow, row, 'forged_tools', ['id']);
}
