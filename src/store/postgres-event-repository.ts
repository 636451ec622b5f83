import type { EventQuery, EventRecord, EventRepository } from '../contracts/index.ts';
import { StoreError } from '../errors/index.ts';
import { type Parameter, type PostgresConnection, type Queryable, query } from './postgres-connection.ts';
import { checkLimit, parseRow, type Row } from './rows.ts';
import { eventColumns, eventRow } from './table-rows.ts';

/**
 * The advisory lock an append holds until it commits, so events commit in the order of their
 * sequence numbers: a reader that has seen `seq` n never later finds a new event below n.
 * (Without it, two appends on two connections could commit out of order.)
 */
export const EVENT_APPEND_LOCK_KEY = 0x4c6f6f6d + 1;

/**
 * The channel each appended event is announced on, in its transaction (so at its commit, in the
 * order of sequence numbers): the payload is `<origin>:<seq>`, the writer's origin (a node's id)
 * and the event's sequence number; a listener reads the event itself from the table.
 */
export const EVENT_CHANNEL = 'loom_events';

/**
 * Appends `event` inside `db`'s transaction, announces it on `EVENT_CHANNEL` as `origin`'s, and
 * returns its sequence number (the event repository's append, and a session commit's). Takes the
 * append lock, held until the commit.
 */
export async function insertEvent(db: Queryable, event: Omit<EventRecord, 'seq'>, origin: string): Promise<number> {
  // One statement: the lock is taken before the row gets its number.
  const { rows } = await query(
    db,
    `WITH ordered AS (SELECT pg_advisory_xact_lock($5)),
     added AS (INSERT INTO events (at, type, agent_id, data) SELECT $1::bigint, $2::text, $3::text, $4::text FROM ordered RETURNING seq)
     SELECT seq, pg_notify('${EVENT_CHANNEL}', $6::text || ':' || seq::text) FROM added`,
    [event.at, event.type, event.agentId, JSON.stringify(event.data), EVENT_APPEND_LOCK_KEY, origin],
  );
  return Number(rows[0]?.['seq']);
}

/** `EventRepository` on PostgreSQL: `seq` is an identity column, never handed out twice. */
export class PostgresEventRepository implements EventRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  append(event: Omit<EventRecord, 'seq'>): Promise<number> {
    return this.#connection.execute(
      // One statement, so one transaction: the lock is held until it commits.
      (db) => insertEvent(db, event, this.#connection.origin),
      () => ({ action: `append event "${event.type}"` }),
    );
  }

  list(options: EventQuery = {}): Promise<EventRecord[]> {
    // Sequence numbers start at 1, so 0 means from the first event.
    const { after = 0, before = Number.MAX_SAFE_INTEGER, agentId, type, types, order = 'asc' } = options;
    return this.#connection.execute(
      async (db) => {
        const limit = checkLimit(options.limit, 'list events') ?? null;
        if (!Number.isSafeInteger(after) || !Number.isSafeInteger(before)) {
          throw new StoreError(`cannot list events: after and before must be integers, got ${after} and ${before}`);
        }
        const values: Parameter[] = [after, before];
        const where = ['seq > $1', 'seq < $2'];
        if (agentId !== undefined) where.push(`agent_id = $${values.push(agentId)}`);
        if (type !== undefined) where.push(`type = $${values.push(type)}`);
        if (types !== undefined) where.push(`type = ANY($${values.push(types)}::text[])`);
        const text = `SELECT ${eventColumns} FROM events WHERE ${where.join(' AND ')} ORDER BY seq ${order === 'desc' ? 'DESC' : 'ASC'} LIMIT $${values.push(limit)}`;
        return (await query(db, text, values)).rows.map(parseEvent);
      },
      () => ({ action: 'list events' }),
    );
  }
}

function parseEvent(row: Row): EventRecord {
  return parseRow(eventRow, row, 'events', ['seq']);
}
