/** Context fields attached to every line a logger writes (`agentId`, `runId`, …). */
export type LogBindings = Record<string, unknown>;

/**
 * A structured logger writing JSON lines. The shape is pino's, so a pino logger is a Logger;
 * library code never writes to the console.
 */
export interface Logger {
  debug(object: LogBindings, message?: string): void;
  info(object: LogBindings, message?: string): void;
  warn(object: LogBindings, message?: string): void;
  error(object: LogBindings, message?: string): void;
  /** A logger that adds `bindings` to every line. */
  child(bindings: LogBindings): Logger;
}
