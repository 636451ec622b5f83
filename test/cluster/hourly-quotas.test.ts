import { afterEach, describe, expect, it } from 'vitest';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import { QuotaExceededError } from '../../src/errors/index.ts';
import type { Kernel } from '../../src/kernel/index.ts';
import { QUOTA_READ_EVERY_MS } from '../../src/kernel/quota-tracker.ts';
import { openPostgresStore } from '../../src/store/index.ts';
import { manifest } from '../support/test-kernel.ts';
import { openClusterNode } from '../support/cluster-node.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';

// Two nodes on one database holding the same agent: its hourly quotas ([resources].max_tokens_per_hour,
// max_cost_per_hour) count what it spent through either node in the hour, without a restart.

const postgres = useTestPostgres();
const server = useScriptedModelServer();
const closers: (() => Promise<void>)[] = [];
const HOUR_MS = 60 * 60 * 1000;

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A node's kernel on the database at `url`, on the nodes' shared `clock`. */
async function nodeKernel(url: string, id: string, clock: FakeClock): Promise<Kernel> {
  const node = await openClusterNode(url, id, { clock });
  closers.push(node.close);
  return node.kernel;
}

async function refusalOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

/** An agent that may list agents, with `resources` as its `[resources]` table. */
const spender = (resources: string): string =>
  `name = "spender"\n[resources]\n${resources}\n[capabilities]\ntools = ["agent_list"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\nmax_tokens = 1000\n`;
// 2,000 tokens in and 1,000 out of gpt-4o: 3,000 tokens, $0.015.
const usage = { inputTokens: 2000, outputTokens: 1000 };
const reply = { text: 'done', usage };
const listing = { toolCalls: [{ name: 'agent_list', input: {} }], usage };

/** The refusal of spender's turn by its hourly quota, having used `used` tokens; it frees at `freeAt`, `minutes` from now. */
function expectRefused(refusal: unknown, used: string, freeAt: number, minutes: number): void {
  expect(refusal).toBeInstanceOf(QuotaExceededError);
  const retryAt = new Date(freeAt).toISOString();
  expect((refusal as QuotaExceededError).message).toBe(
    `agent "spender" has used ${used} of its 5,000 tokens per hour; it frees up at ${retryAt} (in ${minutes} min); the limit is [resources].max_tokens_per_hour in its manifest`,
  );
  expect((refusal as QuotaExceededError).details).toMatchObject({ budget: '[resources].max_tokens_per_hour', limit: 5000, retryAt });
}

describe('[resources] hourly quotas across the nodes of a cluster', () => {
  it('refuses on one node the turn that would pass max_tokens_per_hour, counting what the agent spent on the other since, without a restart, until the hour frees', async () => {
    const { url } = await postgres.createDatabase();
    const clock = createFakeClock();
    const a = await nodeKernel(url, 'node-a', clock);
    await a.spawn(manifest(spender('max_tokens_per_hour = 5000')));
    const b = await nodeKernel(url, 'node-b', clock);
    server.script([reply, reply, reply, reply]);

    // Node b spends first (it reads the agent's hour then), node a ten minutes after: 6,000 tokens between them.
    const first = clock.now();
    expect((await b.send('spender', 'one')).text).toBe('done');
    await clock.advance(10 * 60 * 1000);
    expect((await a.send('spender', 'two')).text).toBe('done');
    await clock.advance(5 * 60 * 1000);

    // The hour is spent on both nodes: it frees when b's 3,000 leave it, 45 minutes from now.
    expectRefused(await refusalOf(b.send('spender', 'three')), '6,000', first + HOUR_MS, 45);
    expectRefused(await refusalOf(a.send('spender', 'three')), '6,000', first + HOUR_MS, 45);
    expect(server.requests).toHaveLength(2);

    // Once b's spending has left the window, either node calls the model again.
    await clock.advance(45 * 60 * 1000);
    expect((await b.send('spender', 'four')).text).toBe('done');
    expect(server.requests).toHaveLength(3);
  }, 30_000);

  it("stops a turn on one node at its next model call once the other node's spending fills the hour", async () => {
    const { url } = await postgres.createDatabase();
    const clock = createFakeClock();
    const a = await nodeKernel(url, 'node-a', clock);
    await a.spawn(manifest(spender('max_cost_per_hour = 0.04')));
    const b = await nodeKernel(url, 'node-b', clock);
    server.script([reply, reply, listing, listing, listing]);

    // $0.015 on b, then $0.015 on a: $0.03 of the $0.04.
    expect((await b.send('spender', 'one')).text).toBe('done');
    expect((await a.send('spender', 'two')).text).toBe('done');
    // A node reads an agent's hour from the log at most once a second: b's next read sees a's spending.
    await clock.advance(QUOTA_READ_EVERY_MS);
    // b's next turn starts with $0.01 left: its first call takes it to $0.045, and its second is refused.
    const refusal = await refusalOf(b.send('spender', 'keep listing'));
    expect(refusal).toBeInstanceOf(QuotaExceededError);
    expect((refusal as QuotaExceededError).message).toContain('agent "spender" has used $0.0450 of its $0.04 USD per hour;');
    expect((refusal as QuotaExceededError).details).toMatchObject({ budget: '[resources].max_cost_per_hour', limit: 0.04 });
    expect(server.requests).toHaveLength(3);
  }, 30_000);

  it('says when the hour frees however many of its oldest calls must leave it', async () => {
    const { url } = await postgres.createDatabase();
    const clock = createFakeClock();
    const a = await nodeKernel(url, 'node-a', clock);
    await a.spawn(manifest(spender('max_tokens_per_hour = 5000')));
    // Another node's 200 calls of 100 tokens, one every 15 s: 20,000 tokens, of which 15,001 must leave the hour.
    const other = await openPostgresStore({ url });
    const agentId = a.get('spender').id;
    const first = clock.now();
    for (let call = 0; call < 200; call += 1) {
      await other.usage.record({ agentId, at: first + call * 15_000, model: 'openai/gpt-4o', inputTokens: 90, outputTokens: 10, costUsd: 0 });
    }
    await other.close();
    await clock.advance(50 * 60 * 1000);

    // The 151st call leaves the hour at 37 min 30 s past its start plus an hour: in 48 min.
    expectRefused(await refusalOf(a.send('spender', 'one')), '20,000', first + 150 * 15_000 + HOUR_MS, 48);
    expect(server.requests).toHaveLength(0);
  }, 30_000);

  it('counts the calls of a turn under way on the node before its commit writes them, and once after it', async () => {
    const { url } = await postgres.createDatabase();
    const clock = createFakeClock();
    const a = await nodeKernel(url, 'node-a', clock);
    await a.spawn(manifest(spender('max_tokens_per_hour = 5000')));
    server.script([listing, listing, listing]);

    // The turn's third call is refused: its two calls before (6,000 tokens) are not in the usage log yet.
    const startedAt = clock.now();
    expectRefused(await refusalOf(a.send('spender', 'work')), '6,000', startedAt + HOUR_MS, 60);
    expect(server.requests).toHaveLength(2);
    // The turn's commit wrote them: counted once, from the log, on this node and on another.
    const b = await nodeKernel(url, 'node-b', clock);
    expectRefused(await refusalOf(a.send('spender', 'more')), '6,000', startedAt + HOUR_MS, 60);
    expectRefused(await refusalOf(b.send('spender', 'more')), '6,000', startedAt + HOUR_MS, 60);
    expect(server.requests).toHaveLength(2);
  }, 30_000);
});
