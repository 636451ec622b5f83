import { afterEach, describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import { QuotaExceededError } from '../../src/errors/index.ts';
import { createUuidGenerator, type Kernel } from '../../src/kernel/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createCostCatalog, createModelResolver } from '../../src/models/index.ts';
import { openPostgresStore } from '../../src/store/index.ts';
import { buildKernel, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';

// Two nodes on one database holding the same family of agents: a lifetime cap
// ([capabilities].econ_spend) counts what the family spent through either node, without a restart.

const postgres = useTestPostgres();
const server = useScriptedModelServer();
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A node's kernel on the database at `url` (its own pool), booted as a daemon on PostgreSQL boots it, its agents on the scripted model server. */
async function nodeKernel(url: string, id: string): Promise<Kernel> {
  const store = await openPostgresStore({ url });
  const kernel = buildKernel({
    store,
    clock: createFakeClock(),
    ids: createUuidGenerator(),
    logger: createSilentLogger(),
    runtime: {
      resolver: createModelResolver({ env: { OPENAI_API_KEY: 'test' } }),
      costs: createCostCatalog(),
      tools: [],
      env: {},
      workspaceOf: (agent) => `/tmp/loom-test-workspaces/${agent.name}`,
    },
    node: { id, find: () => Promise.resolve(undefined), othersAlive: () => Promise.resolve(true), leasesTurns: true },
  });
  await kernel.boot();
  closers.push(async () => {
    await kernel.shutdown();
    await store.close();
  });
  return kernel;
}

async function refusalOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

const model = (): string => `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\nmax_tokens = 1000\n`;
// A parent capped at $0.035 whose children may each spend as much: a call of 2,000 tokens in and
// 1,000 out of gpt-4o costs $0.015, and is estimated at about $0.0102 before it is sent.
const boss = (): string => `name = "boss"\n${model()}[capabilities]\nagent_spawn = true\ntools = ["agent_list"]\necon_spend = 0.035\n`;
const kid = (name: string): string => `name = "${name}"\n${model()}[capabilities]\ntools = ["agent_list"]\necon_spend = 0.035\n`;
const reply = { text: 'done', usage: { inputTokens: 2000, outputTokens: 1000 } };

/** The refusal of `caller`'s next model call by boss's cap, the family having spent $0.03. */
async function expectRefusedByBoss(send: Promise<unknown>, caller: string): Promise<void> {
  const refusal = await refusalOf(send);
  expect(refusal).toBeInstanceOf(QuotaExceededError);
  expect((refusal as QuotaExceededError).message).toContain(
    `agent "boss" may spend $0.035 in its life, with the agents it spawns, and has spent $0.03; the next model call of agent "${caller}" would cost about $0.01`,
  );
  expect((refusal as QuotaExceededError).message).toContain(
    `the cap is [capabilities].econ_spend in the manifest of agent "boss", which agent "${caller}" descends from`,
  );
  expect((refusal as QuotaExceededError).details).toMatchObject({ agent: caller, budget: '[capabilities].econ_spend', capOf: 'boss', limit: 0.035 });
}

describe('[capabilities].econ_spend across the nodes of a cluster', () => {
  it('refuses on one node the call that would take the family past its cap, counting what it spent on the other since, without a restart', async () => {
    const { url } = await postgres.createDatabase();
    const a = await nodeKernel(url, 'node-a');
    await a.spawn(manifest(boss()));
    await a.spawn(manifest(kid('kid-a')), { parent: 'boss' });
    await a.spawn(manifest(kid('kid-b')), { parent: 'boss' });
    const b = await nodeKernel(url, 'node-b');
    server.script([reply, reply, reply, reply]);

    // Node b spends first (it reads boss's account then), node a after it: $0.03 between them.
    expect((await b.send('kid-b', 'one')).text).toBe('done');
    expect((await a.send('kid-a', 'two')).text).toBe('done');

    // Another $0.0102 would pass boss's $0.035, on either node, through any agent of the family.
    await expectRefusedByBoss(b.send('kid-b', 'three'), 'kid-b');
    await expectRefusedByBoss(a.send('kid-b', 'three'), 'kid-b');
    await expectRefusedByBoss(b.send('kid-a', 'three'), 'kid-a');
    const own = await refusalOf(b.send('boss', 'and you?'));
    expect((own as QuotaExceededError).message).toContain('agent "boss" may spend $0.035 in its life, with the agents it spawns, and has spent $0.03;');
    expect(server.requests).toHaveLength(2);
  }, 30_000);

  it('counts the calls of a turn under way on the node before its commit writes them, and once after it', async () => {
    const { url } = await postgres.createDatabase();
    const a = await nodeKernel(url, 'node-a');
    await a.spawn(manifest(boss()));
    await a.spawn(manifest(kid('kid-a')), { parent: 'boss' });
    await a.spawn(manifest(kid('kid-b')), { parent: 'boss' });
    const listing = { toolCalls: [{ name: 'agent_list', input: {} }], usage: { inputTokens: 2000, outputTokens: 1000 } };
    server.script([listing, listing, listing]);

    // The turn's third call would pass the caps (kid-a's own refuses first): its two calls before are not in the usage log yet.
    const refusal = await refusalOf(a.send('kid-a', 'work'));
    expect(refusal).toBeInstanceOf(QuotaExceededError);
    expect((refusal as QuotaExceededError).message).toContain('agent "kid-a" may spend $0.035 in its life, with the agents it spawns, and has spent $0.03;');
    expect(server.requests).toHaveLength(2);
    // The turn's commit wrote them: counted once, from the log, on this node and on another.
    const b = await nodeKernel(url, 'node-b');
    await expectRefusedByBoss(a.send('kid-b', 'more'), 'kid-b');
    await expectRefusedByBoss(b.send('kid-b', 'more'), 'kid-b');
    expect(server.requests).toHaveLength(2);
  }, 30_000);
});
