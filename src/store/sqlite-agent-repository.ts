import type { StatementSync } from 'node:sqlite';
import type { AgentRecord, AgentRepository, AgentState, JsonObject, SessionRecord } from '../contracts/index.ts';
import { StoreError, StoreNotFoundError } from '../errors/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { parseRow } from './rows.ts';
import type { SqliteRow } from './sqlite-rows.ts';
import { agentColumns as columns, agentRow } from './table-rows.ts';

/** `AgentRepository` on SQLite. Statements are prepared once, when the store opens. */
export class SqliteAgentRepository implements AgentRepository {
  readonly #connection: SqliteConnection;
  readonly #insert: StatementSync;
  readonly #insertSession: StatementSync;
  readonly #list: StatementSync;
  readonly #get: StatementSync;
  readonly #insertMessage: StatementSync;
  readonly #setState: StatementSync;
  readonly #updateManifest: StatementSync;
  readonly #delete: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#insert = db.prepare(`INSERT INTO agents (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
    // A plain INSERT, not the session repository's upsert: a taken session id is a conflict here.
    this.#insertSession = db.prepare('INSERT INTO sessions (id, agent_id, created_at, updated_at, conversation) VALUES (?, ?, ?, ?, ?)');
    this.#insertMessage = db.prepare('INSERT INTO session_messages (session_id, seq, message) VALUES (?, ?, ?)');
    // rowid breaks ties between agents created in the same millisecond, in insertion order.
    this.#list = db.prepare(`SELECT ${columns} FROM agents ORDER BY created_at, rowid`);
    this.#get = db.prepare(`SELECT ${columns} FROM agents WHERE id = ?`);
    this.#setState = db.prepare('UPDATE agents SET state = ?, updated_at = ? WHERE id = ?');
    this.#updateManifest = db.prepare('UPDATE agents SET manifest = ?, updated_at = ? WHERE id = ?');
    this.#delete = db.prepare('DELETE FROM agents WHERE id = ?');
  }

  create(agent: AgentRecord, session: SessionRecord): Promise<void> {
    return this.#connection.execute(
      () => {
        if (session.agentId !== agent.id || session.id !== agent.sessionId) {
          throw new StoreError(
            `cannot store agent "${agent.name}": its session must be "${agent.sessionId}" of agent "${agent.id}", ` +
              `got "${session.id}" of agent "${session.agentId}"`,
          );
        }
        this.#connection.transaction(() => {
          this.#insert.run(
            agent.id,
            agent.name,
            agent.state,
            agent.parentId,
            agent.sessionId,
            JSON.stringify(agent.manifest),
            agent.createdAt,
            agent.updatedAt,
          );
          this.#insertSession.run(session.id, session.agentId, session.createdAt, session.updatedAt, session.conversation ?? null);
          session.messages.forEach((message, seq) => this.#insertMessage.run(session.id, seq, JSON.stringify(message)));
        });
      },
      () => ({
        action: `store agent "${agent.name}"`,
        taken: {
          'agents.id': `the id "${agent.id}"`,
          'agents.name': `the name "${agent.name}"`,
          'sessions.id': `the session id "${session.id}"`,
        },
        missing: `its parent agent "${agent.parentId ?? ''}" does not exist`,
      }),
    );
  }

  list(): Promise<AgentRecord[]> {
    return this.#connection.execute(
      () => this.#list.all().map((row) => parseAgent(row)),
      () => ({ action: 'list agents' }),
    );
  }

  get(id: string): Promise<AgentRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(id);
        return row === undefined ? undefined : parseAgent(row);
      },
      () => ({ action: `get agent "${id}"` }),
    );
  }

  setState(id: string, state: AgentState, at: number): Promise<void> {
    return this.#connection.execute(
      () => {
        const { changes } = this.#setState.run(state, at, id);
        if (Number(changes) === 0) {
          throw new StoreNotFoundError(`cannot set agent "${id}" to ${state}: no agent has the id "${id}"`);
        }
      },
      () => ({ action: `set agent "${id}" to ${state}` }),
    );
  }

  updateManifest(id: string, manifest: JsonObject, at: number): Promise<void> {
    return this.#connection.execute(
      () => {
        const { changes } = this.#updateManifest.run(JSON.stringify(manifest), at, id);
        if (Number(changes) === 0) throw new StoreNotFoundError(`cannot update agent "${id}": no agent has the id "${id}"`);
      },
      () => ({ action: `update the manifest of agent "${id}"` }),
    );
  }

  delete(ids: readonly string[]): Promise<void> {
    return this.#connection.execute(
      () => {
        if (ids.length === 0) return;
        // Sessions, memory and descendant agents go by ON DELETE CASCADE, in the same transaction.
        this.#connection.transaction(() => {
          for (const id of ids) this.#delete.run(id);
        });
      },
      () => ({ action: `delete agents ${ids.map((id) => `"${id}"`).join(', ')}` }),
    );
  }
}

function parseAgent(row: SqliteRow): AgentRecord {
  return parseRow(agentRow, row, 'agents', ['id']);
}
