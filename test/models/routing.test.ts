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

  it('scores a long message with a fenced code block, many tools and deep history as frontier', () => {
    const messageText = `Refactor this:\n\`\`\`ts\n${'const x = compute(a, b);\n'.repeat(100)}\`\`\``;
    expect(scoreComplexity({ messageText, toolCount: 25, historyDepth: 50 })).toBeGreaterThanOrEqual(0.8);
  });

  it('spans the whole range with the message alone: a first message with no tools reaches frontier, and 1', () => {
    const asks =
      '1. Analyse the design below.\n2. Compare it with an event-sourced one.\n3. Optimise the hot path.\n4. What are the trade-offs?\n5. Which would you pick?\n';
    const code = `\`\`\`ts\n${'const total = items.reduce((sum, item) => sum + item.price, 0);\n'.repeat(28)}\`\`\``;
    const first = { toolCount: 0, historyDepth: 0 };
    expect(pickTier(scoreComplexity({ messageText: `${asks}${code}`, ...first }), thresholds)).toBe('frontier');
    expect(scoreComplexity({ messageText: `${asks}${code}\n${'x'.repeat(200)}`, ...first })).toBe(1);
    // The examples of docs/agents.md, each a tier of its own.
    const examples = [
      ['hi there', 'fast'],
      ['Tell me about the history of the Roman empire. '.repeat(13), 'fast'],
      ['Analyse and compare the causes of the fall of Rome; why did it happen? '.repeat(9), 'balanced'],
      [`Why does this fail? Debug it:\n\`\`\`ts\n${'const x = f(a);\n'.repeat(45)}\`\`\``, 'smart'],
    ] as const;
    for (const [messageText, tier] of examples) expect(pickTier(scoreComplexity({ messageText, ...first }), thresholds), messageText.slice(0, 30)).toBe(tier);
  });

  it('lets tools and history raise a score but never make a one-line question frontier', () => {
    const question = 'What is the weather in Paris today?';
    const alone = scoreComplexity({ messageText: question, toolCount: 0, historyDepth: 0 });
    const busy = scoreComplexity({ messageText: question, toolCount: 10, historyDepth: 20 });
    expect(busy).toBeGreaterThan(alone);
    expect(pickTier(busy, thresholds)).toBe('smart');
    expect(scoreComplexity({ messageText: question, toolCount: 100, historyDepth: 1000 })).toBeLessThan(0.8);
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

  it("weighs tools at 0.25 and history at 0.25 when saturated, the message's length at 0.45", () => {
    expect(scoreComplexity({ messageText: '', toolCount: 10, historyDepth: 0 })).toBeCloseTo(0.25, 10);
    expect(scoreComplexity({ messageText: '', toolCount: 0, historyDepth: 20 })).toBeCloseTo(0.25, 10);
    expect(scoreComplexity({ messageText: 'x'.repeat(2000), toolCount: 0, historyDepth: 0 })).toBeCloseTo(0.45, 10);
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
