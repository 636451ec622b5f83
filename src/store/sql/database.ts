import type { Row } from '../rows.ts';
import type { OperationContext } from '../sqlite-errors.ts';
import type { Parameter, Sql } from './statement.ts';

/** Builds the context of a failed operation, for its error message (only on failure). */
export type Describe = () => OperationContext;

/** What one statement gave: its rows (none for a write without RETURNING) and how many rows it changed. */
export interface Outcome {
  rows: Row[];
  changed: number;
}

/**
 * A store operation of several statements, written once for both databases: a generator that
 * yields each statement and is handed its outcome. On SQLite it runs to the end synchronously (no
 * other operation interleaves with its transaction); on PostgreSQL each statement is a round trip.
 *
 * @example
 * function* (): Work<number> {
 *   const { rows } = yield sql`SELECT count(*) AS n FROM tasks`;
 *   return Number(rows[0]?.['n'] ?? 0);
 * }
 */
export type Work<T> = Generator<Sql, T, Outcome>;

/**
 * The database under one store, as the repositories written once see it: statements run on a
 * synchronous SQLite connection or an asynchronous PostgreSQL pool, failures mapped to Loom's typed
 * errors, and the few places where the two dialects' SQL differs.
 */
export interface Database {
  /** Which database this is, for the rare statement that has no common form. */
  readonly dialect: 'sqlite' | 'postgres';
  /** The column that orders rows by insertion, to break ties: SQLite's `rowid`, PostgreSQL's `insert_order`. */
  readonly insertOrder: Sql;
  /**
   * Locks the rows a transaction's `SELECT` reads until it ends: `FOR UPDATE` on PostgreSQL,
   * nothing on SQLite (whose `BEGIN IMMEDIATE` holds the write lock already).
   */
  readonly forUpdate: Sql;
  /** The rows `statement` reads. */
  all(statement: Sql, describe: Describe): Promise<Row[]>;
  /** The first row `statement` reads, if any. */
  one(statement: Sql, describe: Describe): Promise<Row | undefined>;
  /** Runs `statement` (a write, committed when it resolves) and says how many rows it changed. */
  run(statement: Sql, describe: Describe): Promise<number>;
  /** Runs the statements `work` yields one by one, each committing on its own. */
  steps<T>(work: () => Work<T>, describe: Describe): Promise<T>;
  /** Runs the statements `work` yields in one transaction, rolled back when `work` or a statement throws. */
  transaction<T>(work: () => Work<T>, describe: Describe): Promise<T>;
  /** The value bound to `LIMIT` for an optional limit (checked: a non-negative integer); `action` names the operation in the error. */
  limit(limit: number | undefined, action: string): Parameter;
  /** The condition that `column` starts with `prefix` (code point by code point, no wildcards). */
  startsWith(column: string, prefix: string): Sql;
  /** The JSON-object text of `column` with `key` set to the number `value`, as one expression (no lost update). */
  jsonWithKey(column: string, key: string, value: number): Sql;
}

/** Runs `work` to the end, handing each statement it yields to `execute`. */
export function drive<T>(work: Work<T>, execute: (statement: Sql) => Outcome): T {
  let step = work.next();
  while (step.done !== true) step = work.next(execute(step.value));
  return step.value;
}

/** {@link drive} for a database whose statements are asynchronous. */
export async function driveAsync<T>(work: Work<T>, execute: (statement: Sql) => Promise<Outcome>): Promise<T> {
  let step = work.next();
  while (step.done !== true) step = work.next(await execute(step.value));
  return step.value;
}
