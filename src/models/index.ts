/**
 * The model layer: provider resolution, the fallback chain with retries, cost estimation and
 * complexity routing. Other folders import only from here.
 */
export { createCostCatalog, ModelPriceOverridesSchema } from './cost-catalog.ts';
export type { CostCatalog, TokenUsage } from './cost-catalog.ts';
export { aroundModelCalls } from './around-model-calls.ts';
export { delegatingModel } from './delegating-model.ts';
export { ModelCallTimeoutError, withCallTimeLimit } from './call-time-limit.ts';
export { knownModelAliases, resolveModelAlias, resolveModelReference } from './model-aliases.ts';
export { MissingApiKeyError } from './errors/missing-api-key-error.ts';
export { ModelCallFailedError } from './errors/model-call-failed-error.ts';
export { EmptyModelReplyError } from './errors/empty-model-reply-error.ts';
export { ModelConfigError } from './errors/model-config-error.ts';
export { callWithFallback } from './fallback-chain.ts';
export type { CallWithFallbackOptions } from './fallback-chain.ts';
export { createModelResolver, DEFAULT_API_KEY_ENV, modelEndpoint } from './resolve-model.ts';
export { modelName } from './model-name.ts';
export { planPromptCache } from './prompt-cache.ts';
export type { CallProviderOptions } from './prompt-cache.ts';
export { estimateCallInputTokens, estimateOutputTokens, estimatePromptTokens } from './prompt-tokens.ts';
export { checkAgentModels, checkDefaultModel, checkPrimaryModel, modelWarnings } from './model-readiness.ts';
export type { ModelProblem, ModelReadinessOptions } from './model-readiness.ts';
export type { ModelFetch, ModelResolver, ModelResolverOptions, ModelTarget } from './resolve-model.ts';
export { pickTier, scoreComplexity } from './routing.ts';
export type { ModelTier } from './routing.ts';
