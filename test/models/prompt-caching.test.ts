import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TurnRecord } from '../../src/kernel/index.ts';
import { createCostCatalog } from '../../src/models/index.ts';
import { type CachingAnthropicServer, startCachingAnthropicServer } from '../support/caching-anthropic-server.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';

// A system prompt past Anthropic's minimum cacheable prefix (1024 tokens on Sonnet), as a real agent's instructions are.
const LONG_PROMPT = `You are a careful research assistant. ${'Check every claim against the sources you were given, say which source supports it, and say plainly when none does. '.repeat(45)}`;
const TURNS = 20;

/** Each turn: the model lists the agents, then answers. */
const toolTurn = (_body: Record<string, unknown>, index: number) =>
  index % 2 === 0 ? { toolCalls: [{ name: 'agent_list', input: {} }] } : { text: `Answer ${(index - 1) / 2}: three agents are running.` };

let anthropic: CachingAnthropicServer;
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

function anthropicAgent(name: string, extra = ''): string {
  return `name = "${name}"\n[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\nbase_url = "${anthropic.url}"\nsystem_prompt = """${LONG_PROMPT}"""\n${extra}\n[capabilities]\ntools = ["agent_list", "memory_read", "memory_write"]\n`;
}

const recordOf = (message: Record<string, unknown> | undefined): TurnRecord => (message?.['providerOptions'] as { loom: { turn: TurnRecord } }).loom.turn;

describe('prompt caching on the Anthropic wire', () => {
  beforeAll(async () => {
    anthropic = await startCachingAnthropicServer({ reply: toolTurn });
  });
  afterAll(async () => {
    await anthropic.close();
  });
  beforeEach(async () => {
    anthropic.accounts.length = 0;
    dir = await makeTempDir('loom-prompt-cache-');
    host = await openTestHost(dir.path);
  });
  afterEach(async () => {
    await host.close();
    await dir.remove();
  });

  it(`reads at least 80 % of the input tokens from the cache after the first turn of a ${TURNS}-turn conversation with tools`, async () => {
    await host.kernel.spawn(manifest(anthropicAgent('researcher')));
    const results = [];
    for (let turn = 0; turn < TURNS; turn++) results.push(await host.kernel.send('researcher', `Question ${turn}: which agents run now?`));

    const accounts = anthropic.accounts;
    expect(accounts).toHaveLength(TURNS * 2);
    // Breakpoints after the tools, the system prompt and on the conversation: never past Anthropic's four.
    for (const account of accounts) expect(account.breakpoints).toBeGreaterThanOrEqual(3);
    for (const account of accounts) expect(account.breakpoints).toBeLessThanOrEqual(4);
    const first = accounts[0];
    expect(first?.cacheReadTokens).toBe(0);
    expect(first?.cacheWriteTokens).toBeGreaterThan(1024);
    const later = accounts.slice(2);
    const input = later.reduce((total, account) => total + account.inputTokens + account.cacheReadTokens + account.cacheWriteTokens, 0);
    const read = later.reduce((total, account) => total + account.cacheReadTokens, 0);
    expect(read / input).toBeGreaterThanOrEqual(0.8);

    // What each turn cost is priced with the cache's prices: reads at a tenth, writes at 1.25 times the input price.
    const catalog = createCostCatalog();
    for (const [turn, result] of results.entries()) {
      const calls = accounts.slice(turn * 2, turn * 2 + 2);
      const expected = calls.reduce(
        (total, account) =>
          total +
          catalog.estimateCost('anthropic', 'claude-sonnet-4-5', {
            inputTokens: account.inputTokens + account.cacheReadTokens + account.cacheWriteTokens,
            cacheReadTokens: account.cacheReadTokens,
            cacheWriteTokens: account.cacheWriteTokens,
            outputTokens: 20,
          }).costUsd,
        0,
      );
      expect(result.costUsd).toBeCloseTo(expected, 10);
    }
    // Without the cache the same turns would cost over three times as much.
    const uncached = accounts.reduce(
      (total, account) => total + ((account.inputTokens + account.cacheReadTokens + account.cacheWriteTokens) * 3 + 20 * 15) / 1_000_000,
      0,
    );
    const paid = results.reduce((total, result) => total + result.costUsd, 0);
    expect(uncached / paid).toBeGreaterThan(3);

    // The turn's trace says what was read from and written to the cache.
    const session = (await host.store.sessions.get(host.kernel.get('researcher').session_id))?.messages as Record<string, unknown>[];
    const lastTurn = recordOf(session.filter((message) => message['role'] === 'user').at(-1));
    const lastCalls = accounts.slice(-2);
    expect(lastTurn.cacheReadTokens).toBe(lastCalls.reduce((total, account) => total + account.cacheReadTokens, 0));
    expect(lastTurn.cacheWriteTokens).toBe(lastCalls.reduce((total, account) => total + account.cacheWriteTokens, 0));
    expect(lastTurn.steps.filter((step) => step.kind === 'model').map((step) => step.kind === 'model' && step.cacheReadTokens)).toEqual(
      lastCalls.map((account) => account.cacheReadTokens),
    );
  });

  it('marks the tools, the system prompt and the conversation, and keeps the tools in one order', async () => {
    await host.kernel.spawn(manifest(anthropicAgent('marker')));
    await host.kernel.send('marker', 'Which agents run?');
    const [call, next] = anthropic.accounts.map((account) => account.body);
    const tools = call?.['tools'] as { name: string; cache_control?: unknown }[];
    expect(tools.map((tool) => tool.name)).toEqual([...tools.map((tool) => tool.name)].sort());
    expect(tools.at(-1)?.cache_control).toEqual({ type: 'ephemeral' });
    expect(tools.slice(0, -1).every((tool) => tool.cache_control === undefined)).toBe(true);
    expect(call?.['system']).toMatchObject([{ type: 'text', cache_control: { type: 'ephemeral' } }]);
    const lastBlock = (body: Record<string, unknown> | undefined): unknown =>
      (body?.['messages'] as { content: { cache_control?: unknown }[] }[]).at(-1)?.content.at(-1)?.cache_control;
    expect(lastBlock(call)).toEqual({ type: 'ephemeral' });
    expect(lastBlock(next)).toEqual({ type: 'ephemeral' });
    // The stored session holds no cache marks: they are the request's only.
    expect(JSON.stringify((await host.store.sessions.get(host.kernel.get('marker').session_id))?.messages)).not.toContain('cacheControl');
  });
});

describe('prompt caching on the OpenAI wire', () => {
  const server = useScriptedModelServer();
  beforeEach(async () => {
    dir = await makeTempDir('loom-prompt-cache-openai-');
    host = await openTestHost(dir.path);
  });
  afterEach(async () => {
    await host.close();
    await dir.remove();
  });

  it("sends one prompt_cache_key for every call of an agent's conversation, and another for another agent", async () => {
    const agent = (name: string): string => `name = "${name}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
    await host.kernel.spawn(manifest(agent('one')));
    await host.kernel.spawn(manifest(agent('two')));
    server.script([{ text: 'a' }, { text: 'b' }, { text: 'c' }]);
    await host.kernel.send('one', 'hello');
    await host.kernel.send('one', 'again');
    await host.kernel.send('two', 'hello');
    const keys = server.requests.map((request) => request.body['prompt_cache_key']);
    expect(typeof keys[0]).toBe('string');
    expect(keys[1]).toBe(keys[0]);
    expect(keys[2]).not.toBe(keys[0]);
  });

  it("prices cached input at OpenAI's cached-input price", () => {
    const catalog = createCostCatalog();
    // gpt-4o: $2.50 per million input tokens, $1.25 per million cached.
    expect(catalog.estimateCost('openai', 'gpt-4o', { inputTokens: 1_000_000, cacheReadTokens: 800_000, outputTokens: 0 }).costUsd).toBeCloseTo(
      0.2 * 2.5 + 0.8 * 1.25,
      10,
    );
    // Anthropic: reads at a tenth, writes at 1.25 times the input price.
    expect(
      catalog.estimateCost('anthropic', 'claude-sonnet-4-5', { inputTokens: 1_000_000, cacheReadTokens: 500_000, cacheWriteTokens: 250_000, outputTokens: 0 })
        .costUsd,
    ).toBeCloseTo(0.25 * 3 + 0.5 * 0.3 + 0.25 * 3.75, 10);
    // A config override may price the cache itself.
    const overridden = createCostCatalog({ 'openai/gpt-4o': { input_per_million: 2, output_per_million: 8, cache_read_per_million: 0.5 } });
    expect(overridden.estimateCost('openai', 'gpt-4o', { inputTokens: 1_000_000, cacheReadTokens: 1_000_000 }).costUsd).toBeCloseTo(0.5, 10);
  });
});
