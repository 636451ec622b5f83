import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/**
 * The codes of refusals that only an HTTP door makes (the API, a channel's webhook, an A2A route;
 * the kernel's own errors keep theirs). `ERROR_CODES` gives each its status.
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
  | 'REQUEST_TIMEOUT'
  | 'CHANNEL_STOPPED'
  | 'TASK_NOT_FOUND'
  | 'TASK_NOT_CANCELABLE';

/**
 * A request an HTTP door refuses before the kernel sees it: a malformed body, an unknown route, a
 * body over the limit, a client over its rate, a channel not running. Thrown, it is answered by
 * the one error mapping (`toErrorResponse`) with its code's status and `{ error: { code, message } }`. One class with a code,
 * rather than one per kind, because they differ in nothing but code and message.
 */
export class HttpRequestError extends LoomError {
  constructor(code: HttpErrorCode, message: string, options?: LoomErrorOptions) {
    super(code, code === 'REQUEST_TIMEOUT' || code === 'CHANNEL_STOPPED' ? 'system' : 'user', message, options);
  }
}
