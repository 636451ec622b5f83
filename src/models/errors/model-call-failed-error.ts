import type { JsonObject } from '../../contracts/index.ts';
import { LoomError, type LoomErrorOptions } from '../../errors/index.ts';

/** One model's failure within a fallback chain: which model, how often it was tried, and why it failed. */
export interface ModelFailure {
  /** `provider/model`. */
  model: string;
  /** How many calls were made to this model (1 + retries). */
  attempts: number;
  /** The HTTP status of the last failure, when there was a response. */
  status: number | null;
  /** Whether the last failure was of a kind worth retrying (429, 5xx, timeout, network). */
  retryable: boolean;
  /** The message of the last failure. */
  message: string;
}

/**
 * Every model of a fallback chain failed. The message lists each model with its error; `details.failures`
 * carries the same as data, and `cause` is the last model's error.
 */
export class ModelCallFailedError extends LoomError {
  readonly failures: readonly ModelFailure[];

  /** `category` is `user` when every model failed for the user's own reasons (e.g. missing keys). */
  constructor(failures: readonly ModelFailure[], options?: LoomErrorOptions & { category?: 'user' | 'third-party' }) {
    const listed = failures.map((failure) => `"${failure.model}" (${failure.attempts} ${failure.attempts === 1 ? 'attempt' : 'attempts'}): ${failure.message}`);
    const which = failures.length === 1 ? 'the model failed' : `all ${failures.length} models failed`;
    super('MODEL_CALL_FAILED', options?.category ?? 'third-party', `cannot get a reply: ${which}: ${listed.join('; ')}`, {
      ...(options?.cause === undefined ? {} : { cause: options.cause }),
      details: { failures: failures.map((failure): JsonObject => ({ ...failure })), ...options?.details },
    });
    this.failures = failures;
  }
}
