import { LoomError, type LoomErrorOptions } from '../../errors/index.ts';

/** A model configuration that cannot be turned into a model (an unknown provider, a missing `base_url`). */
export class ModelConfigError extends LoomError {
  constructor(message: string, options?: LoomErrorOptions) {
    super('MODEL_CONFIG_INVALID', 'user', message, options);
  }
}
