import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { setImmediate } from 'node:timers/promises';
import type {
  EventRecord,
  NumberedTurnStep,
  TurnJournalClose,
  TurnJournalHead,
  TurnJournalOpen,
  TurnJournalRecord,
  TurnJournalRepository,
  TurnStepRecord,
} from '../contracts/index.ts';
import { StoreConflictError, StoreNotFoundError } from '../errors/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { appendEvent, prepareEventInsert } from './sqlite-event-repository.ts';
import { parseRow } from './rows.ts';
import type { SqliteRow } from './sqlite-rows.ts';
import { turnJournalColumns as columns, turnJournalRow, turnNodeOf, turnStepColumns, turnStepRow } from './table-rows.ts';

/**
 * Prepares how a turn's commit closes its journal (see `SessionWriteOptions.closeTurn`): its steps
 * dropped, and the turn deleted, or kept `done` with its outcome when it has an idempotency key.
 * The returned function runs inside the session's transaction.
 */
export function prepareTurnClose(db: DatabaseSync): (close: TurnJournalClose, at: number) => void {
  const dropSteps = db.prepare('DELETE FROM turn_steps WHERE turn_id = ?');
  const forget = db.prepare('DELETE FROM turn_journal WHERE id = ? AND idempotency_key IS NULL');
  const keep = db.prepare("UPDATE turn_journal SET state = 'done', outcome = ?, finished_at = ? WHERE id = ?");
  return (close, at) => {
    // A turn without a key goes, its steps with it (ON DELETE CASCADE); one with a key stays, done.
    if (Number(forget.run(close.turnId).changes) > 0) return;
    dropSteps.run(close.turnId);
    keep.run(JSON.stringify(close.outcome), at, close.turnId);
  };
}

/** How many ended turns {@link SqliteTurnJournalRepository.prune} forgets per statement at most. */
const PRUNE_BATCH = 100;

/** `TurnJournalRepository` on SQLite (migration 16): a row per turn, a row per step. */
export class SqliteTurnJournalRepository implements TurnJournalRepository {
  readonly #connection: SqliteConnection;
  readonly #insert: StatementSync;
  readonly #get: StatementSync;
  readonly #byKey: StatementSync;
  readonly #running: StatementSync;
  readonly #steps: StatementSync;
  readonly #runningOn: StatementSync;
  readonly #stepsSince: StatementSync;
  readonly #nextSeq: StatementSync;
  readonly #insertStep: StatementSync;
  readonly #prune: StatementSync;
  readonly #appendEvent: StatementSync;
  readonly #close: (close: TurnJournalClose, at: number) => void;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#insert = db.prepare(`INSERT INTO turn_journal (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', NULL)`);
    this.#get = db.prepare(`SELECT ${columns} FROM turn_journal WHERE id = ?`);
    this.#byKey = db.prepare(`SELECT ${columns} FROM turn_journal WHERE agent_id = ? AND idempotency_key = ?`);
    this.#running = db.prepare(`SELECT ${columns} FROM turn_journal WHERE state = 'running' ORDER BY received_at, rowid`);
    this.#steps = db.prepare(`SELECT ${turnStepColumns} FROM turn_steps WHERE turn_id = ? ORDER BY seq`);
    // Read on a cluster only (PostgreSQL): here a scan of the running and lately finished keyed turns (migration 23).
    this.#runningOn = db.prepare(
      `SELECT ${columns}, node_id FROM turn_journal WHERE agent_id = ? AND conversation IS ? AND state = 'running' ORDER BY received_at, rowid LIMIT 1`,
    );
    this.#stepsSince = db.prepare(`SELECT ${turnStepColumns} FROM turn_steps WHERE turn_id = ? AND seq >= ? AND (? IS NULL OR kind = ?) ORDER BY seq`);
    this.#nextSeq = db.prepare(
      'SELECT COALESCE(MAX(seq) + 1, 0) AS next, (SELECT state FROM turn_journal WHERE id = ?) AS state FROM turn_steps WHERE turn_id = ?',
    );
    this.#insertStep = db.prepare(`INSERT INTO turn_steps (${turnStepColumns}) VALUES (?, ?, ?, ?, ?)`);
    this.#prune = db.prepare(
      `DELETE FROM turn_journal WHERE rowid IN (SELECT rowid FROM turn_journal WHERE state = 'done' AND finished_at < ? ORDER BY finished_at LIMIT ${PRUNE_BATCH})`,
    );
    this.#appendEvent = prepareEventInsert(db);
    this.#close = prepareTurnClose(db);
  }

  #read(row: SqliteRow): TurnJournalRecord {
    const turn = parseRow(turnJournalRow, row, 'turn_journal', ['id']);
    const steps = this.#steps.all(turn.id).map((step) => {
      const { turnId: _turn, ...record } = parseRow(turnStepRow, step, 'turn_steps', ['turn_id', 'seq']);
      return record;
    });
    return { ...turn, steps };
  }

  #open(record: TurnJournalOpen): void {
    if (record.idempotencyKey !== null && this.#byKey.get(record.agentId, record.idempotencyKey) !== undefined) {
      throw new StoreConflictError(
        `cannot record turn "${record.id}": agent "${record.agentId}" already has a turn with idempotency key "${record.idempotencyKey}"`,
        { details: { agentId: record.agentId, idempotencyKey: record.idempotencyKey } },
      );
    }
    this.#insert.run(
      record.id,
      record.agentId,
      record.sessionId,
      record.conversation,
      JSON.stringify(record.request),
      record.idempotencyKey,
      record.receivedAt,
    );
  }

  open(record: TurnJournalOpen): Promise<void> {
    return this.#connection.execute(
      () => this.#open(record),
      () => ({ action: `record turn "${record.id}"`, missing: `agent "${record.agentId}" does not exist` }),
    );
  }

  step(
    turnId: string,
    steps: readonly TurnStepRecord[],
    options: { events?: readonly Omit<EventRecord, 'seq'>[]; open?: TurnJournalOpen } = {},
  ): Promise<void> {
    return this.#connection.execute(
      () =>
        this.#connection.transaction(() => {
          let next = 0;
          // A turn recorded with its first step has none before it and runs.
          if (options.open !== undefined) this.#open(options.open);
          if (options.open?.id !== turnId) {
            const row = this.#nextSeq.get(turnId, turnId);
            if (row?.['state'] !== 'running') throw new StoreNotFoundError(`cannot record a step of turn "${turnId}": there is no such running turn`);
            next = Number(row['next']);
          }
          steps.forEach((step, index) => this.#insertStep.run(turnId, next + index, step.kind, step.at, JSON.stringify(step.data)));
          for (const event of options.events ?? []) appendEvent(this.#appendEvent, event);
        }),
      () => ({ action: `record a step of turn "${turnId}"`, missing: `agent "${options.open?.agentId ?? ''}" does not exist` }),
    );
  }

  get(turnId: string): Promise<TurnJournalRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(turnId);
        return row === undefined ? undefined : this.#read(row);
      },
      () => ({ action: `read turn "${turnId}"` }),
    );
  }

  byKey(agentId: string, idempotencyKey: string): Promise<TurnJournalRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#byKey.get(agentId, idempotencyKey);
        return row === undefined ? undefined : this.#read(row);
      },
      () => ({ action: `read the turn of agent "${agentId}" with idempotency key "${idempotencyKey}"` }),
    );
  }

  running(): Promise<TurnJournalRecord[]> {
    return this.#connection.execute(
      () => this.#running.all().map((row) => this.#read(row)),
      () => ({ action: 'list the running turns' }),
    );
  }

  runningOn(agentId: string, conversation: string | null): Promise<(TurnJournalHead & { nodeId: string | null }) | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#runningOn.get(agentId, conversation);
        return row === undefined ? undefined : { ...parseRow(turnJournalRow, row, 'turn_journal', ['id']), nodeId: turnNodeOf(row) };
      },
      () => ({ action: `find the running turn of agent "${agentId}" on ${conversation === null ? 'its main session' : `conversation "${conversation}"`}` }),
    );
  }

  stepsSince(turnId: string, from: number, kind?: TurnStepRecord['kind']): Promise<{ turn: TurnJournalHead; steps: NumberedTurnStep[] } | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(turnId);
        if (row === undefined) return undefined;
        const turn = parseRow(turnJournalRow, row, 'turn_journal', ['id']);
        const steps = this.#stepsSince.all(turnId, from, kind ?? null, kind ?? null).map((step) => {
          const { turnId: _turn, ...record } = parseRow(turnStepRow, step, 'turn_steps', ['turn_id', 'seq']);
          return { ...record, seq: Number(step['seq']) };
        });
        return { turn, steps };
      },
      () => ({ action: `read the steps of turn "${turnId}" from step ${from}` }),
    );
  }

  finish(close: TurnJournalClose, at: number): Promise<void> {
    return this.#connection.execute(
      () => this.#connection.transaction(() => this.#close(close, at)),
      () => ({ action: `close turn "${close.turnId}"` }),
    );
  }

  /**
   * Forgets the turns that ended before `before`, the oldest first, {@link PRUNE_BATCH} at a time,
   * each part its own statement with the event loop free between them (migration 28's index finds
   * them): a day of keyed turns is forgotten without holding the daemon's thread for it.
   */
  async prune(before: number): Promise<number> {
    let removed = 0;
    for (;;) {
      const changes = await this.#connection.execute(
        () => Number(this.#prune.run(before).changes),
        () => ({ action: 'forget finished turns' }),
      );
      removed += changes;
      if (changes < PRUNE_BATCH) return removed;
      await setImmediate();
    }
  }
}
