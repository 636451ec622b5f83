import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { StoreClosedError } from '../errors/index.ts';
import { type OperationContext, toStoreError } from './sqlite-errors.ts';
import { commitStart, tellCommit } from './store-commits.ts';

/**
 * The open database shared by one store's repositories: it refuses work once closed, maps
 * failures to typed errors and runs transactions.
 */
export class SqliteConnection {
  /** The database; repositories prepare their statements on it once, at open. */
  readonly db: DatabaseSync;
  /** The file, for error messages. */
  readonly path: string;
  readonly #begin: StatementSync;
  readonly #commit: StatementSync;
  readonly #rollback: StatementSync;
  #closed = false;

  constructor(db: DatabaseSync, path: string) {
    this.db = db;
    this.path = path;
    // IMMEDIATE takes the write lock up front, so the busy timeout applies; a deferred
    // transaction that reads first could fail with SQLITE_BUSY_SNAPSHOT when another process writes.
    this.#begin = db.prepare('BEGIN IMMEDIATE');
    this.#commit = db.prepare('COMMIT');
    this.#rollback = db.prepare('ROLLBACK');
  }

  /** Whether `close()` has been called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Runs `work` as one store operation and returns its outcome as a promise: refused when the
   * store is closed, failures mapped by `toStoreError` with the context `describe` builds.
   * `work` is synchronous, so a write is committed before the promise settles.
   */
  execute<T>(work: () => T, describe: () => OperationContext): Promise<T> {
    if (this.#closed) {
      return Promise.reject(new StoreClosedError(`cannot ${describe().action}: the store "${this.path}" is closed`));
    }
    try {
      return Promise.resolve(work());
    } catch (error) {
      return Promise.reject(toStoreError(error, describe(), this.path));
    }
  }

  /**
   * Runs `work` inside `BEGIN IMMEDIATE … COMMIT`, rolling back when it throws. Synchronous, so
   * no other operation of this process can interleave with the transaction. A commit is told to
   * the store's commit observers (the metrics).
   */
  transaction<T>(work: () => T): T {
    const started = commitStart();
    this.#begin.run();
    try {
      const result = work();
      this.#commit.run();
      tellCommit('sqlite', started);
      return result;
    } catch (error) {
      // A failed COMMIT can leave the transaction open; a failed statement never ends it.
      if (this.db.isTransaction) this.#rollback.run();
      throw error;
    }
  }

  /** Closes the database. Later operations are refused; closing again does nothing. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.db.close();
  }
}
