import type { StatementSync } from 'node:sqlite';
import type { ScheduleRunRecord, ScheduleRunRepository } from '../contracts/index.ts';
import { StoreNotFoundError } from '../errors/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { parseRow } from './rows.ts';
import { limitParameter, type SqliteRow } from './sqlite-rows.ts';
import { scheduleRunColumns as columns, scheduleRunRow, scheduleRunValues } from './table-rows.ts';

/** The values of a run's columns after `id`, as SQLite stores them (the flag as 0 or 1). */
function sqliteValues(record: ScheduleRunRecord): (string | number | null)[] {
  return scheduleRunValues(record).map((value) => (typeof value === 'boolean' ? Number(value) : value));
}

/** `ScheduleRunRepository` on SQLite (migration 17): one row per due wake-up. */
export class SqliteScheduleRunRepository implements ScheduleRunRepository {
  readonly #connection: SqliteConnection;
  readonly #create: StatementSync;
  readonly #update: StatementSync;
  readonly #list: StatementSync;
  readonly #lastDue: StatementSync;
  readonly #running: StatementSync;
  readonly #runningOf: StatementSync;
  readonly #lastCheck: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#create = db.prepare(`INSERT INTO schedule_runs (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.#update = db.prepare('UPDATE schedule_runs SET agent_id = ?, trigger = ?, due_at = ?, started_at = ?, finished_at = ?, outcome = ?, reason = ?, caught_up = ?, count = ?, check_hash = ? WHERE id = ?');
    this.#list = db.prepare(`SELECT ${columns} FROM schedule_runs WHERE agent_id = ? ORDER BY due_at DESC, rowid DESC LIMIT ?`);
    this.#lastDue = db.prepare("SELECT max(due_at) AS due FROM schedule_runs WHERE agent_id = ? AND trigger <> 'manual'");
    this.#lastCheck = db.prepare('SELECT check_hash FROM schedule_runs WHERE agent_id = ? AND check_hash IS NOT NULL ORDER BY due_at DESC, rowid DESC LIMIT 1');
    this.#running = db.prepare(`SELECT ${columns} FROM schedule_runs WHERE outcome = 'running' ORDER BY due_at, rowid`);
    this.#runningOf = db.prepare(`SELECT ${columns} FROM schedule_runs WHERE outcome = 'running' AND agent_id = ? AND trigger = ? AND due_at = ? ORDER BY rowid`);
  }

  create(record: ScheduleRunRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#create.run(record.id, ...sqliteValues(record));
      },
      () => ({ action: `store schedule run "${record.id}"` }),
    );
  }

  update(record: ScheduleRunRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        if (Number(this.#update.run(...sqliteValues(record), record.id).changes) === 0) throw new StoreNotFoundError(`cannot update schedule run "${record.id}": there is no such run`);
      },
      () => ({ action: `update schedule run "${record.id}"` }),
    );
  }

  list(agentId: string, query: { limit?: number } = {}): Promise<ScheduleRunRecord[]> {
    return this.#connection.execute(
      () => this.#list.all(agentId, limitParameter(query.limit ?? 100, 'list schedule runs')).map(parseRun),
      () => ({ action: `list the schedule runs of agent "${agentId}"` }),
    );
  }

  lastDue(agentId: string): Promise<number | undefined> {
    return this.#connection.execute(
      () => {
        const due = this.#lastDue.get(agentId)?.['due'];
        return typeof due === 'number' ? due : undefined;
      },
      () => ({ action: `read the last due wake-up of agent "${agentId}"` }),
    );
  }

  lastCheckHash(agentId: string): Promise<string | undefined> {
    return this.#connection.execute(
      () => {
        const hash = this.#lastCheck.get(agentId)?.['check_hash'];
        return typeof hash === 'string' ? hash : undefined;
      },
      () => ({ action: `read the last check of agent "${agentId}"` }),
    );
  }

  interruptRunning(at: number, reason: string, of?: { agentId: string; trigger: string; dueAt: number }): Promise<ScheduleRunRecord[]> {
    return this.#connection.execute(
      () =>
        this.#connection.transaction(() => {
          const rows = of === undefined ? this.#running.all() : this.#runningOf.all(of.agentId, of.trigger, of.dueAt);
          const changed = rows.map((row): ScheduleRunRecord => ({ ...parseRun(row), outcome: 'interrupted', reason, finishedAt: at }));
          for (const run of changed) this.#update.run(...sqliteValues(run), run.id);
          return changed;
        }),
      () => ({ action: 'mark interrupted schedule runs' }),
    );
  }
}

function parseRun(row: SqliteRow): ScheduleRunRecord {
  return parseRow(scheduleRunRow, row, 'schedule_runs', ['id']);
}
