import { LoomError, type LoomErrorOptions } from '../errors/index.ts';

/**
 * The codes of refusals that only the HTTP door makes (the kernel's own errors keep theirs).
 * {@link toErrorResponse} gives each its status.
 */
export type HttpErrorCode =
  | 'INVALID_REQUEST'
  | 'ROUTE_NOT_FOUND'
  | 'WORKFLOW_NOT_FOUND'
  | 'MCP_SERVER_NOT_FOUND'
  | 'MCP_SERVER_REFUSED'
  | 'HOST_NOT_ALLOWED'
  | 'ORIGIN_NOT_ALLOWED'
  | 'BODY_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RATE_LIMITED'
  | 'REQUEST_TIMEOUT';

/**
 * A request the HTTP layer refuses before the kernel sees it: a malformed body, a missing key,
 * an unknown route, a body over the limit, a client over its rate. One class with a code,
 * rather than one per kind, because they differ in nothing but code and message.
 */
export class HttpRequestError extends LoomError {
  constructor(code: HttpErrorCode, message: string, options?: LoomErrorOptions) {
    super(code, code === 'REQUEST_TIMEOUT' ? 'system' : 'user', message, options);
  }
}
