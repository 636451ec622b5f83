import type { EventRecord, TurnJournalClose, TurnJournalOpen, TurnJournalRecord, TurnJournalRepository, TurnStepRecord } from '../contracts/index.ts';
import { StoreConflictError, StoreNotFoundError } from '../errors/index.ts';
import { type PostgresConnection, type Queryable, query } from './postgres-connection.ts';
import { insertEvent } from './postgres-event-repository.ts';
import { parseRow, type Row } from './rows.ts';
import { turnJournalColumns as columns, turnJournalRow, turnStepColumns, turnStepRow } from './table-rows.ts';

/**
 * Closes a turn's journal inside its session's transaction (see `SessionWriteOptions.closeTurn`):
 * its steps dropped, and the turn deleted, or kept `done` with its outcome when it has an idempotency key.
 */
export async function closeTurn(db: Queryable, close: TurnJournalClose, at: number): Promise<void> {
  // A turn without a key goes, its steps with it (ON DELETE CASCADE); one with a key stays, done.
  const { changed } = await query(db, 'DELETE FROM turn_journal WHERE id = $1 AND idempotency_key IS NULL', [close.turnId]);
  if (changed > 0) return;
  await query(db, 'DELETE FROM turn_steps WHERE turn_id = $1', [close.turnId]);
  await query(db, "UPDATE turn_journal SET state = 'done', outcome = $1, finished_at = $2 WHERE id = $3", [JSON.stringify(close.outcome), at, close.turnId]);
}

/** Records a turn as running with no steps. @throws {StoreConflictError} when its agent has a turn with its key. */
async function insertTurn(db: Queryable, record: TurnJournalOpen): Promise<void> {
  const { changed } = await query(
    db,
    `INSERT INTO turn_journal (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', NULL) ON CONFLICT (agent_id, idempotency_key) DO NOTHING`,
    [record.id, record.agentId, record.sessionId, record.conversation, JSON.stringify(record.request), record.idempotencyKey, record.receivedAt],
  );
  if (changed === 0) {
    throw new StoreConflictError(`cannot record turn "${record.id}": agent "${record.agentId}" already has a turn with idempotency key "${record.idempotencyKey ?? ''}"`, { details: { agentId: record.agentId, idempotencyKey: record.idempotencyKey } });
  }
}

/** `TurnJournalRepository` on PostgreSQL (migration 8): a row per turn, a row per step. */
export class PostgresTurnJournalRepository implements TurnJournalRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  /** The turns of `rows` with their steps, read in one more statement. */
  async #withSteps(db: Queryable, rows: readonly Row[]): Promise<TurnJournalRecord[]> {
    const turns = rows.map((row) => parseRow(turnJournalRow, row, 'turn_journal', ['id']));
    if (turns.length === 0) return [];
    const steps = (await query(db, `SELECT ${turnStepColumns} FROM turn_steps WHERE turn_id = ANY($1::text[]) ORDER BY turn_id, seq`, [turns.map((turn) => turn.id)])).rows.map((row) => parseRow(turnStepRow, row, 'turn_steps', ['turn_id', 'seq']));
    return turns.map((turn) => ({ ...turn, steps: steps.filter((step) => step.turnId === turn.id).map(({ turnId: _turn, ...step }) => step) }));
  }

  open(record: TurnJournalOpen): Promise<void> {
    return this.#connection.execute(
      (db) => insertTurn(db, record),
      () => ({ action: `record turn "${record.id}"`, missing: `agent "${record.agentId}" does not exist` }),
    );
  }

  step(turnId: string, steps: readonly TurnStepRecord[], options: { events?: readonly Omit<EventRecord, 'seq'>[]; open?: TurnJournalOpen } = {}): Promise<void> {
    return this.#connection.execute(
      () =>
        this.#connection.transaction(async (client) => {
          if (options.open !== undefined) await insertTurn(client, options.open);
          // The turn's row is locked, so two writers of one turn take turns numbering its steps.
          const [turn] = (await query(client, "SELECT id FROM turn_journal WHERE id = $1 AND state = 'running' FOR UPDATE", [turnId])).rows;
          if (turn === undefined) throw new StoreNotFoundError(`cannot record a step of turn "${turnId}": there is no such running turn`);
          const [row] = (await query(client, 'SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM turn_steps WHERE turn_id = $1', [turnId])).rows;
          const next = Number(row?.['next'] ?? 0);
          for (const [index, step] of steps.entries()) {
            await query(client, `INSERT INTO turn_steps (${turnStepColumns}) VALUES ($1, $2, $3, $4, $5)`, [turnId, next + index, step.kind, step.at, JSON.stringify(step.data)]);
          }
          // Last, so the event log's lock is held for as short a time as can be.
          for (const event of options.events ?? []) await insertEvent(client, event, this.#connection.origin);
        }),
      () => ({ action: `record a step of turn "${turnId}"`, missing: `agent "${options.open?.agentId ?? ''}" does not exist` }),
    );
  }

  get(turnId: string): Promise<TurnJournalRecord | undefined> {
    return this.#connection.execute(
      async (db) => (await this.#withSteps(db, (await query(db, `SELECT ${columns} FROM turn_journal WHERE id = $1`, [turnId])).rows))[0],
      () => ({ action: `read turn "${turnId}"` }),
    );
  }

  byKey(agentId: string, idempotencyKey: string): Promise<TurnJournalRecord | undefined> {
    return this.#connection.execute(
      async (db) => (await this.#withSteps(db, (await query(db, `SELECT ${columns} FROM turn_journal WHERE agent_id = $1 AND idempotency_key = $2`, [agentId, idempotencyKey])).rows))[0],
      () => ({ action: `read the turn of agent "${agentId}" with idempotency key "${idempotencyKey}"` }),
    );
  }

  running(): Promise<TurnJournalRecord[]> {
    return this.#connection.execute(
      async (db) => this.#withSteps(db, (await query(db, `SELECT ${columns} FROM turn_journal WHERE state = 'running' ORDER BY received_at, insert_order`)).rows),
      () => ({ action: 'list the running turns' }),
    );
  }

  finish(close: TurnJournalClose, at: number): Promise<void> {
    return this.#connection.execute(
      () => this.#connection.transaction((client) => closeTurn(client, close, at)),
      () => ({ action: `close turn "${close.turnId}"` }),
    );
  }

  prune(before: number): Promise<number> {
    return this.#connection.execute(
      async (db) => (await query(db, "DELETE FROM turn_journal WHERE state = 'done' AND finished_at < $1", [before])).changed,
      () => ({ action: 'forget finished turns' }),
    );
  }
}
