import { checkLimit, type Row } from '../rows.ts';
import { type PostgresConnection, query, type Queryable } from '../postgres-connection.ts';
import { type Database, type Describe, driveAsync, type Outcome, type Work } from './database.ts';
import { raw, type Parameter, type Sql, sql } from './statement.ts';

/** The {@link Database} on a PostgreSQL pool: one round trip per statement, parameters numbered `$1`, `$2`…. */
export class PostgresDatabase implements Database {
  readonly dialect = 'postgres';
  readonly insertOrder = raw('insert_order');
  readonly forUpdate = raw(' FOR UPDATE');
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  all(statement: Sql, describe: Describe): Promise<Row[]> {
    return this.#connection.execute(async (db) => (await execute(db, statement)).rows, describe);
  }

  one(statement: Sql, describe: Describe): Promise<Row | undefined> {
    return this.#connection.execute(async (db) => (await execute(db, statement)).rows[0], describe);
  }

  run(statement: Sql, describe: Describe): Promise<number> {
    return this.#connection.execute(async (db) => (await execute(db, statement)).changed, describe);
  }

  steps<T>(work: () => Work<T>, describe: Describe): Promise<T> {
    return this.#connection.execute((db) => driveAsync(work(), (statement) => execute(db, statement)), describe);
  }

  transaction<T>(work: () => Work<T>, describe: Describe): Promise<T> {
    return this.#connection.execute(() => this.#connection.transaction((client) => driveAsync(work(), (statement) => execute(client, statement))), describe);
  }

  limit(limit: number | undefined, action: string): Parameter {
    return checkLimit(limit, action) ?? null;
  }

  startsWith(column: string, prefix: string): Sql {
    return sql`starts_with(${raw(column)}, ${prefix})`;
  }

  jsonWithKey(column: string, key: string, value: number): Sql {
    return sql`jsonb_set(${raw(column)}::jsonb, ARRAY[${key}::text], to_jsonb(${value}::bigint))::text`;
  }
}

function execute(db: Queryable, statement: Sql): Promise<Outcome> {
  return query(
    db,
    statement.text((position) => `$${position}`),
    statement.values,
  );
}
