import type { StatementSync } from 'node:sqlite';
import type { JsonValue, SessionRecord, SessionRepository, SessionWriteOptions, TurnJournalClose } from '../contracts/index.ts';
import { StoreConflictError, StoreNotFoundError } from '../errors/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { appendEvent, prepareEventInsert } from './sqlite-event-repository.ts';
import { parseRow } from './rows.ts';
import { prepareTurnClose } from './sqlite-turn-journal-repository.ts';
import type { SqliteRow } from './sqlite-rows.ts';
import { sessionColumns as columns, sessionMessageRow as messageRow, sessionRow } from './table-rows.ts';

/**
 * `SessionRepository` on SQLite. A session is a row, its messages one row each (`seq` orders
 * them), so appending a turn writes only the turn. Statements are prepared once, at open.
 */
export class SqliteSessionRepository implements SessionRepository {
  readonly #connection: SqliteConnection;
  readonly #get: StatementSync;
  readonly #messages: StatementSync;
  readonly #listByAgent: StatementSync;
  readonly #upsert: StatementSync;
  readonly #touch: StatementSync;
  readonly #touchAt: StatementSync;
  readonly #clearMessages: StatementSync;
  readonly #insertMessage: StatementSync;
  readonly #nextSeq: StatementSync;
  readonly #revision: StatementSync;
  readonly #delete: StatementSync;
  readonly #recordUsage: StatementSync;
  readonly #appendEvent: StatementSync;
  readonly #closeTurn: (close: TurnJournalClose, at: number) => void;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#get = db.prepare(`SELECT ${columns} FROM sessions WHERE id = ?`);
    this.#messages = db.prepare('SELECT session_id, seq, message FROM session_messages WHERE session_id = ? ORDER BY seq');
    this.#listByAgent = db.prepare(`SELECT ${columns} FROM sessions WHERE agent_id = ? ORDER BY created_at, rowid`);
    // An upsert rather than INSERT OR REPLACE: REPLACE deletes the old row first, which would
    // change its rowid (the tie-break for listByAgent order) and cascade to its messages.
    this.#upsert = db.prepare(
      `INSERT INTO sessions (${columns}, revision) VALUES (?, ?, ?, ?, ?, 1)
       ON CONFLICT (id) DO UPDATE SET
         agent_id = excluded.agent_id,
         created_at = excluded.created_at,
         updated_at = excluded.updated_at,
         conversation = excluded.conversation,
         revision = sessions.revision + 1
       RETURNING revision`,
    );
    this.#touch = db.prepare('UPDATE sessions SET updated_at = ?, revision = revision + 1 WHERE id = ? RETURNING revision');
    // The same, only while the session is at the revision its writer read: the check and the write in one statement.
    this.#touchAt = db.prepare('UPDATE sessions SET updated_at = ?, revision = revision + 1 WHERE id = ? AND revision = ? RETURNING revision');
    this.#clearMessages = db.prepare('DELETE FROM session_messages WHERE session_id = ?');
    this.#insertMessage = db.prepare('INSERT INTO session_messages (session_id, seq, message) VALUES (?, ?, ?)');
    this.#nextSeq = db.prepare('SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM session_messages WHERE session_id = ?');
    this.#revision = db.prepare('SELECT revision FROM sessions WHERE id = ?');
    this.#delete = db.prepare('DELETE FROM sessions WHERE id = ?');
    this.#recordUsage = db.prepare(
      'INSERT INTO usage (agent_id, at, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, lineage) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.#appendEvent = prepareEventInsert(db);
    this.#closeTurn = prepareTurnClose(db);
  }

  /** What commits with a session's messages: the usage of the turn that wrote them, its audit record, and the close of its journal. */
  #record(options: SessionWriteOptions, at: number): void {
    for (const record of options.usage ?? []) {
      this.#recordUsage.run(
        record.agentId,
        record.at,
        record.model,
        record.inputTokens,
        record.outputTokens,
        record.cacheReadTokens ?? 0,
        record.cacheWriteTokens ?? 0,
        record.costUsd,
        record.lineage ?? null,
      );
    }
    for (const event of options.events ?? []) appendEvent(this.#appendEvent, event);
    if (options.closeTurn !== undefined) this.#closeTurn(options.closeTurn, at);
  }

  #read(row: SqliteRow): SessionRecord {
    const session = parseRow(sessionRow, row, 'sessions', ['id']);
    const messages = this.#messages.all(session.id).map((message) => parseRow(messageRow, message, 'session_messages', ['session_id', 'seq']).message);
    return {
      id: session.id,
      agentId: session.agent_id,
      messages,
      createdAt: session.created_at,
      updatedAt: session.updated_at,
      conversation: session.conversation,
    };
  }

  /** The stored revision, 0 when there is no such session. */
  #currentRevision(id: string): number {
    const row = this.#revision.get(id);
    return row === undefined ? 0 : Number(row['revision']);
  }

  #expect(id: string, expectedRevision: number | undefined): void {
    if (expectedRevision === undefined) return;
    const revision = this.#currentRevision(id);
    if (revision !== expectedRevision) {
      throw new StoreConflictError(`cannot save session "${id}": it was saved elsewhere meanwhile (revision ${revision}, expected ${expectedRevision})`, {
        details: { sessionId: id, revision, expectedRevision },
      });
    }
  }

  #insertMessages(id: string, messages: readonly JsonValue[], from: number): void {
    messages.forEach((message, index) => this.#insertMessage.run(id, from + index, JSON.stringify(message)));
  }

  get(id: string): Promise<SessionRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(id);
        return row === undefined ? undefined : this.#read(row);
      },
      () => ({ action: `get session "${id}"` }),
    );
  }

  listByAgent(agentId: string): Promise<SessionRecord[]> {
    return this.#connection.execute(
      () => this.#listByAgent.all(agentId).map((row) => this.#read(row)),
      () => ({ action: `list the sessions of agent "${agentId}"` }),
    );
  }

  save(session: SessionRecord, options: SessionWriteOptions & { expectedRevision?: number } = {}): Promise<number> {
    return this.#connection.execute(
      () =>
        this.#connection.transaction(() => {
          this.#expect(session.id, options.expectedRevision);
          const row = this.#upsert.get(session.id, session.agentId, session.createdAt, session.updatedAt, session.conversation ?? null);
          this.#clearMessages.run(session.id);
          this.#insertMessages(session.id, session.messages, 0);
          this.#record(options, session.updatedAt);
          return Number(row?.['revision'] ?? 0);
        }),
      () => ({ action: `save session "${session.id}"`, missing: `agent "${session.agentId}" does not exist` }),
    );
  }

  append(id: string, messages: readonly JsonValue[], options: SessionWriteOptions & { expectedRevision?: number; updatedAt: number }): Promise<number> {
    return this.#connection.execute(
      () =>
        this.#connection.transaction(() => {
          const { expectedRevision } = options;
          const touched = expectedRevision === undefined ? this.#touch.get(options.updatedAt, id) : this.#touchAt.get(options.updatedAt, id, expectedRevision);
          if (touched === undefined) {
            // Not at the revision expected (a conflict: a session that went is at revision 0), or, 0 expected, no such session.
            this.#expect(id, expectedRevision);
            throw new StoreNotFoundError(`cannot append to session "${id}": there is no such session`);
          }
          const next = Number(this.#nextSeq.get(id)?.['next'] ?? 0);
          this.#insertMessages(id, messages, next);
          this.#record(options, options.updatedAt);
          return Number(touched['revision']);
        }),
      () => ({ action: `append to session "${id}"` }),
    );
  }

  revision(id: string): Promise<number | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#revision.get(id);
        return row === undefined ? undefined : Number(row['revision']);
      },
      () => ({ action: `read the revision of session "${id}"` }),
    );
  }

  delete(id: string): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#delete.run(id);
      },
      () => ({ action: `delete session "${id}"` }),
    );
  }
}
