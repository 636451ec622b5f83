import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createTurnLeaseQueue } from '../../src/cluster/turn-leases.ts';
import type { Tool } from '../../src/contracts/index.ts';
import { isLoomError, QuotaExceededError, StoreError, toErrorResponse } from '../../src/errors/index.ts';
import { type Kernel, type MeteredCall, observeModelCalls } from '../../src/kernel/index.ts';
import { QUOTA_READ_EVERY_MS } from '../../src/kernel/quota-tracker.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { type PostgresStore } from '../../src/store/index.ts';
import { agentListTool } from '../../src/tools/builtin/agent-list-tool.ts';
import { manifest } from '../support/test-kernel.ts';
import { type ClusterNode, openClusterNode } from '../support/cluster-node.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';
import { waitFor } from '../support/wait-for.ts';

// Two nodes on one database holding the same family of agents: a lifetime cap
// ([capabilities].econ_spend) counts what the family spent through either node, without a restart.

const postgres = useTestPostgres();
const server = useScriptedModelServer();
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A node on the database at `url`, with a tool that runs, so that a turn calling it is journaled (its result committed) and can be taken over. */
async function node(url: string, id: string): Promise<ClusterNode> {
  const opened = await openClusterNode(url, id, { tools: [agentListTool as unknown as Tool<never>] });
  closers.push(opened.close);
  return opened;
}

async function nodeKernel(url: string, id: string): Promise<Kernel> {
  return (await node(url, id)).kernel;
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

  it('reads the totals of the capped families a call draws from in one statement, as the database keeps them with the usage', async () => {
    const { url } = await postgres.createDatabase();
    const a = await node(url, 'node-a');
    await a.kernel.spawn(manifest(boss()));
    await a.kernel.spawn(manifest(kid('kid-a')), { parent: 'boss' });
    const [bossId, kidId] = [a.kernel.get('boss').id, a.kernel.get('kid-a').id];
    const reads: string[][] = [];
    const familyTotals = a.store.usage.familyTotals.bind(a.store.usage);
    a.store.usage.familyTotals = (families) => {
      reads.push(families.map((family) => family.agentId));
      return familyTotals(families);
    };
    const totals = a.store.usage.totals.bind(a.store.usage);
    let summed = 0;
    a.store.usage.totals = (options) => {
      if (options.descendants !== undefined) summed += 1;
      return totals(options);
    };
    server.script([reply, reply]);

    expect((await a.kernel.send('kid-a', 'one')).text).toBe('done');
    expect((await a.kernel.send('kid-a', 'two')).text).toBe('done');

    // One read before each call: kid-a's family and boss's together, and no sum of their rows.
    expect(reads).toEqual([
      [kidId, bossId],
      [kidId, bossId],
    ]);
    expect(summed).toBe(0);
    // Both commits counted in boss's family, as the sum of its rows gives it.
    const family = { agentId: bossId, descendants: `${bossId}/` };
    expect(await familyTotals([family])).toEqual([{ inputTokens: 4000, outputTokens: 2000, costUsd: 0.03, calls: 2 }]);
    expect(await totals({ since: 0, ...family })).toEqual({ inputTokens: 4000, outputTokens: 2000, costUsd: 0.03, calls: 2 });
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

  it('counts a turn another node took over once on each node: on the node that lost it, and beside another turn of the family on the node that finished it', async () => {
    const { url } = await postgres.createDatabase();
    const a = await node(url, 'node-a');
    // boss's cap lets the family's turns below make their calls, and refuses one more once $0.03 is written.
    await a.kernel.spawn(manifest(boss().replace('econ_spend = 0.035', 'econ_spend = 0.038')));
    await a.kernel.spawn(manifest(`name = "kid-a"\n${model()}[resources]\nmax_tokens_per_hour = 6000\n[capabilities]\ntools = ["agent_list"]\n`), {
      parent: 'boss',
    });
    await a.kernel.spawn(manifest(`name = "kid-b"\n${model()}[capabilities]\ntools = ["agent_list"]\n`), { parent: 'boss' });
    const b = await node(url, 'node-b');
    const listing = { toolCalls: [{ name: 'agent_list', input: {} }], usage: { inputTokens: 2000, outputTokens: 1000 } };

    // Node A: kid-a's turn makes a call ($0.015, 3,000 tokens) and is in its second when A stops renewing its lease.
    const late = Promise.withResolvers<void>();
    server.script([listing, { ...reply, text: 'said too late', gate: late.promise }]);
    const lost = refusalOf(a.kernel.send('kid-a', 'work'));
    await waitFor('node A to make the turn its second call', () => server.requests.length === 2);
    // Node B: kid-b's turn makes a call, not written yet, and waits in its second.
    const held = Promise.withResolvers<void>();
    server.script([listing, { ...reply, gate: held.promise }]);
    const other = b.kernel.send('kid-b', 'other work');
    await waitFor("kid-b's second call on node B", () => server.requests.length === 4);

    // A's lease lapses; B takes the turn over, resumes it from its journal and commits it: A's first call and B's, $0.03.
    const database = url.slice(url.lastIndexOf('/') + 1);
    await postgres.query(
      "UPDATE turn_journal SET lease_until = (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1000 WHERE node_id = 'node-a'",
      [],
      database,
    );
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    closers.push(() => pool.end());
    const [taken, ...none] = await createTurnLeaseQueue(pool, 'node-b', 60_000).takeOver();
    expect(none).toEqual([]);
    server.script([reply]);
    expect(await b.kernel.resumeTurn(taken?.id ?? '')).toBe(true);
    await waitFor('node B to commit the turn', async () => (await b.store.turns.get(taken?.id ?? '')) === undefined);
    expect(server.requests).toHaveLength(5);

    // On B the family has spent what the log holds and what kid-b's turn spent there: $0.045, not $0.03.
    const onB = await refusalOf(b.kernel.send('boss', 'and you?'));
    expect((onB as QuotaExceededError).message).toContain(
      'agent "boss" may spend $0.038 in its life, with the agents it spawns, and has spent $0.045 (with $0.01',
    );

    // A's commit is refused; A counts what the log holds, the calls it made on the turn no more: $0.03, not $0.06.
    late.resolve();
    const refused = await lost;
    expect(isLoomError(refused) ? refused.code : refused).toBe('TURN_TAKEN_OVER');
    const onA = await refusalOf(a.kernel.send('boss', 'and you?'));
    expect((onA as QuotaExceededError).message).toContain('agent "boss" may spend $0.038 in its life, with the agents it spawns, and has spent $0.03;');
    // kid-a's hour too, read again a second later: 6,000 tokens, not 12,000.
    await a.clock.advance(QUOTA_READ_EVERY_MS);
    const hour = await refusalOf(a.kernel.send('kid-a', 'more'));
    expect((hour as QuotaExceededError).message).toContain('agent "kid-a" has used 6,000 of its 6,000 tokens per hour');
    expect(server.requests).toHaveLength(5);

    held.resolve();
    expect((await other).text).toBe('done');
  }, 60_000);

  /** Fails `store`'s next commit of a turn (a session write that closes its journal) once, as a pooled connection reset during it would. */
  function failNextCommit(store: PostgresStore): void {
    const { sessions } = store;
    const [save, append] = [sessions.save.bind(sessions), sessions.append.bind(sessions)];
    let failed = false;
    const once = (closes: boolean): void => {
      if (failed || !closes) return;
      failed = true;
      throw new StoreError('cannot save the session: Connection terminated unexpectedly', { isRetryable: true });
    };
    sessions.save = async (session, options) => {
      once(options?.closeTurn !== undefined);
      return save(session, options);
    };
    sessions.append = async (id, messages, options) => {
      once(options.closeTurn !== undefined);
      return append(id, messages, options);
    };
  }

  for (const usageToo of [false, true])
    it(`counts the calls of a turn whose commit failed on the node${usageToo ? ', whose usage could not be written alone either,' : ', and writes them once its journal is closed,'} and refuses the call past the family's cap`, async () => {
      const { url } = await postgres.createDatabase();
      const a = await node(url, 'node-a');
      await a.kernel.spawn(manifest(boss()));
      await a.kernel.spawn(manifest(kid('kid-a')), { parent: 'boss' });
      await a.kernel.spawn(manifest(kid('kid-b')), { parent: 'boss' });
      const kidA = a.kernel.get('kid-a').id;
      // kid-a's turn calls a tool (its journal is written) and answers: $0.03; its commit fails once, the database up.
      const listing = { toolCalls: [{ name: 'agent_list', input: {} }], usage: { inputTokens: 2000, outputTokens: 1000 } };
      server.script([listing, reply]);
      failNextCommit(a.store);
      const record = a.store.usage.record.bind(a.store.usage);
      if (usageToo)
        a.store.usage.record = () => Promise.reject(new StoreError('cannot record usage: Connection terminated unexpectedly', { isRetryable: true }));

      const failure = await refusalOf(a.kernel.send('kid-a', 'work'));
      expect(isLoomError(failure) ? failure.code : failure).toBe('STORE_FAILURE');
      expect(server.requests).toHaveLength(2);
      // Its journal was closed: no node resumes the turn.
      expect(await a.store.turns.running()).toEqual([]);
      // Its calls are in the usage log, written alone; or, when that failed too, still counted on this node.
      const written = await a.store.usage.list({ agentId: kidA });
      expect(written.map((usage) => usage.costUsd)).toEqual(usageToo ? [] : [0.015, 0.015]);
      a.store.usage.record = record;
      await expectRefusedByBoss(a.kernel.send('kid-b', 'more'), 'kid-b');
      expect(server.requests).toHaveLength(2);
    }, 30_000);

  it("fails a turn with STORE_FAILURE (503, Retry-After), not as the model's failure, when the family's total cannot be read from the log", async () => {
    const { url } = await postgres.createDatabase();
    const a = await node(url, 'node-a');
    await a.kernel.spawn(manifest(boss()));
    // The database stops answering the family's total (the read before each call), as when it restarts.
    a.store.usage.familyTotals = (families) =>
      Promise.reject(
        new StoreError(`cannot total usage of agent "${families[0]?.agentId ?? ''}" and its descendants: the server is shutting down or starting; try again`, {
          isRetryable: true,
        }),
      );
    const calls: MeteredCall[] = [];
    const stop = observeModelCalls((call) => calls.push(call));
    closers.push(() => Promise.resolve(stop()));

    let ended = false;
    const failure = refusalOf(a.kernel.send('boss', 'hello')).finally(() => (ended = true));
    // A retry would wait on the node's clock: it is moved on until the turn ends.
    while (!ended) await a.clock.advance(1_000);
    const error = await failure;
    expect(isLoomError(error) ? [error.code, error.message] : error).toEqual([
      'STORE_FAILURE',
      `cannot total usage of agent "${a.kernel.get('boss').id}" and its descendants: the server is shutting down or starting; try again`,
    ]);
    const response = toErrorResponse(error, a.clock.now(), createSilentLogger());
    expect([response.status, response.headers['retry-after']]).toEqual([503, '1']);
    // One call, refused before it was sent: not tried again, and the model never asked.
    expect(calls.map((call) => call.outcome)).toEqual(['refused']);
    expect(server.requests).toHaveLength(0);
  }, 30_000);

  it("does not refuse a call on a commit of the node's own that landed while the family's total was read, and so is in that total twice", async () => {
    const { url } = await postgres.createDatabase();
    const a = await node(url, 'node-a');
    await a.kernel.spawn(manifest(boss().replace('econ_spend = 0.035', 'econ_spend = 0.03')));
    await a.kernel.spawn(manifest(`name = "kid-a"\n${model()}`), { parent: 'boss' });
    await a.kernel.spawn(manifest(`name = "kid-b"\n${model()}`), { parent: 'boss' });
    const answer = Promise.withResolvers<void>();
    server.script([{ ...reply, gate: answer.promise }, reply]);
    const first = a.kernel.send('kid-a', 'one');
    await waitFor("kid-a's call", () => server.requests.length === 1);

    // The next read of boss's family total is answered once kid-a's turn has committed its $0.015, which it then holds.
    const familyTotals = a.store.usage.familyTotals.bind(a.store.usage);
    const bossId = a.kernel.get('boss').id;
    let held: Promise<unknown> | undefined = first;
    let reading = false;
    a.store.usage.familyTotals = async (families) => {
      const wait = families.some((family) => family.agentId === bossId) ? held : undefined;
      if (wait !== undefined) {
        held = undefined;
        reading = true;
        await wait;
      }
      return familyTotals(families);
    };
    const second = a.kernel.send('kid-b', 'two');
    await waitFor("the read of the family's total before kid-b's call", () => reading);
    answer.resolve();

    // $0.015 spent and about $0.0102 more fit boss's $0.03; counted twice, $0.03 would not.
    expect((await first).text).toBe('done');
    expect((await second).text).toBe('done');
    expect(server.requests).toHaveLength(2);
  }, 30_000);
});
