import { isLoomError, type LoomError, StoreConflictError, StoreError, StoreNotFoundError } from '../errors/index.ts';

/** What a failed store operation was doing, for its error message. Built only on failure. */
export interface OperationContext {
  /** The action as it reads after "cannot": `store agent "x"`. */
  action: string;
  /** What a uniqueness failure on `table.column` means: `{ 'agents.name': 'the name "x"' }`. */
  taken?: Readonly<Record<string, string>>;
  /** What a foreign-key failure means: `agent "a" does not exist`. */
  missing?: string;
}

// Extended result codes, from https://sqlite.org/rescode.html.
const SQLITE_CORRUPT = 11;
const SQLITE_CANTOPEN = 14;
const SQLITE_NOTADB = 26;
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;
const SQLITE_CONSTRAINT_FOREIGNKEY = 787;
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
const SQLITE_CONSTRAINT_UNIQUE = 2067;

/** The SQLite result code `node:sqlite` attached to `error`, if it has one. */
export function sqliteErrorCode(error: unknown): number | undefined {
  if (error instanceof Error && 'errcode' in error && typeof error.errcode === 'number') return error.errcode;
  return undefined;
}

/**
 * Maps a failure inside a store operation to Loom's typed errors: a uniqueness failure to
 * `StoreConflictError`, a foreign-key failure to `StoreNotFoundError`, anything else to
 * `StoreError` with the original as `cause`. Loom errors pass through unchanged.
 */
export function toStoreError(error: unknown, context: OperationContext, path: string): LoomError {
  if (isLoomError(error)) return error;
  const code = sqliteErrorCode(error);
  const reason = error instanceof Error ? error.message : String(error);
  if (code === SQLITE_CONSTRAINT_UNIQUE || code === SQLITE_CONSTRAINT_PRIMARYKEY) {
    // node:sqlite reports "UNIQUE constraint failed: agents.name"; the column says what was taken.
    const column = /constraint failed: (.+)$/.exec(reason)?.[1];
    const taken = column === undefined ? undefined : context.taken?.[column];
    return new StoreConflictError(`cannot ${context.action}: ${taken ?? `a unique value (${column ?? reason})`} is already taken`, {
      cause: error,
    });
  }
  if (code === SQLITE_CONSTRAINT_FOREIGNKEY) {
    return new StoreNotFoundError(`cannot ${context.action}: ${context.missing ?? 'a row it refers to does not exist'}`, {
      cause: error,
    });
  }
  if (code !== undefined && ((code & 0xff) === SQLITE_BUSY || (code & 0xff) === SQLITE_LOCKED)) {
    return new StoreError(`cannot ${context.action}: the database "${path}" is locked by another process; try again`, {
      cause: error,
      isRetryable: true,
    });
  }
  return new StoreError(`cannot ${context.action}: ${reason} (database "${path}")`, { cause: error });
}

/**
 * Maps a failure while opening the database at `path` to a `StoreError` that names the file and
 * says what to do.
 */
export function toOpenError(error: unknown, path: string): LoomError {
  if (isLoomError(error)) return error;
  const code = sqliteErrorCode(error);
  const reason = error instanceof Error ? error.message : String(error);
  const base = code === undefined ? undefined : code & 0xff;
  const advice =
    base === SQLITE_NOTADB
      ? 'the file is not a SQLite database; move it aside, or point Loom at another data directory'
      : base === SQLITE_CORRUPT
        ? 'the database is corrupt; restore it from a backup, or move it aside to start afresh'
        : base === SQLITE_CANTOPEN
          ? `${reason}; check that the path names a file in a folder Loom may write to`
          : base === SQLITE_BUSY || base === SQLITE_LOCKED
            ? 'the database is locked by another process; stop it or try again'
            : reason;
  return new StoreError(`cannot open store "${path}": ${advice}`, {
    cause: error,
    details: { path },
    isRetryable: base === SQLITE_BUSY || base === SQLITE_LOCKED,
  });
}
