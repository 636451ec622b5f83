/**
 * `POST /api/agents/{agent}/turn/cancel` on a node of a cluster whose journal holds the session's turn
 * running and not here (decision 0059, amended): the refusals that say to try again carry `Retry-After`.
 * The node's kernel is on a SQLite store whose journal says which node holds the turn's lease.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import { ConfigSchema } from '../../src/config/index.ts';
import type { Store } from '../../src/contracts/index.ts';
import { createHttpApp, type RunningHttpServer, startHttpServer } from '../../src/http/index.ts';
import { createUuidGenerator, type Kernel } from '../../src/kernel/index.ts';
import { RESUMING_HERE_POLL_MS } from '../../src/kernel/turn-followed-elsewhere.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { openSqliteStore, type SqliteStore } from '../../src/store/index.ts';
import { buildKernel, manifest } from '../support/test-kernel.ts';
import { waitFor } from '../support/wait-for.ts';

/** This node's lease on the turns it runs: a turn whose node stopped is taken over within it, and a second. */
const LEASE_MS = 3_000;

let clock: FakeClock;
let store: SqliteStore;
let kernel: Kernel;
let server: RunningHttpServer;
/** The node the journal leases the session's running turn to; which of them answer now. */
let holder: string;
let alive: Set<string>;

beforeEach(async () => {
  clock = createFakeClock();
  store = openSqliteStore({ path: ':memory:' });
  holder = 'node-a';
  alive = new Set();
  const runningOn: Store['turns']['runningOn'] = async (agentId, conversation) => {
    const turn = await store.turns.runningOn(agentId, conversation);
    return turn === undefined ? undefined : { ...turn, nodeId: holder };
  };
  const turns = new Proxy(store.turns, { get: (target, key) => (key === 'runningOn' ? runningOn : (Reflect.get(target, key) as unknown)) });
  kernel = buildKernel({
    store: new Proxy(store, { get: (target, key) => (key === 'turns' ? turns : (Reflect.get(target, key) as unknown)) }),
    clock,
    ids: createUuidGenerator(),
    logger: createSilentLogger(),
    node: {
      id: 'node-b',
      find: (id) => Promise.resolve(alive.has(id) ? { name: id, url: `http://${id}.example:4200` } : undefined),
      othersAlive: () => Promise.resolve(true),
      leasesTurns: true,
      turnLeaseMs: LEASE_MS,
    },
  });
  await kernel.boot();
  const agent = await kernel.spawn(manifest('name = "clerk"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n'));
  // A turn of the clerk's main session another node recorded: running, and not in this node's memory.
  await store.turns.open({
    id: 't1',
    agentId: agent.id,
    sessionId: agent.session_id,
    conversation: null,
    request: { message: 'place the order', caller: { kind: 'owner' } },
    idempotencyKey: null,
    receivedAt: clock.now(),
  });
  const app = createHttpApp({ kernel, config: ConfigSchema.parse({}), env: {}, clock, logger: createSilentLogger() });
  server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
});

afterEach(async () => {
  await server.close();
  await kernel.shutdown();
  await store.close();
});

/** Asks this node to cancel the clerk's turn, moving its clock on each time the cancel waits for the turn to run here. */
async function cancel(): Promise<Response> {
  const idle = clock.pending();
  let answer: Response | undefined;
  const asked = fetch(`${server.url}/api/agents/clerk/turn/cancel`, { method: 'POST' }).then((response) => (answer = response));
  for (;;) {
    await waitFor('the cancel to answer, or to wait', () => answer !== undefined || clock.pending() > idle);
    if (answer !== undefined) return asked;
    await clock.advance(RESUMING_HERE_POLL_MS);
  }
}

describe('a cancel of a turn this node does not run, on a cluster', () => {
  it('answers a turn this node took over and is still resuming with 409 TURN_ELSEWHERE and Retry-After', async () => {
    holder = 'node-b';
    const answer = await cancel();
    expect(answer.status).toBe(409);
    expect(answer.headers.get('retry-after')).toBe('2');
    expect(await answer.json()).toMatchObject({
      error: { code: 'TURN_ELSEWHERE', message: expect.stringContaining('is resuming on this node') as string, details: { resuming: true } },
    });
  });

  it('answers a cancel waiting for a turn this node took over, as this node shuts down, with 409 TURN_ELSEWHERE and Retry-After: once its lease lapsed and another node took it over', async () => {
    holder = 'node-b';
    const idle = clock.pending();
    const answer = fetch(`${server.url}/api/agents/clerk/turn/cancel`, { method: 'POST' });
    await waitFor('the cancel to wait for the turn to resume here', () => clock.pending() > idle);
    await kernel.shutdown();
    const refused = await answer;
    expect(refused.status).toBe(409);
    expect(refused.headers.get('retry-after')).toBe(String(LEASE_MS / 1000 + 1));
    expect(await refused.json()).toMatchObject({
      error: { code: 'TURN_ELSEWHERE', message: expect.stringContaining('this node is shutting down') as string },
    });
  });

  it('answers a turn of a node that no longer answers with Retry-After: once its lease lapsed and another node took it over', async () => {
    const answer = await cancel();
    expect(answer.status).toBe(409);
    expect(answer.headers.get('retry-after')).toBe(String(LEASE_MS / 1000 + 1));
    expect(await answer.json()).toMatchObject({
      error: { code: 'TURN_ELSEWHERE', message: expect.stringContaining('on a node that no longer answers') as string },
    });
  });

  it('names the node that runs the turn, to cancel it there, without Retry-After: asking this node again changes nothing', async () => {
    alive.add('node-a');
    const answer = await cancel();
    expect(answer.status).toBe(409);
    expect(answer.headers.get('retry-after')).toBeNull();
    expect(await answer.json()).toMatchObject({
      error: { code: 'TURN_ELSEWHERE', message: expect.stringContaining('runs on node "node-a" (http://node-a.example:4200): cancel it there') as string },
    });
  });
});
