import { describe, expect, it } from 'vitest';
import { createCostCatalog, ModelPriceOverridesSchema } from '../../src/models/index.ts';

describe('createCostCatalog().estimateCost()', () => {
  const catalog = createCostCatalog();

  it('prices a known model from its input and output tokens', () => {
    const estimate = catalog.estimateCost('openai', 'gpt-4o', { inputTokens: 1_000_000, outputTokens: 500_000 });
    expect(estimate).toEqual({ costUsd: 2.5 + 5, known: true });
  });

  it('prices Claude and Groq models', () => {
    expect(catalog.estimateCost('anthropic', 'claude-sonnet-4-5', { inputTokens: 2000, outputTokens: 1000 }).costUsd).toBeCloseTo(0.006 + 0.015, 10);
    expect(catalog.estimateCost('groq', 'llama-3.1-8b-instant', { inputTokens: 1_000_000, outputTokens: 1_000_000 }).costUsd).toBeCloseTo(0.13, 10);
  });

  it('finds a dated model id under its undated name', () => {
    expect(catalog.estimateCost('anthropic', 'claude-haiku-4-5-20251001', { inputTokens: 1_000_000, outputTokens: 0 })).toEqual({ costUsd: 1, known: true });
    expect(catalog.estimateCost('openai', 'gpt-4o-mini-2024-07-18', { inputTokens: 0, outputTokens: 1_000_000 })).toEqual({ costUsd: 0.6, known: true });
  });

  it('costs an unknown model 0 and says it is unknown', () => {
    expect(catalog.estimateCost('openrouter', 'mystery/model-x', { inputTokens: 5000, outputTokens: 5000 })).toEqual({ costUsd: 0, known: false });
  });

  it("does not take one provider's price for the same model name on another provider", () => {
    expect(catalog.estimateCost('openrouter', 'gpt-4o', { inputTokens: 1000, outputTokens: 1000 }).known).toBe(false);
  });

  it('counts missing token counts as zero', () => {
    expect(catalog.estimateCost('openai', 'gpt-4.1', { inputTokens: undefined, outputTokens: 1_000_000 })).toEqual({ costUsd: 8, known: true });
  });

  it('knows local ollama models cost nothing', () => {
    expect(catalog.estimateCost('ollama', 'llama3.2', { inputTokens: 10_000, outputTokens: 10_000 })).toEqual({ costUsd: 0, known: true });
  });

  it('uses a config override over the built-in price, and prices models it adds', () => {
    const overridden = createCostCatalog({
      'openai/gpt-4o': { input_per_million: 1, output_per_million: 2 },
      'openrouter/mystery/model-x': { input_per_million: 10, output_per_million: 20 },
    });
    expect(overridden.estimateCost('openai', 'gpt-4o', { inputTokens: 1_000_000, outputTokens: 1_000_000 })).toEqual({ costUsd: 3, known: true });
    expect(overridden.estimateCost('openrouter', 'mystery/model-x', { inputTokens: 100_000, outputTokens: 0 })).toEqual({ costUsd: 1, known: true });
    expect(overridden.estimateCost('openai', 'gpt-4o-mini', { inputTokens: 1_000_000, outputTokens: 0 }).costUsd).toBe(0.15);
  });
});

describe('ModelPriceOverridesSchema', () => {
  it('refuses a price with an unknown key or a negative number', () => {
    expect(ModelPriceOverridesSchema.safeParse({ 'openai/gpt-4o': { input_per_million: 1, output_per_million: 2, cached: 1 } }).success).toBe(false);
    expect(ModelPriceOverridesSchema.safeParse({ 'openai/gpt-4o': { input_per_million: -1, output_per_million: 2 } }).success).toBe(false);
    expect(ModelPriceOverridesSchema.safeParse({ 'gpt-4o': { input_per_million: 1, output_per_million: 2 } }).success).toBe(false);
    expect(ModelPriceOverridesSchema.safeParse({ 'openai/gpt-4o': { input_per_million: 1, output_per_million: 2 } }).success).toBe(true);
  });
});
