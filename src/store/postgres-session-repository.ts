import type { JsonValue, SessionRecord, SessionRepository, SessionWriteOptions } from '../contracts/index.ts';
import { StoreConflictError, StoreNotFoundError } from '../errors/index.ts';
import { type NamedStatement, type PostgresConnection, type Queryable, query, queryNamed } from './postgres-connection.ts';
import { insertEvent } from './postgres-event-repository.ts';
import { assertTurnHeld, closeTurn, type TurnOwner } from './postgres-turn-journal-repository.ts';
import { appendAtRevision } from './postgres-turn-commit.ts';
import { recordUsage } from './postgres-usage-repository.ts';
import { parseRow, type Row } from './rows.ts';
import { sessionMessageRow, sessionRow } from './table-rows.ts';

/** A session with its messages in one statement (one snapshot): a row per message, or one with a null `seq` when it has none. */
const withMessages = `SELECT sessions.id, sessions.agent_id, sessions.created_at, sessions.updated_at, sessions.conversation, session_messages.seq, session_messages.message
  FROM sessions LEFT JOIN session_messages ON session_messages.session_id = sessions.id`;

/**
 * Inserts `messages` as rows of session `id`, numbered from `from`, in one statement.
 * Shared with the agent repository, which stores an agent's first session.
 */
export async function insertSessionMessages(db: Queryable, id: string, messages: readonly JsonValue[], from: number): Promise<void> {
  if (messages.length === 0) return;
  await query(
    db,
    `INSERT INTO session_messages (session_id, seq, message)
     SELECT $1, ($2::integer + item.ordinality - 1)::integer, item.message FROM unnest($3::text[]) WITH ORDINALITY AS item (message, ordinality)`,
    [id, from, messages.map((message) => JSON.stringify(message))],
  );
}

/**
 * `SessionRepository` on PostgreSQL. A session is a row, its messages one row each (`seq` orders
 * them), so appending a turn writes only the turn. Every write locks the session's row, so
 * concurrent writers of one session, from this process or another node, take turns: a save, and
 * an append without an expected revision, with `FOR UPDATE` before anything else; an append with
 * one (a turn's commit) is one statement whose update compares and locks at once
 * (`appendAtRevision`).
 */
export class PostgresSessionRepository implements SessionRepository {
  readonly #connection: PostgresConnection;
  /** Whose turns its commits close: a commit of a turn another node took over is refused. */
  readonly #turnOwner: TurnOwner;

  constructor(connection: PostgresConnection, turnOwner: TurnOwner) {
    this.#connection = connection;
    this.#turnOwner = turnOwner;
  }

  get(id: string): Promise<SessionRecord | undefined> {
    return this.#connection.execute(
      async (db) => readSessions((await query(db, `${withMessages} WHERE sessions.id = $1 ORDER BY session_messages.seq`, [id])).rows)[0],
      () => ({ action: `get session "${id}"` }),
    );
  }

  listByAgent(agentId: string): Promise<SessionRecord[]> {
    return this.#connection.execute(
      async (db) =>
        readSessions(
          (await query(db, `${withMessages} WHERE sessions.agent_id = $1 ORDER BY sessions.created_at, sessions.insert_order, session_messages.seq`, [agentId]))
            .rows,
        ),
      () => ({ action: `list the sessions of agent "${agentId}"` }),
    );
  }

  save(session: SessionRecord, options: SessionWriteOptions & { expectedRevision?: number } = {}): Promise<number> {
    const { expectedRevision } = options;
    return this.#connection.execute(
      () =>
        this.#connection.transaction(async (client) => {
          const current = (await lockedRevision(client, session.id)) ?? 0;
          checkRevision(session.id, current, expectedRevision);
          // With an expected revision, the update also requires it: a session another writer
          // created after the lock above found none is a conflict, not overwritten.
          const { rows } = await query(
            client,
            `INSERT INTO sessions (id, agent_id, created_at, updated_at, conversation, revision) VALUES ($1, $2, $3, $4, $5, 1)
             ON CONFLICT (id) DO UPDATE SET
               agent_id = excluded.agent_id,
               created_at = excluded.created_at,
               updated_at = excluded.updated_at,
               conversation = excluded.conversation,
               revision = sessions.revision + 1
             ${expectedRevision === undefined ? '' : 'WHERE sessions.revision = $6'}
             RETURNING revision`,
            [
              session.id,
              session.agentId,
              session.createdAt,
              session.updatedAt,
              session.conversation ?? null,
              ...(expectedRevision === undefined ? [] : [expectedRevision]),
            ],
          );
          const revision = rows[0]?.['revision'];
          if (typeof revision !== 'number') checkRevision(session.id, (await lockedRevision(client, session.id)) ?? 0, expectedRevision, true);
          await query(client, 'DELETE FROM session_messages WHERE session_id = $1', [session.id]);
          await insertSessionMessages(client, session.id, session.messages, 0);
          if (options.closeTurn !== undefined) await closeTurn(client, options.closeTurn, session.updatedAt, this.#turnOwner);
          for (const event of options.events ?? []) await insertEvent(client, event, this.#connection.origin);
          // Last, just before the commit: the usage adds to its capped families' totals, whose rows it locks (see recordUsage).
          await recordUsage(client, options.usage ?? []);
          return Number(revision);
        }),
      () => ({ action: `save session "${session.id}"`, missing: `agent "${session.agentId}" does not exist` }),
    );
  }

  append(id: string, messages: readonly JsonValue[], options: SessionWriteOptions & { expectedRevision?: number; updatedAt: number }): Promise<number> {
    const { expectedRevision } = options;
    if (expectedRevision !== undefined) {
      // A turn's commit: one statement, one round trip.
      return this.#connection.execute(
        async (db) => {
          const revision = await this.#connection.commitOne(() =>
            appendAtRevision(db, id, messages, { ...options, expectedRevision }, this.#connection.origin, this.#turnOwner.nodeId),
          );
          if (revision !== undefined) return revision;
          // Nothing was written: the turn another node took over, or the session at another revision.
          if (options.closeTurn !== undefined) await assertTurnHeld(db, options.closeTurn.turnId, this.#turnOwner);
          const current = await storedRevision(db, id);
          // A session that went is at revision 0, as on SQLite: a conflict unless 0 was expected.
          if (current === undefined && expectedRevision === 0) throw new StoreNotFoundError(`cannot append to session "${id}": there is no such session`);
          return checkRevision(id, current ?? 0, expectedRevision, true);
        },
        () => ({ action: `append to session "${id}"` }),
      );
    }
    // Without a revision to compare, the session's row is locked first: the next number must be
    // read after every earlier append committed.
    return this.#connection.execute(
      () =>
        this.#connection.transaction(async (client) => {
          const { revision, next } = await bumpRevision(client, id, options.updatedAt);
          await insertSessionMessages(client, id, messages, next);
          if (options.closeTurn !== undefined) await closeTurn(client, options.closeTurn, options.updatedAt, this.#turnOwner);
          for (const event of options.events ?? []) await insertEvent(client, event, this.#connection.origin);
          await recordUsage(client, options.usage ?? []);
          return revision;
        }),
      () => ({ action: `append to session "${id}"` }),
    );
  }

  revision(id: string): Promise<number | undefined> {
    return this.#connection.execute(
      (db) => storedRevision(db, id),
      () => ({ action: `read the revision of session "${id}"` }),
    );
  }

  delete(id: string): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(db, 'DELETE FROM sessions WHERE id = $1', [id]);
      },
      () => ({ action: `delete session "${id}"` }),
    );
  }
}

/** Every turn reads it first, to know whether the history it holds is current. */
const REVISION: NamedStatement = { name: 'loom_session_revision', text: 'SELECT revision FROM sessions WHERE id = $1' };

/** The session's revision; undefined when there is no such session. */
async function storedRevision(db: Queryable, id: string): Promise<number | undefined> {
  const [row] = (await queryNamed(db, REVISION, [id])).rows;
  return row === undefined ? undefined : Number(row['revision']);
}

/** The session's revision, its row locked until the transaction ends; undefined when there is no such session. */
async function lockedRevision(db: Queryable, id: string): Promise<number | undefined> {
  const [row] = (await query(db, 'SELECT revision FROM sessions WHERE id = $1 FOR UPDATE', [id])).rows;
  return row === undefined ? undefined : Number(row['revision']);
}

/**
 * Raises session `id`'s revision for an append without an expected revision, its row locked
 * first (until the transaction ends), and answers the new revision and the number of the next
 * message, read after every earlier append committed.
 * @throws {StoreNotFoundError} when there is no such session.
 */
async function bumpRevision(db: Queryable, id: string, updatedAt: number): Promise<{ revision: number; next: number }> {
  if ((await lockedRevision(db, id)) === undefined) throw new StoreNotFoundError(`cannot append to session "${id}": there is no such session`);
  const { rows } = await query(
    db,
    `UPDATE sessions SET updated_at = $1, revision = revision + 1 WHERE id = $2
     RETURNING revision, (SELECT COALESCE(MAX(seq) + 1, 0) FROM session_messages WHERE session_id = $2) AS next`,
    [updatedAt, id],
  );
  const [row] = rows;
  return { revision: Number(row?.['revision']), next: Number(row?.['next']) };
}

/** Throws `StoreConflictError` when `expectedRevision` is given and is not `revision` (or always, with `always`). */
function checkRevision(id: string, revision: number, expectedRevision: number | undefined, always: true): never;
function checkRevision(id: string, revision: number, expectedRevision: number | undefined, always?: boolean): void;
function checkRevision(id: string, revision: number, expectedRevision: number | undefined, always = false): void {
  if (expectedRevision === undefined || (revision === expectedRevision && !always)) return;
  throw new StoreConflictError(`cannot save session "${id}": it was saved elsewhere meanwhile (revision ${revision}, expected ${expectedRevision})`, {
    details: { sessionId: id, revision, expectedRevision },
  });
}

/** Sessions from the rows of `withMessages`, in the order their first rows come. */
function readSessions(rows: readonly Row[]): SessionRecord[] {
  const sessions = new Map<string, SessionRecord>();
  for (const row of rows) {
    const session = parseRow(sessionRow, row, 'sessions', ['id']);
    let record = sessions.get(session.id);
    if (record === undefined) {
      record = {
        id: session.id,
        agentId: session.agent_id,
        messages: [],
        createdAt: session.created_at,
        updatedAt: session.updated_at,
        conversation: session.conversation,
      };
      sessions.set(session.id, record);
    }
    if (row['seq'] !== null)
      record.messages.push(parseRow(sessionMessageRow, { ...row, session_id: session.id }, 'session_messages', ['session_id', 'seq']).message);
  }
  return [...sessions.values()];
}
