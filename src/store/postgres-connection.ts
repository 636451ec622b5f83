import type pg from 'pg';
import { StoreClosedError } from '../errors/index.ts';
import { NOT_QUERYABLE, toPostgresStoreError } from './postgres-errors.ts';
import type { Row } from './rows.ts';
import type { Parameter } from './sql/statement.ts';
import type { OperationContext } from './sqlite-errors.ts';
import { commitStart, tellCommit } from './store-commits.ts';

/**
 * Runs `work` on a client of `pool` inside `BEGIN … COMMIT`, rolling back when it throws or when
 * `keep` says its result is not to be kept. A client whose connection is lost meanwhile, or whose
 * rollback fails, is destroyed rather than returned to the pool. A checked-out client has lost the
 * pool's error listener, so one is added while it is out: a connection lost then (the server
 * restarting) would otherwise emit an 'error' nobody hears, which ends the process.
 */
export async function inTransaction<T>(
  pool: Pick<pg.Pool, 'connect'>,
  work: (client: pg.PoolClient) => Promise<T>,
  keep: (result: T) => boolean = () => true,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // The statement running fails by itself; the listener only marks the client broken.
  const onError = (error: Error): void => {
    broken ??= error;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query(keep(result) ? 'COMMIT' : 'ROLLBACK');
    return result;
  } catch (error) {
    // A statement asked for after the connection failed is refused as "not queryable": the
    // connection's own error says why (the server shutting down, the connection cut).
    const failure = broken !== undefined && error instanceof Error && NOT_QUERYABLE.test(error.message) ? broken : error;
    await client.query('ROLLBACK').catch((rollbackError: unknown) => {
      broken ??= rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw failure;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}

/** A pool or one of its clients: what runs a statement. */
export type Queryable = Pick<pg.PoolClient, 'query'>;

/** A value bound to a statement's `$n` parameter. */
export type { Parameter };

/**
 * Runs one parameterised statement and returns its rows and how many it changed. Statements are
 * only ever built from constants; every value goes in `values`.
 */
export async function query(db: Queryable, text: string, values: readonly Parameter[] = []): Promise<{ rows: Row[]; changed: number }> {
  const result = await db.query<Row>(text, values as Parameter[]);
  return { rows: result.rows, changed: result.rowCount ?? 0 };
}

/**
 * A statement prepared once per connection under its `name` and run by name after (`pg` sends
 * `Parse` only the first time on each connection), so the server parses and plans it once, not
 * at every turn. For the statements every turn runs; `text` must be a constant, one per name.
 */
export interface NamedStatement {
  name: string;
  text: string;
}

/** Runs `statement` with `values` as {@link query} does, prepared on the connection. */
export async function queryNamed(db: Queryable, statement: NamedStatement, values: readonly Parameter[]): Promise<{ rows: Row[]; changed: number }> {
  const result = await db.query<Row>({ name: statement.name, text: statement.text, values: values as Parameter[] });
  return { rows: result.rows, changed: result.rowCount ?? 0 };
}

/**
 * The open pool shared by one store's repositories: it refuses work once closed, maps failures
 * to typed errors and runs transactions.
 */
export class PostgresConnection {
  readonly pool: pg.Pool;
  /** The URL without its password, for messages. */
  readonly target: string;
  /** Who writes through this pool, named in each event's notification (`NOTIFY loom_events`), so a node skips its own. */
  readonly origin: string;
  #closed = false;

  constructor(pool: pg.Pool, target: string, origin: string) {
    this.pool = pool;
    this.target = target;
    this.origin = origin;
  }

  /** Whether `close()` has been called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Runs `work` as one store operation: refused when the store is closed, failures mapped by
   * `toPostgresStoreError` with the context `describe` builds. A write is committed before the
   * promise resolves (a single statement commits on its own; `transaction` commits before it returns).
   */
  async execute<T>(work: (db: Queryable) => Promise<T>, describe: () => OperationContext): Promise<T> {
    if (this.#closed) throw new StoreClosedError(`cannot ${describe().action}: the store ${this.target} is closed`);
    try {
      return await work(this.pool);
    } catch (error) {
      throw toPostgresStoreError(error, describe(), this.target);
    }
  }

  /**
   * Runs `work` on one client inside `BEGIN … COMMIT`, rolling back when it throws (see
   * {@link inTransaction}). A commit is told to the store's commit observers (the metrics).
   */
  async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const started = commitStart();
    const result = await inTransaction(this.pool, work);
    tellCommit('postgres', started);
    return result;
  }

  /**
   * Runs `work`, one statement outside any transaction (it commits by itself), and tells its
   * commit to the store's commit observers as {@link transaction} does.
   */
  async commitOne<T>(work: () => Promise<T>): Promise<T> {
    const started = commitStart();
    const result = await work();
    tellCommit('postgres', started);
    return result;
  }

  /** Closes the pool once its clients are idle. Later operations are refused; closing again does nothing. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.pool.end();
  }
}
