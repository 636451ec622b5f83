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
import { LoomError, StoreConflictError, StoreNotFoundError } from '../errors/index.ts';
import { type PostgresConnection, type Queryable, query } from './postgres-connection.ts';
import { insertEvent } from './postgres-event-repository.ts';
import { parseRow, type Row } from './rows.ts';
import { SERVER_NOW_MS as NOW_MS } from './server-clock.ts';
import { turnJournalColumns as columns, turnJournalRow, turnNodeOf, turnStepColumns, turnStepRow } from './table-rows.ts';

/** How long a node holds a turn it records before another node may take it over, unless renewed (decision 0061). */
export const DEFAULT_TURN_LEASE_MS = 15_000;

/** Who writes a turn's journal through this store: the node (its id) that runs the turn, and how long its lease on a turn it records lasts. */
export interface TurnOwner {
  nodeId: string;
  leaseMs: number;
}

/**
 * Refuses a write of a turn another node took over (its lease here lapsed): this node may no
 * longer record its steps or commit it, which the node that took it over does (decision 0061).
 */
function assertHeld(row: Row, turnId: string, owner: TurnOwner, action: string): void {
  const holder = row['node_id'];
  if (typeof holder !== 'string' || holder === owner.nodeId) return;
  throw new LoomError(
    'TURN_TAKEN_OVER',
    'system',
    `cannot ${action} turn "${turnId}": node ${holder} took it over after this node's lease on it lapsed; it finishes there`,
    { details: { turnId, node: holder } },
  );
}

/**
 * Refuses, as `closeTurn` does, a commit of turn `turnId` when the journal holds it as running on
 * another node (see `appendAtRevision`, whose statement writes nothing then).
 */
export async function assertTurnHeld(db: Queryable, turnId: string, owner: TurnOwner): Promise<void> {
  const [row] = (await query(db, 'SELECT node_id, state FROM turn_journal WHERE id = $1', [turnId])).rows;
  assertRunningHere(row, turnId, owner);
}

/**
 * Refuses the commit of turn `turnId` (its journal's row `row`) unless the journal holds it as
 * running on this node: a commit closes a turn whose journal was written, so a row that is gone
 * or done means another node took the turn over and ended it (decision 0061).
 */
function assertRunningHere(row: Row | undefined, turnId: string, owner: TurnOwner): void {
  if (row === undefined || row['state'] !== 'running') {
    throw new LoomError(
      'TURN_TAKEN_OVER',
      'system',
      `cannot commit turn "${turnId}": it is no longer running on this node; another node took it over after this node's lease on it lapsed, and ended it`,
      { details: { turnId } },
    );
  }
  assertHeld(row, turnId, owner, 'commit');
}

/**
 * Closes a turn's journal inside its session's transaction (see `SessionWriteOptions.closeTurn`):
 * its steps dropped, and the turn deleted, or kept `done` with its outcome when it has an
 * idempotency key. Refused (the transaction with it) when another node took the turn over.
 */
export async function closeTurn(db: Queryable, close: TurnJournalClose, at: number, owner: TurnOwner): Promise<void> {
  // A turn without a key goes, its steps with it (ON DELETE CASCADE); one with a key stays, done.
  const { changed } = await query(db, 'DELETE FROM turn_journal WHERE id = $1 AND idempotency_key IS NULL AND (node_id IS NULL OR node_id = $2)', [
    close.turnId,
    owner.nodeId,
  ]);
  if (changed > 0) return;
  const [row] = (await query(db, 'SELECT node_id, state FROM turn_journal WHERE id = $1 FOR UPDATE', [close.turnId])).rows;
  assertRunningHere(row, close.turnId, owner);
  await query(db, 'DELETE FROM turn_steps WHERE turn_id = $1', [close.turnId]);
  await query(db, "UPDATE turn_journal SET state = 'done', outcome = $1, finished_at = $2, node_id = NULL, lease_until = NULL WHERE id = $3", [
    JSON.stringify(close.outcome),
    at,
    close.turnId,
  ]);
}

/**
 * Records a turn as running with no steps, leased to the node that records it.
 * @throws {StoreConflictError} when its agent has a turn with its key.
 */
async function insertTurn(db: Queryable, record: TurnJournalOpen, owner: TurnOwner): Promise<void> {
  const { changed } = await query(
    db,
    `INSERT INTO turn_journal (${columns}, node_id, lease_until) VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', NULL, $8, ${NOW_MS} + $9) ON CONFLICT (agent_id, idempotency_key) DO NOTHING`,
    [
      record.id,
      record.agentId,
      record.sessionId,
      record.conversation,
      JSON.stringify(record.request),
      record.idempotencyKey,
      record.receivedAt,
      owner.nodeId,
      owner.leaseMs,
    ],
  );
  if (changed === 0) {
    throw new StoreConflictError(
      `cannot record turn "${record.id}": agent "${record.agentId}" already has a turn with idempotency key "${record.idempotencyKey ?? ''}"`,
      { details: { agentId: record.agentId, idempotencyKey: record.idempotencyKey } },
    );
  }
}

/**
 * `TurnJournalRepository` on PostgreSQL (migration 8): a row per turn, a row per step. Each turn
 * it records is leased to its node (migration 12, decision 0061; `src/cluster/turn-leases.ts`
 * renews and takes over leases): a step or commit of a turn another node took over is refused.
 */
export class PostgresTurnJournalRepository implements TurnJournalRepository {
  readonly #connection: PostgresConnection;
  readonly #owner: TurnOwner;

  /** `leaseMs`: how long a turn this store records is held by its node (the connection's origin) before it must be renewed. */
  constructor(connection: PostgresConnection, leaseMs = DEFAULT_TURN_LEASE_MS) {
    this.#connection = connection;
    this.#owner = { nodeId: connection.origin, leaseMs };
  }

  /** Who this store records turns for (see `closeTurn`). */
  get owner(): TurnOwner {
    return this.#owner;
  }

  /** The turns of `rows` with their steps, read in one more statement. */
  async #withSteps(db: Queryable, rows: readonly Row[]): Promise<TurnJournalRecord[]> {
    const turns = rows.map((row) => parseRow(turnJournalRow, row, 'turn_journal', ['id']));
    if (turns.length === 0) return [];
    const steps = (
      await query(db, `SELECT ${turnStepColumns} FROM turn_steps WHERE turn_id = ANY($1::text[]) ORDER BY turn_id, seq`, [turns.map((turn) => turn.id)])
    ).rows.map((row) => parseRow(turnStepRow, row, 'turn_steps', ['turn_id', 'seq']));
    return turns.map((turn) => ({ ...turn, steps: steps.filter((step) => step.turnId === turn.id).map(({ turnId: _turn, ...step }) => step) }));
  }

  open(record: TurnJournalOpen): Promise<void> {
    return this.#connection.execute(
      (db) => insertTurn(db, record, this.#owner),
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
        this.#connection.transaction(async (client) => {
          if (options.open !== undefined) await insertTurn(client, options.open, this.#owner);
          // The turn's row is locked, so two writers of one turn take turns numbering its steps.
          const [turn] = (await query(client, "SELECT node_id FROM turn_journal WHERE id = $1 AND state = 'running' FOR UPDATE", [turnId])).rows;
          if (turn === undefined) throw new StoreNotFoundError(`cannot record a step of turn "${turnId}": there is no such running turn`);
          assertHeld(turn, turnId, this.#owner, 'record a step of');
          const [row] = (await query(client, 'SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM turn_steps WHERE turn_id = $1', [turnId])).rows;
          const next = Number(row?.['next'] ?? 0);
          for (const [index, step] of steps.entries()) {
            await query(client, `INSERT INTO turn_steps (${turnStepColumns}) VALUES ($1, $2, $3, $4, $5)`, [
              turnId,
              next + index,
              step.kind,
              step.at,
              JSON.stringify(step.data),
            ]);
          }
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
      async (db) =>
        (
          await this.#withSteps(
            db,
            (await query(db, `SELECT ${columns} FROM turn_journal WHERE agent_id = $1 AND idempotency_key = $2`, [agentId, idempotencyKey])).rows,
          )
        )[0],
      () => ({ action: `read the turn of agent "${agentId}" with idempotency key "${idempotencyKey}"` }),
    );
  }

  running(): Promise<TurnJournalRecord[]> {
    return this.#connection.execute(
      async (db) =>
        this.#withSteps(db, (await query(db, `SELECT ${columns} FROM turn_journal WHERE state = 'running' ORDER BY received_at, insert_order`)).rows),
      () => ({ action: 'list the running turns' }),
    );
  }

  /** Found at migration 19's index: the agent's running turns, in order, not every running turn of the cluster. */
  runningOn(agentId: string, conversation: string | null): Promise<(TurnJournalHead & { nodeId: string | null }) | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (
          await query(
            db,
            `SELECT ${columns}, node_id FROM turn_journal WHERE agent_id = $1 AND conversation IS NOT DISTINCT FROM $2 AND state = 'running' ORDER BY received_at, insert_order LIMIT 1`,
            [agentId, conversation],
          )
        ).rows;
        return row === undefined ? undefined : { ...parseRow(turnJournalRow, row, 'turn_journal', ['id']), nodeId: turnNodeOf(row) };
      },
      () => ({ action: `find the running turn of agent "${agentId}" on ${conversation === null ? 'its main session' : `conversation "${conversation}"`}` }),
    );
  }

  stepsSince(turnId: string, from: number, kind?: TurnStepRecord['kind']): Promise<{ turn: TurnJournalHead; steps: NumberedTurnStep[] } | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, `SELECT ${columns} FROM turn_journal WHERE id = $1`, [turnId])).rows;
        if (row === undefined) return undefined;
        const turn = parseRow(turnJournalRow, row, 'turn_journal', ['id']);
        const rows = (
          await query(db, `SELECT ${turnStepColumns} FROM turn_steps WHERE turn_id = $1 AND seq >= $2 AND ($3::text IS NULL OR kind = $3) ORDER BY seq`, [
            turnId,
            from,
            kind ?? null,
          ])
        ).rows;
        const steps = rows.map((step) => {
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
      () => this.#connection.transaction((client) => closeTurn(client, close, at, this.#owner)),
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
