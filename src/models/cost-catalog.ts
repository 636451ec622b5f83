import { z } from 'zod';
import type { ModelProvider } from './resolve-model.ts';

/** A model's list price in US dollars per million tokens. */
export interface ModelPrice {
  input_per_million: number;
  output_per_million: number;
}

/** Token counts of one call; the AI SDK's `LanguageModelUsage` fits. Missing counts count as 0. */
export interface TokenUsage {
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
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
  z.strictObject({ input_per_million: z.number().nonnegative(), output_per_million: z.number().nonnegative() }),
);

/** Price overrides, keyed `provider/model`. */
export type ModelPriceOverrides = z.infer<typeof ModelPriceOverridesSchema>;

const price = (input: number, output: number): ModelPrice => ({ input_per_million: input, output_per_million: output });

/**
 * List prices (USD per million input / output tokens) of common models, keyed `provider/model`
 * without date suffixes. Prices change: config overrides win.
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
  'openai/gpt-4o': price(2.5, 10),
  'openai/gpt-4o-mini': price(0.15, 0.6),
  'openai/gpt-4.1': price(2, 8),
  'openai/gpt-4.1-mini': price(0.4, 1.6),
  'openai/gpt-4.1-nano': price(0.1, 0.4),
  'openai/gpt-5': price(1.25, 10),
  'openai/gpt-5-mini': price(0.25, 2),
  'openai/gpt-5-nano': price(0.05, 0.4),
  'openai/o1': price(15, 60),
  'openai/o1-mini': price(1.1, 4.4),
  'openai/o3': price(2, 8),
  'openai/o3-mini': price(1.1, 4.4),
  'openai/o4-mini': price(1.1, 4.4),
  'groq/llama-3.3-70b-versatile': price(0.59, 0.79),
  'groq/llama-3.1-8b-instant': price(0.05, 0.08),
};

/** Prices of models, with config overrides applied. */
export interface CostCatalog {
  /** The price of `provider/model`, or undefined when unknown. Ollama models are local and cost 0. */
  priceOf(provider: ModelProvider, model: string): ModelPrice | undefined;
  /**
   * The cost in USD of `usage` on `provider/model`. An unknown model costs 0 with `known: false`,
   * so callers can say the figure is incomplete.
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
    prices.get(`${provider}/${model}`) ??
    prices.get(`${provider}/${withoutVersionSuffix(model)}`) ??
    (provider === 'ollama' ? FREE : undefined);

  return {
    priceOf,
    estimateCost(provider, model, usage) {
      const known = priceOf(provider, model);
      if (known === undefined) return { costUsd: 0, known: false };
      const costUsd =
        ((usage.inputTokens ?? 0) * known.input_per_million + (usage.outputTokens ?? 0) * known.output_per_million) / 1_000_000;
      return { costUsd, known: true };
    },
  };
}
