import { APICallError } from '@ai-sdk/provider';
import type { Clock, Logger } from '../contracts/index.ts';
import { CapabilityDeniedError, isLoomError, QuotaExceededError, StoreError, TokenBudgetExceededError } from '../errors/index.ts';
import { ModelCallFailedError, type ModelFailure } from './errors/model-call-failed-error.ts';
import { modelName } from './model-name.ts';
import type { ModelTarget } from './resolve-model.ts';

/** Retries per model after its first failure, when the options give none. */
export const DEFAULT_MODEL_RETRIES = 2;
/** The first backoff delay; each further retry doubles it. */
export const DEFAULT_BASE_DELAY_MS = 500;
/** The longest wait between two calls to one model, whether from backoff or `retry-after`. */
export const DEFAULT_MAX_DELAY_MS = 30_000;

/** Options of {@link callWithFallback}. */
export interface CallWithFallbackOptions {
  /** The clock whose `sleep` spaces the retries (a fake one in tests). */
  clock: Clock;
  /** Aborts the chain: the running call, any wait, and every model not yet tried. */
  signal?: AbortSignal | undefined;
  logger: Logger;
  /** Retries per model of a retryable failure before moving on. Default {@link DEFAULT_MODEL_RETRIES}. */
  retries?: number;
  /** Default {@link DEFAULT_BASE_DELAY_MS}. */
  baseDelayMs?: number;
  /** Default {@link DEFAULT_MAX_DELAY_MS}. */
  maxDelayMs?: number;
}

/** What a chain that succeeded returns: the value, the model that gave it, and the models that failed first. */
export interface FallbackResult<T> {
  value: T;
  model: ModelTarget;
  /** One entry per model that failed before `model` answered, in the order tried; empty when the primary answered. */
  failures: ModelFailure[];
}

interface ClassifiedError {
  status: number | null;
  retryable: boolean;
  retryAfterMs: number | null;
  message: string;
}

/**
 * Calls `attempt` with the primary model, then with each fallback in order, until one succeeds.
 *
 * A retryable failure (an AI SDK `APICallError` marked `isRetryable`, HTTP 408/409/429/5xx, a timeout,
 * a network error, a `LoomError` with `isRetryable`) is retried up to `retries` times with
 * exponential backoff (`baseDelayMs`, doubling, at most `maxDelayMs`) on `clock.sleep`. A
 * `retry-after-ms` or `retry-after` response header (seconds or an HTTP date) sets the wait instead;
 * when it asks for longer than `maxDelayMs`, the chain moves on to the next model at once rather than
 * stall. Any other failure (400, 401, 403, 404, a bad request) moves on at once.
 *
 * Retrying is this layer's job: call sites must pass `maxRetries: 0` to `generateText` / `streamText`,
 * or the AI SDK retries too, on the real clock and multiplying the attempts.
 *
 * When `signal` aborts, the chain stops at once and rethrows the signal's reason; no other model is tried.
 * A budget's refusal (`QuotaExceededError`, `TokenBudgetExceededError`: the kernel's budget ledger
 * refused the call before it was made) is rethrown as it is too: another try or model would draw
 * from the same budget; so is a `CapabilityDeniedError` (a cap the call draws from cannot be read),
 * and a `StoreError` (the ledger could not read what the call draws from: the database is down or
 * restarting), which no model answers: the caller fails with it as with any store failure.
 *
 * Logging: each retry is a debug line; each model given up is one warning with its cause (and the
 * model tried next). Callers do not log a `ModelCallFailedError` again.
 *
 * @throws {ModelCallFailedError} (code `MODEL_CALL_FAILED`) when every model failed; it lists each
 *   model with its last error, and carries them in `details.failures`.
 * @example
 * const { value } = await callWithFallback([config.model, ...config.fallback_models],
 *   (target, signal) => generateText({ model: resolver.resolve(target), prompt, abortSignal: signal, maxRetries: 0 }),
 *   { clock, logger, signal });
 */
export async function callWithFallback<T>(
  models: readonly ModelTarget[],
  attempt: (model: ModelTarget, signal: AbortSignal) => Promise<T>,
  options: CallWithFallbackOptions,
): Promise<FallbackResult<T>> {
  const { clock, logger } = options;
  const retries = options.retries ?? DEFAULT_MODEL_RETRIES;
  const baseDelayMs = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
  const maxDelayMs = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
  const signal = options.signal ?? new AbortController().signal;
  const failures: ModelFailure[] = [];
  let lastError: unknown;
  // When every model failed for the user's own reasons (a missing key), the whole failure is theirs.
  let onlyUserErrors = true;

  for (const [index, model] of models.entries()) {
    const name = modelName(model);
    const next = models[index + 1];
    for (let attemptNumber = 1; ; attemptNumber++) {
      signal.throwIfAborted();
      try {
        const value = await attempt(model, signal);
        return { value, model, failures };
      } catch (error) {
        // An abort is the caller's decision, not the model's failure: stop everything.
        signal.throwIfAborted();
        if (
          error instanceof QuotaExceededError ||
          error instanceof TokenBudgetExceededError ||
          error instanceof CapabilityDeniedError ||
          error instanceof StoreError
        )
          throw error;
        lastError = error;
        onlyUserErrors &&= isLoomError(error) && error.category === 'user';
        const classified = classifyModelError(error, clock.now());
        const delayMs = classified.retryAfterMs ?? Math.min(maxDelayMs, baseDelayMs * 2 ** (attemptNumber - 1));
        const willRetry = classified.retryable && attemptNumber <= retries && delayMs <= maxDelayMs;
        const fields = {
          model: name,
          attempt: attemptNumber,
          status: classified.status,
          retryable: classified.retryable,
          retryInMs: willRetry ? delayMs : null,
        };
        if (willRetry) {
          // A retry is routine: the one line a failed model call gets is written when it is given up.
          logger.debug(fields, `model call to "${name}" failed (attempt ${attemptNumber}): ${classified.message}; retrying in ${delayMs} ms`);
          await clock.sleep(delayMs, { signal });
          continue;
        }
        const tries = attemptNumber === 1 ? '' : ` (${attemptNumber} attempts)`;
        logger.warn(
          fields,
          `model call to "${name}" failed${tries}: ${classified.message}${next === undefined ? '' : `; falling back to "${modelName(next)}"`}`,
        );
        failures.push({ model: name, attempts: attemptNumber, status: classified.status, retryable: classified.retryable, message: classified.message });
        break;
      }
    }
  }
  throw new ModelCallFailedError(failures, { cause: lastError, category: onlyUserErrors ? 'user' : 'third-party' });
}

/** Reads status, retryability and `retry-after` from whatever a provider call threw. */
function classifyModelError(error: unknown, now: number): ClassifiedError {
  // The SDK's own retries are off (maxRetries: 0), but a RetryError is judged by its last error all the same.
  if (error instanceof Error && error.name === 'AI_RetryError' && 'lastError' in error) return classifyModelError(error.lastError, now);
  const message = error instanceof Error ? error.message : String(error);
  if (APICallError.isInstance(error)) {
    const status = error.statusCode ?? null;
    return {
      status,
      retryable: error.isRetryable || (status !== null && isRetryableStatus(status)),
      retryAfterMs: parseRetryAfter(error.responseHeaders, now),
      message: status === null ? message : `HTTP ${status}: ${message}`,
    };
  }
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    // Not our signal (checked before): a per-call timeout, worth another try.
    return { status: null, retryable: true, retryAfterMs: null, message };
  }
  if (isLoomError(error)) return { status: null, retryable: error.isRetryable, retryAfterMs: null, message };
  const status = statusOf(error);
  return { status, retryable: status !== null && isRetryableStatus(status), retryAfterMs: null, message };
}

function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

function statusOf(error: unknown): number | null {
  if (typeof error !== 'object' || error === null) return null;
  const record = error as { status?: unknown; statusCode?: unknown };
  const status = record.statusCode ?? record.status;
  return typeof status === 'number' && Number.isInteger(status) ? status : null;
}

/** Milliseconds to wait from `retry-after-ms` or `retry-after` (seconds or an HTTP date), or null. */
function parseRetryAfter(headers: Record<string, string> | undefined, now: number): number | null {
  if (headers === undefined) return null;
  const lookup = (name: string): string | undefined => Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  const milliseconds = lookup('retry-after-ms');
  if (milliseconds !== undefined) {
    const value = Number.parseFloat(milliseconds);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = lookup('retry-after');
  if (after === undefined) return null;
  const seconds = Number(after.trim());
  if (after.trim() !== '' && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
