import { UsageError } from '../errors/index.ts';

/**
 * `--limit`'s value: a whole number from 1 to 1000 (what the API's `?limit=` takes).
 * @throws {UsageError} naming the value.
 */
export function parseLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError(`--limit: expected a whole number from 1 to 1000, got "${value}"`);
  return limit;
}
