/**
 * The model layer: provider resolution, the fallback chain with retries, cost estimation and
 * complexity routing. Other folders import only from here.
 */
export { ANTHROPIC_CACHE_READ_FACTOR, ANTHROPIC_CACHE_WRITE_FACTOR, cachePrices, createCostCatalog, DEFAULT_MODEL_PRICES, ModelPriceOverridesSchema } from './cost-catalog.ts';
export type { CostCatalog, CostEstimate, ModelPrice, ModelPriceOverrides, TokenUsage } from './cost-catalog.ts';
export { aroundModelCalls } from './around-model-calls.ts';
export { delegatingModel } from './delegating-model.ts';
export type { ModelCallScope } from './around-model-calls.ts';
export { ModelCallTimeoutError, withCallTimeLimit } from './call-time-limit.ts';
export type { CallTimeLimit } from './call-time-limit.ts';
export { DEFAULT_MODEL_ALIASES, knownModelAliases, resolveModelAlias, resolveModelReference } from './model-aliases.ts';
export { MissingApiKeyError } from './errors/missing-api-key-error.ts';
export { ModelCallFailedError } from './errors/model-call-failed-error.ts';
export type { ModelFailure } from './errors/model-call-failed-error.ts';
export { EmptyModelReplyError } from './errors/empty-model-reply-error.ts';
export { ModelConfigError } from './errors/model-config-error.ts';
export { STRUCTURED_OUTPUTS_BY_DEFAULT } from './structured-outputs.ts';
export { callWithFallback, DEFAULT_BASE_DELAY_MS, DEFAULT_MAX_DELAY_MS, DEFAULT_MODEL_RETRIES } from './fallback-chain.ts';
export type { CallWithFallbackOptions, FallbackResult } from './fallback-chain.ts';
export { createModelResolver, DEFAULT_API_KEY_ENV, DEFAULT_BASE_URLS, modelEndpoint } from './resolve-model.ts';
export { modelName } from './model-name.ts';
export { MAX_ANTHROPIC_CACHE_BREAKPOINTS, planPromptCache } from './prompt-cache.ts';
export type { CallProviderOptions, PromptCachePlan, PromptCacheRequest } from './prompt-cache.ts';
export { CHARS_PER_TOKEN, estimateCallInputTokens, estimateOutputTokens, estimatePromptTokens } from './prompt-tokens.ts';
export { checkAgentModels, checkDefaultModel, checkPrimaryModel, modelWarnings } from './model-readiness.ts';
export type { ModelProblem, ModelReadinessOptions } from './model-readiness.ts';
export type { ModelEndpoint, ModelFetch, ModelProvider, ModelResolver, ModelResolverOptions, ModelTarget } from './resolve-model.ts';
export {
  HISTORY_SATURATION_DEPTH,
  LENGTH_SATURATION_CHARS,
  MODEL_TIERS,
  pickTier,
  scoreComplexity,
  TOOL_SATURATION_COUNT,
} from './routing.ts';
export type { ComplexityInput, ModelTier, RoutingThresholds } from './routing.ts';
