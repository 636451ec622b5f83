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

/** The mark every LoomError carries, shared by every copy of this module (the bundled daemon, the sources, tests). */
const LOOM_ERROR: unique symbol = Symbol.for('loom.error');

/** Whether `value` carries the mark, and one of the constructors on its prototype chain is named `name`. */
function markedAs(value: unknown, name: string): boolean {
  if (typeof value !== 'object' || value === null || (value as { [LOOM_ERROR]?: unknown })[LOOM_ERROR] !== true) return false;
  for (let proto: unknown = Object.getPrototypeOf(value), depth = 0; proto !== null && depth < 32; proto = Object.getPrototypeOf(proto), depth += 1) {
    if ((proto as { constructor?: { name?: unknown } }).constructor?.name === name) return true;
  }
  return false;
}

/**
 * The base of every error Loom raises on purpose. `code` is stable (`UPPER_SNAKE`, registered in
 * `ERROR_CODES`) and safe to match on; `details` is JSON-safe and travels through the HTTP API unchanged.
 */
export class LoomError extends Error {
  /** Marks a LoomError across module copies; see {@link LoomError.isInstance}. */
  readonly [LOOM_ERROR] = true;
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

  /**
   * Whether `value` is an error of this class, also when it comes from another copy of this
   * module (the bundled daemon and the sources, a test loading both), where `instanceof` says no:
   * it carries the `Symbol.for('loom.error')` mark and a class of this name is on its chain.
   *
   * @example
   * if (AgentNotFoundError.isInstance(error)) return undefined;
   */
  static isInstance<T extends LoomError>(this: abstract new (...args: never[]) => T, value: unknown): value is T {
    return value instanceof this || markedAs(value, this.name);
  }
}

/** Whether `error` is a LoomError (across module copies too, by its mark): {@link LoomError.isInstance}. */
export function isLoomError(error: unknown): error is LoomError {
  return LoomError.isInstance(error);
}
