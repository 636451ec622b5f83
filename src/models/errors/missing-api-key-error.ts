import { LoomError, type LoomErrorOptions } from '../../errors/index.ts';

/** A model whose provider needs an API key, with the key's environment variable unset or empty. */
export class MissingApiKeyError extends LoomError {
  /** `model` is `provider/model`; `variable` is the environment variable that should hold the key. */
  constructor(model: string, variable: string, options?: LoomErrorOptions) {
    super(
      'MODEL_API_KEY_MISSING',
      'user',
      `model "${model}" needs an API key: set ${variable} where Loom runs (for the daemon, in its environment, then restart it)`,
      {
        ...options,
        details: { model, variable, ...options?.details },
      },
    );
  }
}
