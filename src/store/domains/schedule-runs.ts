import { z } from 'zod';
import type { ScheduleRunRecord, ScheduleRunRepository } from '../../contracts/index.ts';
import { StoreNotFoundError } from '../../errors/index.ts';
import { flag, parseRow, type Row } from '../rows.ts';
import type { Database, Work } from '../sql/database.ts';
import { insert, type Parameter, raw, type Sql, sql, update } from '../sql/statement.ts';

const columns = 'id, agent_id, trigger, due_at, started_at, finished_at, outcome, reason, caught_up, count, check_hash';
const select = raw(`SELECT ${columns} FROM schedule_runs`);

/** A row of `schedule_runs`: one due wake-up of an agent. */
const scheduleRunRow = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    trigger: z.string(),
    due_at: z.number(),
    started_at: z.number().nullable(),
    finished_at: z.number().nullable(),
    outcome: z.enum(['running', 'completed', 'unchanged', 'failed', 'skipped', 'interrupted']),
    reason: z.string().nullable(),
    caught_up: flag,
    count: z.number(),
    check_hash: z.string().nullable(),
  })
  .transform((row): ScheduleRunRecord => ({
    id: row.id,
    agentId: row.agent_id,
    trigger: row.trigger,
    dueAt: row.due_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    outcome: row.outcome,
    reason: row.reason,
    caughtUp: row.caught_up,
    count: row.count,
    checkHash: row.check_hash,
  }));

/** `ScheduleRunRepository` on either database: one row per due wake-up. */
export class SqlScheduleRunRepository implements ScheduleRunRepository {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  async create(record: ScheduleRunRecord): Promise<void> {
    await this.#db.run(insert('schedule_runs', columns, runValues(record)), () => ({ action: `store schedule run "${record.id}"` }));
  }

  async update(record: ScheduleRunRecord): Promise<void> {
    const changed = await this.#db.run(replace(record), () => ({ action: `update schedule run "${record.id}"` }));
    if (changed === 0) throw new StoreNotFoundError(`cannot update schedule run "${record.id}": there is no such run`);
  }

  async list(agentId: string, query: { limit?: number } = {}): Promise<ScheduleRunRecord[]> {
    const limit = this.#db.limit(query.limit ?? 100, 'list schedule runs');
    const rows = await this.#db.all(sql`${select} WHERE agent_id = ${agentId} ORDER BY due_at DESC, ${this.#db.insertOrder} DESC LIMIT ${limit}`, () => ({
      action: `list the schedule runs of agent "${agentId}"`,
    }));
    return rows.map(parseRun);
  }

  async lastDue(agentId: string): Promise<number | undefined> {
    const row = await this.#db.one(sql`SELECT max(due_at) AS due FROM schedule_runs WHERE agent_id = ${agentId} AND trigger <> 'manual'`, () => ({
      action: `read the last due wake-up of agent "${agentId}"`,
    }));
    const due = row?.['due'];
    return due === null || due === undefined ? undefined : Number(due);
  }

  async lastCheckHash(agentId: string): Promise<string | undefined> {
    const statement = sql`SELECT check_hash FROM schedule_runs WHERE agent_id = ${agentId} AND check_hash IS NOT NULL ORDER BY due_at DESC, ${this.#db.insertOrder} DESC LIMIT 1`;
    const hash = (await this.#db.one(statement, () => ({ action: `read the last check of agent "${agentId}"` })))?.['check_hash'];
    return typeof hash === 'string' ? hash : undefined;
  }

  interruptRunning(at: number, reason: string, of?: { agentId: string; trigger: string; dueAt: number }): Promise<ScheduleRunRecord[]> {
    const running: Sql =
      of === undefined ? sql`outcome = 'running'` : sql`outcome = 'running' AND agent_id = ${of.agentId} AND trigger = ${of.trigger} AND due_at = ${of.dueAt}`;
    const read = sql`${select} WHERE ${running} ORDER BY due_at, ${this.#db.insertOrder}${this.#db.forUpdate}`;
    return this.#db.transaction(
      function* (): Work<ScheduleRunRecord[]> {
        const changed = (yield read).rows.map((row): ScheduleRunRecord => ({ ...parseRun(row), outcome: 'interrupted', reason, finishedAt: at }));
        for (const run of changed) yield replace(run);
        return changed;
      },
      () => ({ action: 'mark interrupted schedule runs' }),
    );
  }
}

function runValues(record: ScheduleRunRecord): Parameter[] {
  return [
    record.id,
    record.agentId,
    record.trigger,
    record.dueAt,
    record.startedAt,
    record.finishedAt,
    record.outcome,
    record.reason,
    record.caughtUp,
    record.count,
    record.checkHash,
  ];
}

/** The statement that replaces the stored run with `record` (changing no row when there is none). */
function replace(record: ScheduleRunRecord): Sql {
  return update('schedule_runs', columns, runValues(record), sql`id = ${record.id}`);
}

function parseRun(row: Row): ScheduleRunRecord {
  return parseRow(scheduleRunRow, row, 'schedule_runs', ['id']);
}
