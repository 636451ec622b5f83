import type { StatementSync } from 'node:sqlite';
import { StoreError } from '../../errors/index.ts';
import { checkLimit, type Row } from '../rows.ts';
import type { SqliteConnection } from '../sqlite-connection.ts';
import { type Database, type Describe, drive, type Outcome, type Work } from './database.ts';
import { raw, type Parameter, type Sql, sql } from './statement.ts';

type SqliteValue = string | number | null;

/**
 * The {@link Database} on a SQLite connection: statements prepared once per text and kept, run
 * synchronously (an operation settles its promise already committed), booleans bound as 0 and 1.
 */
export class SqliteDatabase implements Database {
  readonly dialect = 'sqlite';
  readonly insertOrder = raw('rowid');
  readonly forUpdate = raw('');
  readonly #connection: SqliteConnection;
  // Texts are built from constants only (a few filter combinations), so the cache stays small.
  readonly #prepared = new Map<string, StatementSync>();

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
  }

  all(statement: Sql, describe: Describe): Promise<Row[]> {
    return this.#connection.execute(() => this.#prepare(statement).all(...bind(statement)), describe);
  }

  one(statement: Sql, describe: Describe): Promise<Row | undefined> {
    return this.#connection.execute(() => this.#prepare(statement).get(...bind(statement)), describe);
  }

  run(statement: Sql, describe: Describe): Promise<number> {
    return this.#connection.execute(() => Number(this.#prepare(statement).run(...bind(statement)).changes), describe);
  }

  steps<T>(work: () => Work<T>, describe: Describe): Promise<T> {
    return this.#connection.execute(() => drive(work(), (statement) => this.#execute(statement)), describe);
  }

  transaction<T>(work: () => Work<T>, describe: Describe): Promise<T> {
    return this.#connection.execute(() => this.#connection.transaction(() => drive(work(), (statement) => this.#execute(statement))), describe);
  }

  limit(limit: number | undefined, action: string): Parameter {
    return checkLimit(limit, action) ?? -1;
  }

  startsWith(column: string, prefix: string): Sql {
    // Not LIKE: it is case-insensitive and treats % and _ as wildcards. substr and length count code points.
    return sql`substr(${raw(column)}, 1, length(${prefix})) = ${prefix}`;
  }

  jsonWithKey(column: string, key: string, value: number): Sql {
    return sql`json_set(${raw(column)}, '$.' || json_quote(${key}), ${value})`;
  }

  #execute(statement: Sql): Outcome {
    const prepared = this.#prepare(statement);
    const values = bind(statement);
    if (prepared.columns().length > 0) {
      // As PostgreSQL counts them: the rows read, or written with RETURNING.
      const rows = prepared.all(...values);
      return { rows, changed: rows.length };
    }
    return { rows: [], changed: Number(prepared.run(...values).changes) };
  }

  #prepare(statement: Sql): StatementSync {
    const text = statement.text(() => '?');
    let prepared = this.#prepared.get(text);
    if (prepared === undefined) {
      prepared = this.#connection.db.prepare(text);
      this.#prepared.set(text, prepared);
    }
    return prepared;
  }
}

function bind(statement: Sql): SqliteValue[] {
  return statement.values.map((value): SqliteValue => {
    if (typeof value === 'boolean') return value ? 1 : 0;
    if (typeof value === 'object' && value !== null) throw new StoreError('cannot bind a list to a SQLite statement: SQLite has no array parameters');
    return value;
  });
}
