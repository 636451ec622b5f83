import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSystemClock } from '../src/clock/index.ts';
import { ConfigSchema, resolveLoomHome } from '../src/config/index.ts';
import { openHost } from '../src/host/index.ts';
import { createSilentLogger } from '../src/logging/index.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { createCostCatalog } from '../src/models/index.ts';
import { type CacheAccount, startCachingAnthropicServer } from '../test/support/caching-anthropic-server.ts';
import { round } from './stats.ts';

const TURNS = 20;
// Instructions of about 1,500 tokens, past Anthropic's minimum cacheable prefix, as a real agent's are.
const SYSTEM_PROMPT = `You are a careful research assistant. ${'Check every claim against the sources you were given, say which source supports it, and say plainly when none does. '.repeat(45)}`;

/** Each turn: the model reads a memory key, then answers. */
function reply(
  _body: Record<string, unknown>,
  index: number,
): { text?: string; toolCalls?: { name: string; input: Record<string, unknown> }[]; outputTokens: number } {
  return index % 2 === 0
    ? { toolCalls: [{ name: 'agent_list', input: {} }], outputTokens: 20 }
    : { text: `Answer ${(index - 1) / 2}: three agents are running, as the list shows.`, outputTokens: 60 };
}

/** A 20-turn conversation with tools on the caching Anthropic wire; what each turn's calls were billed. */
async function conversation(caching: boolean): Promise<{ accounts: CacheAccount[]; costUsd: number }> {
  const server = await startCachingAnthropicServer({ reply, caching });
  const dir = await mkdtemp(join(tmpdir(), 'loom-bench-cost-'));
  const host = await openHost({
    home: resolveLoomHome({ LOOM_HOME: join(dir, 'home') }, dir),
    config: ConfigSchema.parse({}),
    env: { ANTHROPIC_API_KEY: 'sk-ant-bench' },
    logger: createSilentLogger(),
    clock: createSystemClock(),
    runSchedules: false,
    connectMcpServers: false,
  });
  try {
    const toml = `name = "researcher"\n[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\nbase_url = "${server.url}"\nsystem_prompt = """${SYSTEM_PROMPT}"""\n[capabilities]\ntools = ["agent_list", "memory_read", "memory_write", "file_read"]\n`;
    await host.kernel.spawn(parseManifest(toml, { source: 'cost-bench.toml' }).manifest);
    let costUsd = 0;
    for (let turn = 0; turn < TURNS; turn++) costUsd += (await host.kernel.send('researcher', `Question ${turn}: which agents run now?`)).costUsd;
    return { accounts: [...server.accounts], costUsd };
  } finally {
    await host.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * `npm run bench -- cost`: input tokens billed per turn over a 20-turn session with tools on the
 * Anthropic wire (a scripted server that caches as Anthropic does), with Loom's cache breakpoints
 * honoured and with a server that caches nothing, and the share of input read from the cache
 * after the first turn (target: at least 80 %).
 */
export async function costBench(): Promise<Record<string, unknown>> {
  const catalog = createCostCatalog();
  const summary = async (caching: boolean) => {
    const { accounts, costUsd } = await conversation(caching);
    const all = (account: CacheAccount): number => account.inputTokens + account.cacheReadTokens + account.cacheWriteTokens;
    const later = accounts.slice(2);
    const laterInput = later.reduce((total, account) => total + all(account), 0);
    const read = later.reduce((total, account) => total + account.cacheReadTokens, 0);
    // Input billed in full-price tokens: a cache read counts a tenth, a write 1.25.
    const price = catalog.priceOf('anthropic', 'claude-sonnet-4-5')?.input_per_million ?? 3;
    const billed = accounts.map(
      (account) =>
        catalog.estimateCost('anthropic', 'claude-sonnet-4-5', {
          inputTokens: all(account),
          cacheReadTokens: account.cacheReadTokens,
          cacheWriteTokens: account.cacheWriteTokens,
        }).costUsd *
        (1_000_000 / price),
    );
    const perTurn = Array.from({ length: TURNS }, (_, turn) => Math.round((billed[turn * 2] ?? 0) + (billed[turn * 2 + 1] ?? 0)));
    return {
      input_tokens_per_turn: round(accounts.reduce((total, account) => total + all(account), 0) / TURNS),
      billed_input_tokens_per_turn: round(perTurn.reduce((total, value) => total + value, 0) / TURNS),
      billed_input_tokens_by_turn: perTurn,
      cache_read_share_after_first_turn: round(laterInput === 0 ? 0 : read / laterInput),
      cost_usd: Math.round(costUsd * 1_000_000) / 1_000_000,
    };
  };
  const on = await summary(true);
  const off = await summary(false);
  return {
    bench: 'cost',
    turns: TURNS,
    model_calls: TURNS * 2,
    model: 'anthropic/claude-sonnet-4-5',
    caching_on: on,
    caching_off: off,
    billed_input_ratio_on_to_off: round(on.billed_input_tokens_per_turn / off.billed_input_tokens_per_turn),
    cost_ratio_on_to_off: round(on.cost_usd / off.cost_usd),
  };
}
