import type { ScheduleRunRecord, ScheduleRunRepository } from '../contracts/index.ts';
import { StoreNotFoundError } from '../errors/index.ts';
import { type PostgresConnection, type Queryable, query } from './postgres-connection.ts';
import { checkLimit, parseRow, type Row } from './rows.ts';
import { scheduleRunColumns as columns, scheduleRunRow, scheduleRunValues } from './table-rows.ts';

const update = 'UPDATE schedule_runs SET agent_id = $1, trigger = $2, due_at = $3, started_at = $4, finished_at = $5, outcome = $6, reason = $7, caught_up = $8, count = $9, check_hash = $10 WHERE id = $11';

/** `ScheduleRunRepository` on PostgreSQL: one row per due wake-up. */
export class PostgresScheduleRunRepository implements ScheduleRunRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  create(record: ScheduleRunRecord): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(db, `INSERT INTO schedule_runs (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, [record.id, ...scheduleRunValues(record)]);
      },
      () => ({ action: `store schedule run "${record.id}"` }),
    );
  }

  update(record: ScheduleRunRecord): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        if ((await replace(db, record)) === 0) throw new StoreNotFoundError(`cannot update schedule run "${record.id}": there is no such run`);
      },
      () => ({ action: `update schedule run "${record.id}"` }),
    );
  }

  list(agentId: string, runQuery: { limit?: number } = {}): Promise<ScheduleRunRecord[]> {
    return this.#connection.execute(
      async (db) => {
        const limit = checkLimit(runQuery.limit ?? 100, 'list schedule runs') ?? null;
        const { rows } = await query(db, `SELECT ${columns} FROM schedule_runs WHERE agent_id = $1 ORDER BY due_at DESC, insert_order DESC LIMIT $2`, [agentId, limit]);
        return rows.map(parseRun);
      },
      () => ({ action: `list the schedule runs of agent "${agentId}"` }),
    );
  }

  lastDue(agentId: string): Promise<number | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, "SELECT max(due_at) AS due FROM schedule_runs WHERE agent_id = $1 AND trigger <> 'manual'", [agentId])).rows;
        const due = row?.['due'];
        return due === null || due === undefined ? undefined : Number(due);
      },
      () => ({ action: `read the last due wake-up of agent "${agentId}"` }),
    );
  }

  lastCheckHash(agentId: string): Promise<string | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, 'SELECT check_hash FROM schedule_runs WHERE agent_id = $1 AND check_hash IS NOT NULL ORDER BY due_at DESC, insert_order DESC LIMIT 1', [agentId])).rows;
        const hash = row?.['check_hash'];
        return typeof hash === 'string' ? hash : undefined;
      },
      () => ({ action: `read the last check of agent "${agentId}"` }),
    );
  }

  interruptRunning(at: number, reason: string, of?: { agentId: string; trigger: string; dueAt: number }): Promise<ScheduleRunRecord[]> {
    return this.#connection.execute(
      () =>
        this.#connection.transaction(async (client) => {
          const { rows } =
            of === undefined
              ? await query(client, `SELECT ${columns} FROM schedule_runs WHERE outcome = 'running' ORDER BY due_at, insert_order FOR UPDATE`)
              : await query(client, `SELECT ${columns} FROM schedule_runs WHERE outcome = 'running' AND agent_id = $1 AND trigger = $2 AND due_at = $3 ORDER BY insert_order FOR UPDATE`, [of.agentId, of.trigger, of.dueAt]);
          const changed = rows.map((row): ScheduleRunRecord => ({ ...parseRun(row), outcome: 'interrupted', reason, finishedAt: at }));
          for (const run of changed) await replace(client, run);
          return changed;
        }),
      () => ({ action: 'mark interrupted schedule runs' }),
    );
  }
}

/** Replaces the stored run with `record`; how many rows changed (0 when there is none). */
async function replace(db: Queryable, record: ScheduleRunRecord): Promise<number> {
  return (await query(db, update, [...scheduleRunValues(record), record.id])).changed;
}

function parseRun(row: Row): ScheduleRunRecord {
  return parseRow(scheduleRunRow, row, 'schedule_runs', ['id']);
}
