import type { Context } from 'hono';
import type { Logger } from '../contracts/index.ts';
import { type HttpErrorCode, LoomError, toErrorResponse } from '../errors/index.ts';

/** A JSON-RPC request id: a string, a number, or null when the request had none (or could not be read). */
export type JsonRpcId = string | number | null;

/** What a {@link JsonRpcRequestError} is made of. */
export interface JsonRpcRequestErrorOptions {
  /** Loom's code for it (registered in `ERROR_CODES`), e.g. `INVALID_REQUEST`. */
  code: HttpErrorCode | 'AGENT_NOT_FOUND' | 'INTERNAL';
  /** The JSON-RPC error code peers read, e.g. -32700 (parse error) or -32601 (method not found). */
  rpcCode: number;
  /** The id of the request it answers. */
  id: JsonRpcId;
  /** The HTTP status the answer goes with: 200 on the JSON-RPC binding, as the A2A SDK answers. */
  status: number;
  message: string;
}

/**
 * A JSON-RPC request an A2A route refuses before the SDK sees it (a body it cannot read, a method
 * it does not know). Thrown, it is answered by {@link toA2aErrorResponse} as a JSON-RPC error
 * `{ jsonrpc: '2.0', id, error: { code, message } }`, the shape A2A clients read.
 */
export class JsonRpcRequestError extends LoomError {
  readonly rpcCode: number;
  readonly rpcId: JsonRpcId;
  readonly status: number;

  constructor(options: JsonRpcRequestErrorOptions) {
    super(options.code, options.code === 'INTERNAL' ? 'system' : 'user', options.message);
    this.rpcCode = options.rpcCode;
    this.rpcId = options.id;
    this.status = options.status;
  }
}

/**
 * The one way an A2A route's thrown error becomes its answer: a {@link JsonRpcRequestError} as a
 * JSON-RPC error, anything else by Loom's error mapping (`{ error: { code, message } }`, its status).
 */
export function toA2aErrorResponse(c: Context, error: unknown, at: { now: number; logger: Logger }): Response {
  const { now, logger } = at;
  if (JsonRpcRequestError.isInstance(error))
    return c.json({ jsonrpc: '2.0', id: error.rpcId, error: { code: error.rpcCode, message: error.message } }, error.status as 200);
  const { status, body, headers } = toErrorResponse(error, now, logger);
  return c.json(body, status as 400, headers);
}
