import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { QuotaExceededError, TokenBudgetExceededError } from '../../src/errors/index.ts';
import type { TurnRecord } from '../../src/kernel/index.ts';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-budget-ledger-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

/** An agent that may list agents, with `resources` as its `[resources]` table. */
function looper(name: string, resources: string): string {
  return `name = "${name}"\n[resources]\n${resources}\n[capabilities]\ntools = ["agent_list"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
}

/** `count` replies that each call agent_list again, each reporting `usage`. */
function loopingReplies(
  count: number,
  usage: { inputTokens: number; outputTokens: number },
): { toolCalls: { name: string; input: Record<string, never> }[]; usage: typeof usage }[] {
  return Array.from({ length: count }, () => ({ toolCalls: [{ name: 'agent_list', input: {} }], usage }));
}

async function sessionOf(name: string): Promise<Record<string, unknown>[]> {
  return (await host.store.sessions.get(host.kernel.get(name).session_id))?.messages as Record<string, unknown>[];
}

function recordOf(message: Record<string, unknown> | undefined): TurnRecord {
  return (message?.['providerOptions'] as { loom: { turn: TurnRecord } }).loom.turn;
}

describe('the budget ledger caps every model call of a turn', () => {
  it('stops a turn that loops on tool calls once max_tokens_per_hour is spent, within one call of it, saying when the quota frees, and keeps what was said', async () => {
    await host.kernel.spawn(manifest(looper('spender', 'max_tokens_per_hour = 300')));
    // A fourth reply would end the turn: it is left for the next hour's message.
    server.script([...loopingReplies(3, { inputTokens: 100, outputTokens: 20 }), { text: 'fresh hour' }]);
    const startedAt = host.clock.now();

    const refusal = await host.kernel.send('spender', 'keep listing').then(
      () => undefined,
      (error: unknown) => error,
    );

    expect(refusal).toBeInstanceOf(QuotaExceededError);
    const error = refusal as QuotaExceededError;
    expect(error.code).toBe('QUOTA_EXCEEDED');
    const retryAt = new Date(startedAt + 60 * 60 * 1000).toISOString();
    expect(error.message).toBe(
      `agent "spender" has used 360 of its 300 tokens per hour; it frees up at ${retryAt} (in 60 min); the limit is [resources].max_tokens_per_hour in its manifest`,
    );
    expect(error.details).toMatchObject({ budget: '[resources].max_tokens_per_hour', limit: 300, used: 360, retryAt });
    // Three calls of 120 tokens: the third started with 60 left; the fourth was never sent.
    expect(server.requests).toHaveLength(3);
    const usage = await host.store.usage.list();
    expect(usage.reduce((total, record) => total + record.inputTokens + record.outputTokens, 0)).toBe(360);

    const session = await sessionOf('spender');
    expect(session[0]).toMatchObject({ role: 'user', content: 'keep listing' });
    expect(recordOf(session[0])).toMatchObject({ status: 'cancelled', reason: error.message, inputTokens: 300, outputTokens: 60 });
    // The three rounds of tool calls and their results, then the note saying why the turn stopped.
    expect(session.filter((message) => message['role'] === 'tool')).toHaveLength(3);
    expect(JSON.stringify(session.at(-1))).toContain('cut short: agent \\"spender\\" has used 360 of its 300 tokens per hour');

    // The audit log reads it as a turn that ran and was cut short, not as one refused before it ran.
    expect((await host.kernel.audit({ agent: 'spender', types: ['turn-cancel', 'turn-refuse'] })).map((row) => [row.type, row.data['code']])).toEqual([
      ['turn-cancel', 'QUOTA_EXCEEDED'],
    ]);

    // The next message is refused before it reaches the model, until the window frees.
    await expect(host.kernel.send('spender', 'again')).rejects.toThrow(QuotaExceededError);
    expect(server.requests).toHaveLength(3);
    expect((await host.kernel.audit({ agent: 'spender', types: ['turn-refuse'] })).map((row) => row.data['code'])).toEqual(['QUOTA_EXCEEDED']);
    await host.clock.advance(60 * 60 * 1000 + 1);
    expect((await host.kernel.send('spender', 'again')).text).toBe('fresh hour');
  });

  it('stops a streamed turn the same way: its stream ends with QUOTA_EXCEEDED and when the hour frees', async () => {
    await host.kernel.spawn(manifest(looper('streamer', 'max_tokens_per_hour = 300')));
    server.script([...loopingReplies(3, { inputTokens: 100, outputTokens: 20 }), { text: 'a fourth call ends the turn' }]);
    const retryAt = new Date(host.clock.now() + 60 * 60 * 1000).toISOString();

    const events: AgentEvent[] = [];
    for await (const event of host.kernel.stream('streamer', 'keep listing')) events.push(event);

    expect(events.filter((event) => event.type === 'tool-result')).toHaveLength(3);
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      code: 'QUOTA_EXCEEDED',
      details: { budget: '[resources].max_tokens_per_hour', limit: 300, used: 360, retryAt },
    });
    expect(server.requests).toHaveLength(3);
    expect(recordOf((await sessionOf('streamer'))[0])).toMatchObject({ status: 'cancelled', inputTokens: 300, outputTokens: 60 });
  });

  it('stops a looping turn once max_cost_per_hour is spent, naming the limit and when it frees', async () => {
    // openai/gpt-4o costs $2.50 per million tokens in and $10 out: each reply here costs $0.0075.
    await host.kernel.spawn(manifest(looper('payer', 'max_cost_per_hour = 0.02')));
    server.script([...loopingReplies(3, { inputTokens: 1000, outputTokens: 500 }), { text: 'a fourth call ends the turn' }]);
    const startedAt = host.clock.now();
    await host.clock.advance(5 * 60 * 1000);

    const refusal = await host.kernel.send('payer', 'keep listing').then(
      () => undefined,
      (error: unknown) => error,
    );

    expect(refusal).toBeInstanceOf(QuotaExceededError);
    const error = refusal as QuotaExceededError;
    const retryAt = new Date(startedAt + 5 * 60 * 1000 + 60 * 60 * 1000).toISOString();
    expect(error.message).toBe(
      `agent "payer" has used $0.0225 of its $0.02 USD per hour; it frees up at ${retryAt} (in 60 min); the limit is [resources].max_cost_per_hour in its manifest`,
    );
    expect(error.details).toMatchObject({ budget: '[resources].max_cost_per_hour', limit: 0.02, retryAt });
    expect(server.requests).toHaveLength(3);
    const session = await sessionOf('payer');
    expect(recordOf(session[0])).toMatchObject({ status: 'cancelled', inputTokens: 3000, outputTokens: 1500 });
    expect(recordOf(session[0]).costUsd).toBeCloseTo(0.0225, 6);
  });

  it("counts a step's generate_text against the step's token budget: the step's next call is refused once it is spent", async () => {
    await host.kernel.spawn(
      manifest(`name = "drafter"\n[capabilities]\ntools = ["generate_text"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`),
    );
    // The step's first call (50 tokens) asks generate_text for a draft, which spends 200 more: the budget of 100 is spent.
    server.script([
      { toolCalls: [{ name: 'generate_text', input: { prompt: 'a long draft' } }], usage: { inputTokens: 40, outputTokens: 10 } },
      { text: 'the draft', usage: { inputTokens: 20, outputTokens: 180 } },
      { text: 'never sent' },
    ]);

    const refusal = await host.kernel
      .runTask('drafter', { prompt: 'Draft it', tokenBudget: { max: 100, label: 'activity "draft" (token_budget.max = 100)' } })
      .then(
        () => undefined,
        (error: unknown) => error,
      );

    expect(refusal).toBeInstanceOf(TokenBudgetExceededError);
    expect((refusal as TokenBudgetExceededError).message).toBe(
      'stopped before a model call: activity "draft" (token_budget.max = 100) allows 100 tokens and 250 were used; raise the budget to let the work go further',
    );
    expect((refusal as TokenBudgetExceededError).details).toMatchObject({ inputTokens: 60, outputTokens: 190 });
    expect(server.requests).toHaveLength(2);
    const usage = await host.store.usage.list();
    expect(usage.reduce((total, record) => total + record.inputTokens + record.outputTokens, 0)).toBe(250);
  });
});
