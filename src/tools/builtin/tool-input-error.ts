import { LoomError, type LoomErrorOptions } from '../../errors/index.ts';

/**
 * Tool input that a tool cannot judge or run: a command line with shell syntax where there is
 * no shell, a path that cannot be resolved. Thrown from `requires`, so the call is refused
 * before it runs; the message says what to change.
 */
export class ToolInputError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('TOOL_INPUT_INVALID', 'user', message, options);
  }
}
