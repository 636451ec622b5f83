import type { JsonObject } from '../contracts/index.ts';

/**
 * Who is at fault: `user` (bad input or a refused request: fix the input), `system` (Loom or
 * its machine), `third-party` (a model provider, MCP server or peer agent).
 */
export type ErrorCategory = 'user' | 'system' | 'third-party';

/** Options shared by every Loom error. */
export interface LoomErrorOptions {
  details?: JsonObject;
  cause?: unknown;
  isRetryable?: boolean;
}

/**
 * The base of every error Loom raises on purpose. `code` is stable (`UPPER_SNAKE`) and safe to
 * match on; `details` is JSON-safe and travels through the HTTP API unchanged.
 */
export class LoomError extends Error {
  readonly code: string;
  readonly category: ErrorCategory;
  readonly details: JsonObject;
  readonly isRetryable: boolean;

  constructor(code: string, category: ErrorCategory, message: string, options: LoomErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.category = category;
    this.details = options.details ?? {};
    this.isRetryable = options.isRetryable ?? false;
  }
}

/** Whether `error` is a LoomError (across module copies too, by shape). */
export function isLoomError(error: unknown): error is LoomError {
  return error instanceof LoomError;
}
