import { z } from 'zod';
import type { ModelProvider } from './resolve-model.ts';

/**
 * A model's list price in US dollars per million tokens. Input tokens read from or written to
 * the provider's prompt cache have their own prices; without them, the provider's rule applies
 * (see {@link cachePrices}).
 */
export interface ModelPrice {
  input_per_million: number;
  output_per_million: number;
  /** Input tokens read from the prompt cache. */
  cache_read_per_million?: number | undefined;
  /** Input tokens written to the prompt cache. */
  cache_write_per_million?: number | undefined;
}

/**
 * Token counts of one call; the AI SDK's `LanguageModelUsage` fits. Missing counts count as 0.
 * `inputTokens` is every input token, those read from or written to the prompt cache included
 * (as the AI SDK counts them).
 */
export interface TokenUsage {
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  /** Of `inputTokens`, those read from the provider's prompt cache. */
  cacheReadTokens?: number | undefined;
  /** Of `inputTokens`, those written to the provider's prompt cache. */
  cacheWriteTokens?: number | undefined;
}

/** The cost of a call, and whether the model's price was known (an unknown model costs 0). */
export interface CostEstimate {
  costUsd: number;
  known: boolean;
}

/**
 * Price overrides from config: `{ "provider/model": { input_per_million, output_per_million } }`.
 * Our own format, so strict: an unknown key inside a price is an error.
 */
export const ModelPriceOverridesSchema = z.record(
  z.string().regex(/^[a-z-]+\/.+$/, { error: 'expected a key "provider/model", e.g. "openai/gpt-4o"' }),
  z.strictObject({
    input_per_million: z.number().nonnegative(),
    output_per_million: z.number().nonnegative(),
    cache_read_per_million: z.number().nonnegative().optional(),
    cache_write_per_million: z.number().nonnegative().optional(),
  }),
);

/** Price overrides, keyed `provider/model`. */
export type ModelPriceOverrides = z.infer<typeof ModelPriceOverridesSchema>;

const price = (input: number, output: number, cacheRead?: number): ModelPrice => ({
  input_per_million: input,
  output_per_million: output,
  ...(cacheRead === undefined ? {} : { cache_read_per_million: cacheRead }),
});

/** Anthropic bills a cache read at a tenth of the input price, and a (five-minute) cache write at 1.25 times it. */
export const ANTHROPIC_CACHE_READ_FACTOR = 0.1;
/** See {@link ANTHROPIC_CACHE_READ_FACTOR}. */
export const ANTHROPIC_CACHE_WRITE_FACTOR = 1.25;

/**
 * The per-million prices of cached input on `provider`: the price's own when it has them, else
 * Anthropic's factors for `anthropic`, else the input price (a provider that caches without
 * saying what it charges, and OpenAI's cache writes, which cost what input costs).
 */
export function cachePrices(provider: ModelProvider, known: ModelPrice): { read: number; write: number } {
  const anthropic = provider === 'anthropic';
  return {
    read: known.cache_read_per_million ?? known.input_per_million * (anthropic ? ANTHROPIC_CACHE_READ_FACTOR : 1),
    write: known.cache_write_per_million ?? known.input_per_million * (anthropic ? ANTHROPIC_CACHE_WRITE_FACTOR : 1),
  };
}

/**
 * List prices (USD per million input / output tokens, and for OpenAI models cached input) of
 * common models, keyed `provider/model` without date suffixes. Prices change: config overrides win.
 */
export const DEFAULT_MODEL_PRICES: Readonly<Record<string, ModelPrice>> = {
  'anthropic/claude-opus-4': price(15, 75),
  'anthropic/claude-opus-4-0': price(15, 75),
  'anthropic/claude-opus-4-1': price(15, 75),
  'anthropic/claude-opus-4-5': price(5, 25),
  'anthropic/claude-sonnet-4': price(3, 15),
  'anthropic/claude-sonnet-4-0': price(3, 15),
  'anthropic/claude-sonnet-4-5': price(3, 15),
  'anthropic/claude-haiku-4-5': price(1, 5),
  'anthropic/claude-3-7-sonnet': price(3, 15),
  'anthropic/claude-3-5-haiku': price(0.8, 4),
  'openai/gpt-4o': price(2.5, 10, 1.25),
  'openai/gpt-4o-mini': price(0.15, 0.6, 0.075),
  'openai/gpt-4.1': price(2, 8, 0.5),
  'openai/gpt-4.1-mini': price(0.4, 1.6, 0.1),
  'openai/gpt-4.1-nano': price(0.1, 0.4, 0.025),
  'openai/gpt-5': price(1.25, 10, 0.125),
  'openai/gpt-5-mini': price(0.25, 2, 0.025),
  'openai/gpt-5-nano': price(0.05, 0.4, 0.005),
  'openai/o1': price(15, 60, 7.5),
  'openai/o1-mini': price(1.1, 4.4, 0.55),
  'openai/o3': price(2, 8, 0.5),
  'openai/o3-mini': price(1.1, 4.4, 0.55),
  'openai/o4-mini': price(1.1, 4.4, 0.275),
  'groq/llama-3.3-70b-versatile': price(0.59, 0.79),
  'groq/llama-3.1-8b-instant': price(0.05, 0.08),
};

/** Prices of models, with config overrides applied. */
export interface CostCatalog {
  /** The price of `provider/model`, or undefined when unknown. Ollama models are local and cost 0. */
  priceOf(provider: ModelProvider, model: string): ModelPrice | undefined;
  /**
   * The cost in USD of `usage` on `provider/model`, its cached input at the cache's prices. An
   * unknown model costs 0 with `known: false`, so callers can say the figure is incomplete.
   */
  estimateCost(provider: ModelProvider, model: string, usage: TokenUsage): CostEstimate;
}

const FREE: ModelPrice = price(0, 0);

/** `claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`; `gpt-4o-2024-08-06` → `gpt-4o`; `-latest` goes too. */
function withoutVersionSuffix(model: string): string {
  return model.replace(/-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$/, '');
}

/**
 * A cost catalog: {@link DEFAULT_MODEL_PRICES} with `overrides` (validated with
 * {@link ModelPriceOverridesSchema} at the config edge) taking precedence. A model is looked up
 * as given, then without a date or `-latest` suffix. Models served by `ollama` run locally and
 * are known to cost 0 unless overridden.
 *
 * @example
 * const catalog = createCostCatalog({ 'openai/gpt-4o': { input_per_million: 2, output_per_million: 8 } });
 * catalog.estimateCost('openai', 'gpt-4o', { inputTokens: 1000, outputTokens: 500 }); // { costUsd: 0.006, known: true }
 */
export function createCostCatalog(overrides: ModelPriceOverrides = {}): CostCatalog {
  const prices = new Map<string, ModelPrice>([...Object.entries(DEFAULT_MODEL_PRICES), ...Object.entries(overrides)]);
  const priceOf = (provider: ModelProvider, model: string): ModelPrice | undefined =>
    prices.get(`${provider}/${model}`) ?? prices.get(`${provider}/${withoutVersionSuffix(model)}`) ?? (provider === 'ollama' ? FREE : undefined);

  return {
    priceOf,
    estimateCost(provider, model, usage) {
      const known = priceOf(provider, model);
      if (known === undefined) return { costUsd: 0, known: false };
      const cached = cachePrices(provider, known);
      const read = usage.cacheReadTokens ?? 0;
      const write = usage.cacheWriteTokens ?? 0;
      // Cached tokens are part of `inputTokens`; a provider that reports more cached than input tokens is not charged below zero for the rest.
      const uncached = Math.max(0, (usage.inputTokens ?? 0) - read - write);
      const costUsd =
        (uncached * known.input_per_million + read * cached.read + write * cached.write + (usage.outputTokens ?? 0) * known.output_per_million) / 1_000_000;
      return { costUsd, known: true };
    },
  };
}
