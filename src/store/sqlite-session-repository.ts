import type { StatementSync } from 'node:sqlite';
import { z } from 'zod';
import type { SessionRecord, SessionRepository } from '../contracts/index.ts';
import { StoreConflictError } from '../errors/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { jsonArrayText, parseRow, type SqliteRow } from './sqlite-rows.ts';

const sessionRow = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    messages: jsonArrayText,
    created_at: z.number(),
    updated_at: z.number(),
  })
  .transform(
    (row): SessionRecord => ({
      id: row.id,
      agentId: row.agent_id,
      messages: row.messages,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    }),
  );

const columns = 'id, agent_id, messages, created_at, updated_at';

/** `SessionRepository` on SQLite. Statements are prepared once, when the store opens. */
export class SqliteSessionRepository implements SessionRepository {
  readonly #connection: SqliteConnection;
  readonly #get: StatementSync;
  readonly #listByAgent: StatementSync;
  readonly #save: StatementSync;
  readonly #revision: StatementSync;
  readonly #delete: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#get = db.prepare(`SELECT ${columns} FROM sessions WHERE id = ?`);
    this.#listByAgent = db.prepare(`SELECT ${columns} FROM sessions WHERE agent_id = ? ORDER BY created_at, rowid`);
    // An upsert rather than INSERT OR REPLACE: REPLACE deletes the old row first, which would
    // change its rowid (the tie-break for listByAgent order).
    this.#save = db.prepare(
      `INSERT INTO sessions (${columns}, revision) VALUES (?, ?, ?, ?, ?, 1)
       ON CONFLICT (id) DO UPDATE SET
         agent_id = excluded.agent_id,
         messages = excluded.messages,
         created_at = excluded.created_at,
         updated_at = excluded.updated_at,
         revision = sessions.revision + 1
       RETURNING revision`,
    );
    this.#revision = db.prepare('SELECT revision FROM sessions WHERE id = ?');
    this.#delete = db.prepare('DELETE FROM sessions WHERE id = ?');
  }

  get(id: string): Promise<SessionRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(id);
        return row === undefined ? undefined : parseSession(row);
      },
      () => ({ action: `get session "${id}"` }),
    );
  }

  listByAgent(agentId: string): Promise<SessionRecord[]> {
    return this.#connection.execute(
      () => this.#listByAgent.all(agentId).map((row) => parseSession(row)),
      () => ({ action: `list the sessions of agent "${agentId}"` }),
    );
  }

  save(session: SessionRecord, options: { expectedRevision?: number } = {}): Promise<number> {
    return this.#connection.execute(
      () => {
        const write = (): number => {
          const row = this.#save.get(session.id, session.agentId, JSON.stringify(session.messages), session.createdAt, session.updatedAt);
          return Number(row?.['revision'] ?? 0);
        };
        const { expectedRevision } = options;
        if (expectedRevision === undefined) return write();
        return this.#connection.transaction(() => {
          const current = this.#revision.get(session.id);
          const revision = current === undefined ? 0 : Number(current['revision']);
          if (revision !== expectedRevision) {
            throw new StoreConflictError(`cannot save session "${session.id}": it was saved elsewhere meanwhile (revision ${revision}, expected ${expectedRevision})`, {
              details: { sessionId: session.id, revision, expectedRevision },
            });
          }
          return write();
        });
      },
      () => ({ action: `save session "${session.id}"`, missing: `agent "${session.agentId}" does not exist` }),
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

function parseSession(row: SqliteRow): SessionRecord {
  return parseRow(sessionRow, row, 'sessions', ['id']);
}
