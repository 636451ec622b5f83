import type { HttpContext } from './http-context.ts';
import { HttpRequestError } from '../errors/index.ts';

/** The longest `Idempotency-Key` taken. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * The request's `Idempotency-Key` header (decision 0045), when it has one: a message sent again
 * with the same key gets the turn the first one started instead of a new turn.
 * @throws {HttpRequestError} `INVALID_REQUEST` for an empty key, one longer than
 *   {@link MAX_IDEMPOTENCY_KEY_LENGTH}, or one with characters outside printable ASCII.
 */
export function idempotencyKeyOf(c: HttpContext): string | undefined {
  const key = c.req.header('idempotency-key');
  if (key === undefined) return undefined;
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(key)) {
    throw new HttpRequestError(
      'INVALID_REQUEST',
      `invalid Idempotency-Key header: expected 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters without spaces, got ${key.length === 0 ? 'an empty value' : `${key.length} characters`}`,
    );
  }
  return key;
}
