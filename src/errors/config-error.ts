import { LoomError, type LoomErrorOptions } from './loom-error.ts';

/** A `config.toml` that cannot be read, parsed or validated. */
export class ConfigError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('CONFIG_INVALID', 'user', message, options);
  }
}
