import type pg from 'pg';
import type { AgentRecord, AgentRepository, AgentState, JsonObject, SessionRecord } from '../contracts/index.ts';
import { StoreError, StoreNotFoundError } from '../errors/index.ts';
import { type PostgresConnection, query } from './postgres-connection.ts';
import { insertSessionMessages } from './postgres-session-repository.ts';
import { parseRow, type Row } from './rows.ts';
import { agentColumns as columns, agentRow } from './table-rows.ts';

/** `AgentRepository` on PostgreSQL. */
export class PostgresAgentRepository implements AgentRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  create(agent: AgentRecord, session: SessionRecord): Promise<void> {
    return this.#connection.execute(
      async () => {
        if (session.agentId !== agent.id || session.id !== agent.sessionId) {
          throw new StoreError(
            `cannot store agent "${agent.name}": its session must be "${agent.sessionId}" of agent "${agent.id}", ` +
              `got "${session.id}" of agent "${session.agentId}"`,
          );
        }
        await this.#connection.transaction(async (client: pg.PoolClient) => {
          await query(client, `INSERT INTO agents (${columns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
            agent.id,
            agent.name,
            agent.state,
            agent.parentId,
            agent.sessionId,
            JSON.stringify(agent.manifest),
            agent.createdAt,
            agent.updatedAt,
          ]);
          // A plain INSERT, not the session repository's upsert: a taken session id is a conflict here.
          await query(client, 'INSERT INTO sessions (id, agent_id, created_at, updated_at, conversation) VALUES ($1, $2, $3, $4, $5)', [
            session.id,
            session.agentId,
            session.createdAt,
            session.updatedAt,
            session.conversation ?? null,
          ]);
          await insertSessionMessages(client, session.id, session.messages, 0);
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
      async (db) => (await query(db, `SELECT ${columns} FROM agents ORDER BY created_at, insert_order`)).rows.map(parseAgent),
      () => ({ action: 'list agents' }),
    );
  }

  get(id: string): Promise<AgentRecord | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, `SELECT ${columns} FROM agents WHERE id = $1`, [id])).rows;
        return row === undefined ? undefined : parseAgent(row);
      },
      () => ({ action: `get agent "${id}"` }),
    );
  }

  setState(id: string, state: AgentState, at: number): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        const { changed } = await query(db, 'UPDATE agents SET state = $1, updated_at = $2 WHERE id = $3', [state, at, id]);
        if (changed === 0) throw new StoreNotFoundError(`cannot set agent "${id}" to ${state}: no agent has the id "${id}"`);
      },
      () => ({ action: `set agent "${id}" to ${state}` }),
    );
  }

  updateManifest(id: string, manifest: JsonObject, at: number): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        const { changed } = await query(db, 'UPDATE agents SET manifest = $1, updated_at = $2 WHERE id = $3', [JSON.stringify(manifest), at, id]);
        if (changed === 0) throw new StoreNotFoundError(`cannot update agent "${id}": no agent has the id "${id}"`);
      },
      () => ({ action: `update the manifest of agent "${id}"` }),
    );
  }

  delete(ids: readonly string[]): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        if (ids.length === 0) return;
        // One statement, so one transaction; sessions, memory, workflows and descendant agents go by ON DELETE CASCADE.
        await query(db, 'DELETE FROM agents WHERE id = ANY($1::text[])', [ids]);
      },
      () => ({ action: `delete agents ${ids.map((id) => `"${id}"`).join(', ')}` }),
    );
  }
}

function parseAgent(row: Row): AgentRecord {
  return parseRow(agentRow, row, 'agents', ['id']);
}
