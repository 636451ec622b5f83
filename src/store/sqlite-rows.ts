import { checkLimit, type Row } from './rows.ts';

/** A row as `node:sqlite` returns it. */
export type SqliteRow = Row;

/**
 * The value bound for SQLite's `LIMIT`: `-1` (no limit) when omitted. `action` names the caller's
 * operation in the error.
 *
 * @throws {StoreError} when `limit` is not a non-negative integer.
 */
export function limitParameter(limit: number | undefined, action: string): number {
  return checkLimit(limit, action) ?? -1;
}
