import type { LanguageModelV4 } from '@ai-sdk/provider';

/**
 * `model` with its calls replaced by `calls` (each given the original's options), everything else
 * (provider, model id, supported URLs) its own: how Loom wraps a provider's model (metering,
 * limits, watching a stream), as AI SDK middleware would, without loading `ai` to build it.
 */
export function delegatingModel(model: LanguageModelV4, calls: Partial<Pick<LanguageModelV4, 'doGenerate' | 'doStream'>>): LanguageModelV4 {
  return {
    specificationVersion: 'v4',
    provider: model.provider,
    modelId: model.modelId,
    get supportedUrls() {
      return model.supportedUrls;
    },
    doGenerate: calls.doGenerate ?? ((options) => model.doGenerate(options)),
    doStream: calls.doStream ?? ((options) => model.doStream(options)),
  };
}
