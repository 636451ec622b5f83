import type { EventQuery, EventRecord, EventRepository } from '../contracts/index.ts';
import { StoreError } from '../errors/index.ts';
import { type Parameter, type PostgresConnection, type Queryable, query } from './postgres-connection.ts';
import { checkLimit, parseRow, type Row } from './rows.ts';
import { eventColumns, eventRow } from './table-rows.ts';
import { currentEventType, withFormerEventTypes } from './event-type-names.ts';

/**
 * What a read of the log runs first, in its transaction: it waits until every append in flight
 * has committed or rolled back (an `INSERT` holds `ROW EXCLUSIVE` on the table until then, which
 * `SHARE` waits for), so the read sees every event numbered below the newest it sees, and an
 * event appended later gets a higher number (the identity's sequence only goes up). A reader
 * that has seen `seq` n thus never later finds a new event below n, although appends on two
 * connections take their numbers and commit in either order: appends never wait for each other
 * (decision 0058); a read waits for the appends in flight, and appends that start meanwhile wait
 * for the read, for one statement.
 */
const READ_AFTER_APPENDS_IN_FLIGHT = 'LOCK TABLE events IN SHARE MODE';

/**
 * The channel each appended event is announced on, in its transaction (so at its commit, in the
 * order of sequence numbers): the payload is `<origin>:<seq>`, the writer's origin (a node's id)
 * and the event's sequence number; a listener reads the event itself from the table.
 */
export const EVENT_CHANNEL = 'loom_events';

/**
 * Appends `event` inside `db`'s transaction, announces it on `EVENT_CHANNEL` as `origin`'s, and
 * returns its sequence number (the event repository's append, and a session commit's). Takes no
 * lock of its own: appends on other connections go on meanwhile, and reads wait for it (see
 * {@link READ_AFTER_APPENDS_IN_FLIGHT}).
 */
export async function insertEvent(db: Queryable, event: Omit<EventRecord, 'seq'>, origin: string): Promise<number> {
  const { rows } = await query(
    db,
    `WITH added AS (INSERT INTO events (at, type, agent_id, data) VALUES ($1::bigint, $2::text, $3::text, $4::text) RETURNING seq)
     SELECT seq, pg_notify('${EVENT_CHANNEL}', $5::text || ':' || seq::text) FROM added`,
    [event.at, event.type, event.agentId, JSON.stringify(event.data), origin],
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
      // One statement, so one transaction.
      (db) => insertEvent(db, event, this.#connection.origin),
      () => ({ action: `append event "${event.type}"` }),
    );
  }

  list(options: EventQuery = {}): Promise<EventRecord[]> {
    // Sequence numbers start at 1, so 0 means from the first event.
    const { after = 0, before = Number.MAX_SAFE_INTEGER, agentId, order = 'asc' } = options;
    const { type, types } = withFormerEventTypes(options.type, options.types);
    return this.#connection.execute(
      async () => {
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
        return this.#connection.transaction(async (client) => {
          await client.query(READ_AFTER_APPENDS_IN_FLIGHT);
          return (await query(client, text, values)).rows.map(parseEvent);
        });
      },
      () => ({ action: 'list events' }),
    );
  }
}

function parseEvent(row: Row): EventRecord {
  const event = parseRow(eventRow, row, 'events', ['seq']);
  // A row an earlier Loom wrote under a name since changed (decision 0072) reads as today's.
  return { ...event, type: currentEventType(event.type) };
}
