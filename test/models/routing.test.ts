import { describe, expect, it } from 'vitest';
import { RoutingSchema } from '../../src/manifest/schema.ts';
import { pickTier, scoreComplexity } from '../../src/models/index.ts';

const thresholds = RoutingSchema.parse({});

describe('scoreComplexity()', () => {
  it('scores a short greeting with no tools or history near 0', () => {
    const score = scoreComplexity({ messageText: 'hi there', toolCount: 0, historyDepth: 0 });
    expect(score).toBeGreaterThanOrEqual(0);
    expect(score).toBeLessThan(0.05);
  });

  it('scores a long message with a fenced code block, many tools and deep history at 1', () => {
    const messageText = `Refactor this:\n\`\`\`ts\n${'const x = compute(a, b);\n'.repeat(100)}\`\`\``;
    expect(scoreComplexity({ messageText, toolCount: 25, historyDepth: 50 })).toBe(1);
  });

  it('scores higher with each signal added: length, code, tools, history', () => {
    const base = { messageText: 'Explain the plan.', toolCount: 0, historyDepth: 0 };
    const longer = { ...base, messageText: `${base.messageText} ${'detail '.repeat(150)}` };
    const withCode = { ...longer, messageText: `${longer.messageText}\n\`\`\`\nrun()\n\`\`\`` };
    const withTools = { ...withCode, toolCount: 5 };
    const withHistory = { ...withTools, historyDepth: 10 };
    const scores = [base, longer, withCode, withTools, withHistory].map(scoreComplexity);
    for (let index = 1; index < scores.length; index++) expect(scores[index]).toBeGreaterThan(scores[index - 1]!);
  });

  it('counts unfenced code-like syntax as code, less than a fenced block', () => {
    const plain = scoreComplexity({ messageText: 'please tidy up my notes', toolCount: 0, historyDepth: 0 });
    const codeLike = scoreComplexity({ messageText: 'why does const total = items.reduce(sum); fail', toolCount: 0, historyDepth: 0 });
    const fenced = scoreComplexity({ messageText: '```\nwhy does it fail\n```', toolCount: 0, historyDepth: 0 });
    expect(codeLike).toBeGreaterThan(plain + 0.1);
    expect(fenced).toBeGreaterThan(codeLike);
  });

  it('weighs tools at 0.2 and history at 0.2 when saturated', () => {
    expect(scoreComplexity({ messageText: '', toolCount: 10, historyDepth: 0 })).toBeCloseTo(0.2, 10);
    expect(scoreComplexity({ messageText: '', toolCount: 0, historyDepth: 20 })).toBeCloseTo(0.2, 10);
    expect(scoreComplexity({ messageText: 'x'.repeat(2000), toolCount: 0, historyDepth: 0 })).toBeCloseTo(0.35, 10);
  });
});

describe('pickTier()', () => {
  it('picks each tier at its threshold with the default [routing] thresholds', () => {
    expect(pickTier(0.8, thresholds)).toBe('frontier');
    expect(pickTier(0.79, thresholds)).toBe('smart');
    expect(pickTier(0.5, thresholds)).toBe('smart');
    expect(pickTier(0.49, thresholds)).toBe('balanced');
    expect(pickTier(0.3, thresholds)).toBe('balanced');
    expect(pickTier(0.29, thresholds)).toBe('fast');
    expect(pickTier(0, thresholds)).toBe('fast');
  });

  it('follows custom thresholds', () => {
    const custom = { frontier_threshold: 0.95, smart_threshold: 0.6, balanced_threshold: 0.1 };
    expect(pickTier(0.9, custom)).toBe('smart');
    expect(pickTier(0.2, custom)).toBe('balanced');
  });

  it('routes a greeting to fast and a large code task with tools and history to frontier', () => {
    expect(pickTier(scoreComplexity({ messageText: 'thanks!', toolCount: 0, historyDepth: 1 }), thresholds)).toBe('fast');
    const big = `\`\`\`python\n${'def f(x):\n    return x * 2\n'.repeat(80)}\`\`\``;
    expect(pickTier(scoreComplexity({ messageText: big, toolCount: 12, historyDepth: 30 }), thresholds)).toBe('frontier');
  });
});
