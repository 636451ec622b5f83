import { isLoomError, type LoomError, StoreConflictError, StoreError, StoreNotFoundError } from '../errors/index.ts';
import type { OperationContext } from './sqlite-errors.ts';

/** How node-postgres refuses a statement on a client whose connection failed or was closed. */
export const NOT_QUERYABLE = /^Client (has encountered a connection error|was closed) and is not queryable$/;

// SQLSTATE codes, from https://www.postgresql.org/docs/current/errcodes-appendix.html.
const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';
const SERIALIZATION_FAILURE = '40001';
const DEADLOCK_DETECTED = '40P01';
const LOCK_NOT_AVAILABLE = '55P03';
const UNTRANSLATABLE_CHARACTER = '22P05';
const CHARACTER_NOT_IN_REPERTOIRE = '22021';
const INVALID_PASSWORD = '28P01';
const INVALID_AUTHORIZATION = '28000';
const INVALID_CATALOG_NAME = '3D000';
const INSUFFICIENT_PRIVILEGE = '42501';
const TOO_MANY_CONNECTIONS = '53300';
const CANNOT_CONNECT_NOW = '57P03';
const ADMIN_SHUTDOWN = '57P01';

/** What a server's error carries: node-postgres's `DatabaseError` fields. */
interface ServerError {
  code: string;
  message: string;
  table?: string;
  detail?: string;
}

/** The SQLSTATE of a PostgreSQL server's error, if `error` is one. */
function serverError(error: unknown): ServerError | undefined {
  if (!(error instanceof Error) || !('code' in error) || typeof error.code !== 'string' || !/^[0-9A-Z]{5}$/.test(error.code)) return undefined;
  const fields = error as Error & { code: string; table?: unknown; detail?: unknown };
  return {
    code: fields.code,
    message: fields.message,
    ...(typeof fields.table === 'string' ? { table: fields.table } : {}),
    ...(typeof fields.detail === 'string' ? { detail: fields.detail } : {}),
  };
}

/** A failure to reach the server (refused, unknown host, timed out, cut off), in words; undefined for anything else. */
function unreachable(error: unknown, server: string): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = 'code' in error && typeof error.code === 'string' ? error.code : '';
  if (code === 'ECONNREFUSED') return `nothing answers at ${server} (connection refused)`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `the host of ${server} is not known (${code})`;
  if (code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `${server} cannot be reached (${code})`;
  if (code === 'ECONNRESET' || code === 'EPIPE') return `the connection to ${server} was cut (${code})`;
  if (/timeout expired|Connection terminated/i.test(error.message)) return `${server} did not answer: ${error.message}`;
  // node-postgres refusing a statement on a client whose connection already failed.
  if (NOT_QUERYABLE.test(error.message)) return `the connection to ${server} was lost (${error.message})`;
  return undefined;
}

/** Where the store's server is, for messages: `host:port` of the redacted URL. */
export function serverOf(target: string): string {
  try {
    const url = new URL(target);
    return url.host === '' ? 'the local socket' : url.host;
  } catch {
    return 'the database server';
  }
}

/**
 * Maps a failure inside an operation of the PostgreSQL store to Loom's typed errors, as
 * `toStoreError` does for SQLite: a uniqueness failure to `StoreConflictError`, a foreign-key
 * failure to `StoreNotFoundError`, a lost or refused connection, a deadlock or a serialization
 * failure to a retryable `StoreError`, anything else to `StoreError` with the original as
 * `cause`. `target` is the redacted URL. Loom errors pass through unchanged.
 */
export function toPostgresStoreError(error: unknown, context: OperationContext, target: string): LoomError {
  if (isLoomError(error)) return error;
  const server = serverError(error);
  const reason = error instanceof Error ? error.message : String(error);
  if (server?.code === UNIQUE_VIOLATION) {
    // The detail reads `Key (name)=(x) already exists.`; with the table it says what was taken.
    const keyColumns = /^Key \((.+?)\)=/.exec(server.detail ?? '')?.[1];
    const column =
      keyColumns === undefined || server.table === undefined
        ? undefined
        : keyColumns
            .split(', ')
            .map((name) => `${server.table}.${name}`)
            .join(', ');
    const taken = column === undefined ? undefined : context.taken?.[column];
    return new StoreConflictError(`cannot ${context.action}: ${taken ?? `a unique value (${column ?? reason})`} is already taken`, { cause: error });
  }
  if (server?.code === FOREIGN_KEY_VIOLATION) {
    return new StoreNotFoundError(`cannot ${context.action}: ${context.missing ?? 'a row it refers to does not exist'}`, { cause: error });
  }
  if (server?.code === SERIALIZATION_FAILURE || server?.code === DEADLOCK_DETECTED || server?.code === LOCK_NOT_AVAILABLE) {
    return new StoreError(`cannot ${context.action}: another writer holds the rows it needs (${reason}); try again`, { cause: error, isRetryable: true });
  }
  if (server?.code === UNTRANSLATABLE_CHARACTER || server?.code === CHARACTER_NOT_IN_REPERTOIRE) {
    return new StoreError(`cannot ${context.action}: PostgreSQL cannot store text with a NUL character (\\u0000) outside JSON (${reason})`, { cause: error });
  }
  const lost =
    unreachable(error, serverOf(target)) ??
    (server?.code === ADMIN_SHUTDOWN || server?.code === CANNOT_CONNECT_NOW ? `the server is shutting down or starting (${reason})` : undefined);
  if (lost !== undefined) {
    return new StoreError(`cannot ${context.action}: ${lost} (database ${target}); try again`, { cause: error, isRetryable: true });
  }
  return new StoreError(`cannot ${context.action}: ${reason} (database ${target})`, { cause: error });
}

/**
 * Maps a failure while opening the PostgreSQL store at `target` (the redacted URL) to a
 * `StoreError` that names the server and database and says what to do. Never includes the password.
 */
export function toPostgresOpenError(error: unknown, target: string): LoomError {
  if (isLoomError(error)) return error;
  const server = serverError(error);
  const reason = error instanceof Error ? error.message : String(error);
  const lost = unreachable(error, serverOf(target));
  const advice =
    lost !== undefined
      ? `${lost}; check that PostgreSQL runs there and that [store] url (or LOOM_DATABASE_URL) names it`
      : server?.code === INVALID_PASSWORD || server?.code === INVALID_AUTHORIZATION
        ? `${reason}; check the user and password in [store] url (or LOOM_DATABASE_URL)`
        : server?.code === INVALID_CATALOG_NAME
          ? `${reason}; create it (createdb), or name another database in the URL`
          : server?.code === INSUFFICIENT_PRIVILEGE
            ? `${reason}; Loom creates its tables at the first start, so its user must own the database or have CREATE on its schema`
            : server?.code === TOO_MANY_CONNECTIONS || server?.code === CANNOT_CONNECT_NOW
              ? `${reason}; try again`
              : reason;
  const retryable = lost !== undefined || server?.code === TOO_MANY_CONNECTIONS || server?.code === CANNOT_CONNECT_NOW;
  return new StoreError(`cannot open store ${target}: ${advice}`, { cause: error, details: { database: target }, isRetryable: retryable });
}
