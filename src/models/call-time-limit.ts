import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import type { Clock } from '../contracts/index.ts';
import { aroundModelCalls, type ModelCallScope } from './around-model-calls.ts';
import { modelName } from './model-name.ts';
import type { ModelResolver, ModelTarget } from './resolve-model.ts';

/** What {@link withCallTimeLimit} needs: the clock the limit runs on, the limit, and the setting that sets it (for messages). */
export interface CallTimeLimit {
  clock: Clock;
  timeoutMs: number;
  /** The manifest setting the limit comes from, e.g. `[chain_of_thought].network_timeout_seconds`. */
  setting: string;
}

/**
 * The error a model call is aborted with when it runs past its time limit. Named `TimeoutError`,
 * as `AbortSignal.timeout`'s is, so the fallback chain treats it as a per-call timeout worth
 * another try.
 */
export class ModelCallTimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/** Why a limit's timer stops when its call ends first (nothing listens for it). */
const ENDED = new Error('the model call ended');

/**
 * `resolver` with every model it gives held to a time limit on `limit.clock`: a call
 * (`doGenerate`, or `doStream` until its stream ends) still going after `timeoutMs` is aborted
 * with a {@link ModelCallTimeoutError} naming the model and the setting. The caller's own signal
 * still aborts it as before.
 *
 * @example
 * ```ts
 * const timed = withCallTimeLimit(resolver, { clock, timeoutMs: 30_000, setting: '[chain_of_thought].network_timeout_seconds' });
 * ```
 */
export function withCallTimeLimit(resolver: ModelResolver, limit: CallTimeLimit): ModelResolver {
  return aroundModelCalls(resolver, (target, options) => startLimit(target, options, limit));
}

/** Starts the limit of one call: a signal that aborts on the caller's or on the time, and a stop for the timer. */
function startLimit(target: ModelTarget, options: LanguageModelV4CallOptions, limit: CallTimeLimit): ModelCallScope {
  const timeout = new AbortController();
  const timer = new AbortController();
  limit.clock.sleep(limit.timeoutMs, { signal: timer.signal }).then(
    () =>
      timeout.abort(
        new ModelCallTimeoutError(`the call to model "${modelName(target)}" took longer than ${limit.timeoutMs / 1000} s (${limit.setting}) and was cancelled`),
      ),
    () => undefined,
  );
  const signal = options.abortSignal === undefined ? timeout.signal : AbortSignal.any([options.abortSignal, timeout.signal]);
  return { options: { ...options, abortSignal: signal }, end: () => timer.abort(ENDED) };
}
