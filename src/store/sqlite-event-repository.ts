import type { DatabaseSync, StatementSync } from 'node:sqlite';
import type { EventQuery, EventRecord, EventRepository } from '../contracts/index.ts';
import { StoreError } from '../errors/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { parseRow } from './rows.ts';
import { limitParameter, type SqliteRow } from './sqlite-rows.ts';
import { eventRow } from './table-rows.ts';
import { currentEventType, withFormerEventTypes } from './event-type-names.ts';

/** The filters a statement has, beside the `seq` range every one of them takes. */
type Shape = { agent: boolean; type: boolean; types: boolean; order: 'asc' | 'desc' };

function statementKey(shape: Shape): string {
  return `${shape.agent ? 'a' : ''}${shape.type ? 't' : ''}${shape.types ? 's' : ''}:${shape.order}`;
}

/** Prepares the insert of one event; `appendEvent` runs it (the event repository's, and a session commit's). */
export function prepareEventInsert(db: DatabaseSync): StatementSync {
  return db.prepare('INSERT INTO events (at, type, agent_id, data) VALUES (?, ?, ?, ?)');
}

/** Appends `event` with a statement from `prepareEventInsert` and returns its sequence number. */
export function appendEvent(insert: StatementSync, event: Omit<EventRecord, 'seq'>): number {
  return Number(insert.run(event.at, event.type, event.agentId, JSON.stringify(event.data)).lastInsertRowid);
}

/** `EventRepository` on SQLite. Statements are prepared once per combination of filters, on first use. */
export class SqliteEventRepository implements EventRepository {
  readonly #connection: SqliteConnection;
  readonly #append: StatementSync;
  readonly #lists = new Map<string, StatementSync>();

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    this.#append = prepareEventInsert(connection.db);
  }

  append(event: Omit<EventRecord, 'seq'>): Promise<number> {
    return this.#connection.execute(
      () => appendEvent(this.#append, event),
      () => ({ action: `append event "${event.type}"` }),
    );
  }

  list(options: EventQuery = {}): Promise<EventRecord[]> {
    // Sequence numbers start at 1, so 0 means from the first event.
    const { after = 0, before = Number.MAX_SAFE_INTEGER, agentId, order = 'asc' } = options;
    const { type, types } = withFormerEventTypes(options.type, options.types);
    return this.#connection.execute(
      () => {
        const limit = limitParameter(options.limit, 'list events');
        if (!Number.isSafeInteger(after) || !Number.isSafeInteger(before)) {
          throw new StoreError(`cannot list events: after and before must be integers, got ${after} and ${before}`);
        }
        const shape: Shape = { agent: agentId !== undefined, type: type !== undefined, types: types !== undefined, order };
        const parameters: (string | number)[] = [after, before];
        if (agentId !== undefined) parameters.push(agentId);
        if (type !== undefined) parameters.push(type);
        if (types !== undefined) parameters.push(JSON.stringify(types));
        parameters.push(limit);
        return this.#statement(shape)
          .all(...parameters)
          .map((row) => parseEvent(row));
      },
      () => ({ action: 'list events' }),
    );
  }

  /**
   * One statement per combination of filters rather than `? IS NULL OR …`, which keeps SQLite off
   * the indexes; a list of types is one JSON array parameter.
   */
  #statement(shape: Shape): StatementSync {
    const key = statementKey(shape);
    let statement = this.#lists.get(key);
    if (statement === undefined) {
      const where = ['seq > ?', 'seq < ?'];
      if (shape.agent) where.push('agent_id = ?');
      if (shape.type) where.push('type = ?');
      if (shape.types) where.push('type IN (SELECT value FROM json_each(?))');
      statement = this.#connection.db.prepare(
        `SELECT seq, at, type, agent_id, data FROM events WHERE ${where.join(' AND ')} ORDER BY seq ${shape.order === 'desc' ? 'DESC' : 'ASC'} LIMIT ?`,
      );
      this.#lists.set(key, statement);
    }
    return statement;
  }
}

function parseEvent(row: SqliteRow): EventRecord {
  const event = parseRow(eventRow, row, 'events', ['seq']);
  // A row an earlier Loom wrote under a name since changed (decision 0072) reads as today's.
  return { ...event, type: currentEventType(event.type) };
}
