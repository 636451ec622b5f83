import type { Logger } from '../contracts/index.ts';
import { ERROR_CODES } from './error-codes.ts';
import { isLoomError } from './loom-error.ts';

/** The JSON body of every error the API answers with. */
export interface ErrorBody {
  error: { code: string; message: string; details?: Record<string, unknown> };
}

/** The status and body (and headers) of an error response. */
export interface ErrorResponse {
  status: number;
  body: ErrorBody;
  headers: Record<string, string>;
}

/** Statuses by error code, from the one registry; a code not in it is 400 when the user is at fault, else 500. */
const STATUS_BY_CODE: ReadonlyMap<string, number> = new Map(Object.entries(ERROR_CODES).map(([code, entry]) => [code, entry.status]));

/** Whole seconds until `details.retryAt` (an ISO time or epoch ms), at least 1; undefined without one. */
function retryAfterSeconds(details: Record<string, unknown>, now: number): number | undefined {
  const seconds = details['retryAfterSeconds'];
  if (typeof seconds === 'number') return Math.max(1, Math.ceil(seconds));
  const retryAt = details['retryAt'];
  const at = typeof retryAt === 'number' ? retryAt : typeof retryAt === 'string' ? Date.parse(retryAt) : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  return Math.max(1, Math.ceil((at - now) / 1000));
}

/**
 * The one place errors become HTTP responses: a status by the error's code (400, 401, 403, 404,
 * 409, 413, 415, 429, 502, 503, 504 stay distinct), the body `{ error: { code, message } }`, and
 * `Retry-After` for 429s, for a store failure that may pass (503) and for a retryable refusal that says
 * when (`details.retryAfterSeconds`: a cancel of a turn resuming on this node, 409). An error that is
 * not a LoomError is a bug: it is logged and answered with a 500 that does not leak its message.
 *
 * @example
 * const { status, body, headers } = toErrorResponse(new AgentNotFoundError('x'), clock.now(), logger);
 * // status 404, body { error: { code: 'AGENT_NOT_FOUND', message: 'no agent named or with id "x"' } }
 */
export function toErrorResponse(error: unknown, now: number, logger: Logger): ErrorResponse {
  if (!isLoomError(error)) {
    logger.error({ err: error }, 'an HTTP request failed unexpectedly');
    return { status: 500, body: { error: { code: 'INTERNAL', message: 'the request failed inside Loom; see the daemon log' } }, headers: {} };
  }
  let status = STATUS_BY_CODE.get(error.code) ?? (error.category === 'user' ? 400 : 500);
  // A model refusing the request itself (bad input) is the caller's to fix, not a gateway failure.
  if (error.code === 'MODEL_CALL_FAILED' && error.category === 'user') status = 400;
  const headers: Record<string, string> = {};
  // A store that may answer again (a database restarting or busy, a connection lost): the request may be repeated.
  if (error.code === 'STORE_FAILURE' && error.isRetryable) {
    status = 503;
    headers['retry-after'] = '1';
  }
  // RFC 9110: a 401 says how to authenticate (MCP clients read it to find the scheme).
  if (status === 401) headers['www-authenticate'] = 'Bearer realm="loom"';
  // A refusal that says when to ask again (a quota, the rate limit, a cancel of a turn another node is taking over).
  if (status === 429 || error.isRetryable) {
    const seconds = retryAfterSeconds(error.details, now);
    if (seconds !== undefined) headers['retry-after'] = String(seconds);
  }
  // One line, no stack: a known error says what failed in its message. A failed model call was
  // logged once already, where it failed (callWithFallback), so it is not logged again here.
  if (status >= 500 && error.code !== 'MODEL_CALL_FAILED') logger.warn({ code: error.code, status }, `an HTTP request failed: ${error.message}`);
  const hasDetails = Object.keys(error.details).length > 0;
  return { status, body: { error: { code: error.code, message: error.message, ...(hasDetails ? { details: error.details } : {}) } }, headers };
}
