import type { StatementSync } from 'node:sqlite';
import { z } from 'zod';
import type { EventRecord, EventRepository } from '../contracts/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { jsonObjectText, limitParameter, parseRow, type SqliteRow } from './sqlite-rows.ts';

const eventRow = z
  .object({
    seq: z.number(),
    at: z.number(),
    type: z.string(),
    agent_id: z.string().nullable(),
    data: jsonObjectText,
  })
  .transform(
    (row): EventRecord => ({ seq: row.seq, at: row.at, type: row.type, agentId: row.agent_id, data: row.data }),
  );

const select = 'SELECT seq, at, type, agent_id, data FROM events WHERE seq > ?';
const order = 'ORDER BY seq LIMIT ?';

/** `EventRepository` on SQLite. Statements are prepared once, when the store opens. */
export class SqliteEventRepository implements EventRepository {
  readonly #connection: SqliteConnection;
  readonly #append: StatementSync;
  readonly #list: StatementSync;
  readonly #listByAgent: StatementSync;
  readonly #listByType: StatementSync;
  readonly #listByAgentAndType: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#append = db.prepare('INSERT INTO events (at, type, agent_id, data) VALUES (?, ?, ?, ?)');
    // One statement per filter rather than `? IS NULL OR …`, which keeps SQLite off the indexes.
    this.#list = db.prepare(`${select} ${order}`);
    this.#listByAgent = db.prepare(`${select} AND agent_id = ? ${order}`);
    this.#listByType = db.prepare(`${select} AND type = ? ${order}`);
    this.#listByAgentAndType = db.prepare(`${select} AND agent_id = ? AND type = ? ${order}`);
  }

  append(event: Omit<EventRecord, 'seq'>): Promise<number> {
    return this.#connection.execute(
      () => Number(this.#append.run(event.at, event.type, event.agentId, JSON.stringify(event.data)).lastInsertRowid),
      () => ({ action: `append event "${event.type}"` }),
    );
  }

  list(options: { after?: number; agentId?: string; type?: string; limit?: number } = {}): Promise<EventRecord[]> {
    // Sequence numbers start at 1, so 0 means from the first event.
    const { after = 0, agentId, type } = options;
    return this.#connection.execute(
      () => {
        const limit = limitParameter(options.limit, 'list events');
        const rows =
          agentId === undefined
            ? type === undefined
              ? this.#list.all(after, limit)
              : this.#listByType.all(after, type, limit)
            : type === undefined
              ? this.#listByAgent.all(after, agentId, limit)
              : this.#listByAgentAndType.all(after, agentId, type, limit);
        return rows.map((row) => parseEvent(row));
      },
      () => ({ action: 'list events' }),
    );
  }
}

function parseEvent(row: SqliteRow): EventRecord {
  return parseRow(eventRow, row, 'events', ['seq']);
}
