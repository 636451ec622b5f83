import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { delegatingModel } from './delegating-model.ts';
import type { ModelResolver, ModelTarget } from './resolve-model.ts';

/** What {@link aroundModelCalls}'s `begin` gives a call: the options it runs with, and what to do when it ends. */
export interface ModelCallScope {
  options: LanguageModelV4CallOptions;
  /** Called once when the call ends: answered, failed, its stream read to the end, cancelled or aborted. */
  end: () => void;
}

/**
 * `resolver` with `begin` run before each call of every model it gives (`doGenerate`, `doStream`),
 * and the `end` it returns run once when the call is over (for a stream: when it is read to the
 * end, cancelled, or its signal aborts). `begin` may wait (for a slot) and may change the options
 * (a signal with a time limit); what it throws fails the call before it is sent.
 */
export function aroundModelCalls(
  resolver: ModelResolver,
  begin: (target: ModelTarget, options: LanguageModelV4CallOptions) => ModelCallScope | Promise<ModelCallScope>,
): ModelResolver {
  return { resolve: (target) => wrapped(resolver.resolve(target), (options) => begin(target, options)) };
}

function once(end: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    end();
  };
}

function wrapped(model: LanguageModelV4, begin: (options: LanguageModelV4CallOptions) => ModelCallScope | Promise<ModelCallScope>): LanguageModelV4 {
  return delegatingModel(model, {
    async doGenerate(options) {
      const scope = await begin(options);
      try {
        return await model.doGenerate(scope.options);
      } finally {
        scope.end();
      }
    },
    async doStream(options) {
      const scope = await begin(options);
      const signal = scope.options.abortSignal;
      const end = once(() => {
        signal?.removeEventListener('abort', end);
        scope.end();
      });
      signal?.addEventListener('abort', end, { once: true });
      let result;
      try {
        result = await model.doStream(scope.options);
      } catch (error) {
        end();
        throw error;
      }
      const ends = new TransformStream<LanguageModelV4StreamPart, LanguageModelV4StreamPart>({ flush: end, cancel: end });
      return { ...result, stream: result.stream.pipeThrough(ends) };
    },
  });
}
