import type { Logger } from '../../contracts/index.ts';
import { toErrorResponse } from '../../errors/index.ts';

/** An error as the OpenAI API answers it, so OpenAI client libraries raise their own error classes. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; code: string; param: string | null };
}

/** The status, OpenAI-shaped body and headers of an error response on a `/v1` route. */
export interface OpenAiErrorResponse {
  status: number;
  body: OpenAiErrorBody;
  headers: Record<string, string>;
}

/** OpenAI's error codes for Loom's, where OpenAI has one; any other Loom code is sent lower-cased. */
const OPENAI_CODES: Readonly<Record<string, string>> = {
  AGENT_NOT_FOUND: 'model_not_found',
  UNAUTHORIZED: 'invalid_api_key',
  RATE_LIMITED: 'rate_limit_exceeded',
  QUOTA_EXCEEDED: 'insufficient_quota',
  ROUTE_NOT_FOUND: 'unknown_url',
};

function typeOf(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/**
 * The OpenAI-compatible form of {@link toErrorResponse}: the same status and headers (so 400,
 * 401, 403, 404, 429 with Retry-After stay distinct), with the body
 * `{ error: { message, type, code, param } }` — `code` is `model_not_found` for an unknown agent.
 */
export function toOpenAiErrorResponse(error: unknown, now: number, logger: Logger): OpenAiErrorResponse {
  const { status, body, headers } = toErrorResponse(error, now, logger);
  const code = OPENAI_CODES[body.error.code] ?? body.error.code.toLowerCase();
  return { status, headers, body: { error: { message: body.error.message, type: typeOf(status), code, param: code === 'model_not_found' ? 'model' : null } } };
}
