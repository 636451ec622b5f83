import type { StatementSync } from 'node:sqlite';
import { z } from 'zod';
import type { ForgedToolRecord, ForgedToolRepository, ForgedToolStatus, ForgedToolTier } from '../contracts/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { jsonObjectText, parseRow, type SqliteRow } from './sqlite-rows.ts';

const TIERS = ['session', 'agent', 'shared'] as const satisfies readonly ForgedToolTier[];
const STATUSES = ['active', 'demoted', 'retired'] as const satisfies readonly ForgedToolStatus[];

const dataSchema = z.object({
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

const forgedToolRow = z
  .object({
    id: z.string(),
    name: z.string(),
    agent_id: z.string(),
    tier: z.enum(TIERS),
    status: z.enum(STATUSES),
    data: jsonObjectText.pipe(dataSchema),
    calls: z.number(),
    successes: z.number(),
    total_ms: z.number(),
    created_at: z.number(),
    updated_at: z.number(),
  })
  .transform(
    (row): ForgedToolRecord => ({
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
    }),
  );

const columns = 'id, name, agent_id, tier, status, data, calls, successes, total_ms, created_at, updated_at';

/** `ForgedToolRepository` on SQLite (migration 9): one row per tool, its request and verdicts as JSON, its stats as columns. */
export class SqliteForgedToolRepository implements ForgedToolRepository {
  readonly #connection: SqliteConnection;
  readonly #put: StatementSync;
  readonly #get: StatementSync;
  readonly #list: StatementSync;
  readonly #call: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#put = db.prepare(
      `INSERT INTO forged_tools (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, agent_id = excluded.agent_id, tier = excluded.tier, status = excluded.status, data = excluded.data, calls = excluded.calls, successes = excluded.successes, total_ms = excluded.total_ms, updated_at = excluded.updated_at`,
    );
    this.#get = db.prepare(`SELECT ${columns} FROM forged_tools WHERE id = ?`);
    this.#list = db.prepare(
      `SELECT ${columns} FROM forged_tools WHERE (?1 IS NULL OR agent_id = ?1) AND (?2 IS NULL OR tier = ?2) AND (?3 IS NULL OR status = ?3) ORDER BY created_at, rowid`,
    );
    this.#call = db.prepare('UPDATE forged_tools SET calls = calls + 1, successes = successes + ?, total_ms = total_ms + ?, updated_at = ? WHERE id = ?');
  }

  put(record: ForgedToolRecord): Promise<void> {
    const data = {
      agentName: record.agentName,
      sessionId: record.sessionId,
      statusReason: record.statusReason,
      mode: record.mode,
      request: record.request,
      codeHash: record.codeHash,
      sourcePersisted: record.sourcePersisted,
      verdicts: record.verdicts,
      origin: record.origin,
    };
    return this.#connection.execute(
      () => {
        const { stats } = record;
        this.#put.run(record.id, record.name, record.agentId, record.tier, record.status, JSON.stringify(data), stats.calls, stats.successes, stats.totalMs, record.createdAt, record.updatedAt);
      },
      () => ({ action: `store forged tool "${record.name}"` }),
    );
  }

  get(id: string): Promise<ForgedToolRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(id);
        return row === undefined ? undefined : parseForgedTool(row);
      },
      () => ({ action: `read forged tool "${id}"` }),
    );
  }

  list(filter: { agentId?: string; tier?: ForgedToolTier; status?: ForgedToolStatus } = {}): Promise<ForgedToolRecord[]> {
    return this.#connection.execute(
      () => this.#list.all(filter.agentId ?? null, filter.tier ?? null, filter.status ?? null).map(parseForgedTool),
      () => ({ action: 'list forged tools' }),
    );
  }

  recordCall(id: string, success: boolean, durationMs: number, at: number): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#call.run(success ? 1 : 0, durationMs, at, id);
      },
      () => ({ action: `count a call of forged tool "${id}"` }),
    );
  }
}

function parseForgedTool(row: SqliteRow): ForgedToolRecord {
  return parseRow(forgedToolRow, row, 'forged_tools', ['id']);
}
