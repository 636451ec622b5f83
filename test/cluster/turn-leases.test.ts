import pg from 'pg';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTurnLeaseQueue, createTurnLeases } from '../../src/cluster/turn-leases.ts';
import type { TurnJournalOpen } from '../../src/contracts/index.ts';
import { isLoomError, toErrorResponse } from '../../src/errors/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { openPostgresStore, type PostgresStore } from '../../src/store/index.ts';
import { createAgentIn, sessionOf } from '../store/contract/fixtures.ts';
import { migratedTemplate, useTestPostgres } from '../support/use-test-postgres.ts';
import { waitFor } from '../support/wait-for.ts';

// Turn leases on PostgreSQL (decision 0061), two nodes in one process: each a store whose origin
// is its node id, and the lease statements of that node. A lease lapses when the test moves its
// expiry into the past (the database's clock is the lease's), not by waiting.

const postgres = useTestPostgres();
let template: string;
let url: string;
const stores: PostgresStore[] = [];
const pools: pg.Pool[] = [];

beforeAll(async () => {
  template = await migratedTemplate(postgres);
}, 120_000);

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const pool of pools.splice(0)) await pool.end();
});

/** A node: its store (recording turns under its id) and its lease statements. */
async function node(id: string): Promise<{ store: PostgresStore; leases: ReturnType<typeof createTurnLeaseQueue> }> {
  const store = await openPostgresStore({ url, origin: id, turnLeaseMs: 60_000 });
  stores.push(store);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  pools.push(pool);
  return { store, leases: createTurnLeaseQueue(pool, id, 60_000) };
}

const turn = (id: string, agentId: string): TurnJournalOpen => ({
  id,
  agentId,
  sessionId: `session-${agentId}`,
  conversation: null,
  request: { message: 'place the order', caller: { kind: 'owner' } },
  idempotencyKey: null,
  receivedAt: 1_000,
});

async function lease(turnId: string): Promise<{ node_id: string | null; lapsed: boolean } | undefined> {
  const result = await postgres.query(
    'SELECT node_id, lease_until < (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS lapsed FROM turn_journal WHERE id = $1',
    [turnId],
    url.slice(url.lastIndexOf('/') + 1),
  );
  return result.rows[0] as { node_id: string | null; lapsed: boolean } | undefined;
}

/** The node's lease on the turn lapses: its expiry is moved a second into the past. */
async function lapse(turnId: string): Promise<void> {
  await postgres.query(
    'UPDATE turn_journal SET lease_until = (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1000 WHERE id = $1',
    [turnId],
    url.slice(url.lastIndexOf('/') + 1),
  );
}

/** The error code a promise is rejected with. */
async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  return isLoomError(error) ? `${error.code}: ${error.message}` : String(error);
}

describe('turn leases on PostgreSQL', () => {
  it('a turn is recorded leased to its node, which renews it; another node takes nothing over while the lease holds', async () => {
    url = (await postgres.createDatabase({ template })).url;
    const a = await node('node-a');
    const b = await node('node-b');
    await createAgentIn(a.store, 'clerk');
    await a.store.turns.step('t1', [{ kind: 'model', at: 1_001, data: {} }], { open: turn('t1', 'clerk') });
    expect(await lease('t1')).toEqual({ node_id: 'node-a', lapsed: false });
    expect(await b.leases.takeOver()).toEqual([]);
    // Its node renews it; a node renews only what it holds.
    await lapse('t1');
    expect(await b.leases.renew(['t1'])).toEqual(new Set());
    expect(await a.leases.renew(['t1', 'not-recorded-yet'])).toEqual(new Set(['t1']));
    expect(await lease('t1')).toEqual({ node_id: 'node-a', lapsed: false });
    expect(await b.leases.takeOver()).toEqual([]);
  });

  it('once the lease lapses exactly one of two nodes takes the turn over; the node that lost it can neither record a step nor commit it', async () => {
    url = (await postgres.createDatabase({ template })).url;
    const a = await node('node-a');
    const b = await node('node-b');
    const c = await node('node-c');
    const agent = await createAgentIn(a.store, 'clerk');
    await a.store.turns.step('t1', [{ kind: 'tool-start', at: 1_001, data: { toolCallId: 'c1', idempotent: false } }], { open: turn('t1', 'clerk') });
    await lapse('t1');

    // Two nodes look at once: one takes it, the other finds nothing.
    const [byB, byC] = await Promise.all([b.leases.takeOver(), c.leases.takeOver()]);
    const taken = [...byB.map((entry) => ({ ...entry, by: 'node-b' })), ...byC.map((entry) => ({ ...entry, by: 'node-c' }))];
    expect(taken).toHaveLength(1);
    expect(taken[0]).toMatchObject({ id: 't1', previous: 'node-a' });
    const winner = taken[0]?.by === 'node-b' ? b : c;
    expect((await lease('t1'))?.node_id).toBe(taken[0]?.by);

    // Node A (its renewals late) no longer holds it: its renewal answers nothing, and its writes are refused.
    expect(await a.leases.renew(['t1'])).toEqual(new Set());
    expect(await codeOf(a.store.turns.step('t1', [{ kind: 'tool-result', at: 1_002, data: { toolCallId: 'c1', text: 'placed' } }]))).toBe(
      `TURN_TAKEN_OVER: cannot record a step of turn "t1": node ${taken[0]?.by ?? ''} took it over after this node's lease on it lapsed; it finishes there`,
    );
    const commit = a.store.sessions.save(sessionOf(agent, { messages: [{ role: 'user', content: 'place the order' }], updatedAt: 2_000 }), {
      closeTurn: { turnId: 't1', outcome: { status: 'finished' } },
    });
    expect(await codeOf(commit)).toMatch(/^TURN_TAKEN_OVER: cannot commit turn "t1": node node-[bc] took it over/);
    // Its caller is answered 409, naming the node that holds the turn.
    const refused = toErrorResponse(await commit.catch((error: unknown) => error), Date.now(), createSilentLogger());
    expect([refused.status, refused.body.error.code]).toEqual([409, 'TURN_TAKEN_OVER']);
    expect((await a.store.sessions.get(agent.sessionId))?.messages).toEqual([]);
    expect((await a.store.turns.get('t1'))?.steps).toHaveLength(1);

    // The node that took it over records its steps and commits it.
    await winner.store.turns.step('t1', [{ kind: 'tool-result', at: 1_003, data: { toolCallId: 'c1', text: 'unknown' } }]);
    await winner.store.sessions.save(
      sessionOf(agent, {
        messages: [
          { role: 'user', content: 'place the order' },
          { role: 'assistant', content: 'done' },
        ],
        updatedAt: 3_000,
      }),
      { closeTurn: { turnId: 't1', outcome: { status: 'finished' } } },
    );
    expect(await winner.store.turns.get('t1')).toBeUndefined();
    expect((await b.store.sessions.get(agent.sessionId))?.messages).toHaveLength(2);

    // Node A's commit arriving after the turn ended there is refused too, by either way a turn
    // commits (the one statement at a revision, and the append a conflict falls back to): the
    // session holds the turn once.
    const late = [{ role: 'assistant', content: 'placed (late)' }];
    const atRevision = a.store.sessions.append(agent.sessionId, late, {
      expectedRevision: 1,
      updatedAt: 4_000,
      closeTurn: { turnId: 't1', outcome: { status: 'finished' } },
    });
    expect(await codeOf(atRevision)).toMatch(/^TURN_TAKEN_OVER: cannot commit turn "t1": it is no longer running on this node/);
    const appended = a.store.sessions.append(agent.sessionId, late, { updatedAt: 4_000, closeTurn: { turnId: 't1', outcome: { status: 'finished' } } });
    expect(await codeOf(appended)).toMatch(/^TURN_TAKEN_OVER: cannot commit turn "t1": it is no longer running on this node/);
    expect((await a.store.sessions.get(agent.sessionId))?.messages).toEqual([
      { role: 'user', content: 'place the order' },
      { role: 'assistant', content: 'done' },
    ]);
  });

  it('a turn no node holds (recorded before leases, or copied from SQLite) is taken over at once, oldest first', async () => {
    url = (await postgres.createDatabase({ template })).url;
    const a = await node('node-a');
    const b = await node('node-b');
    await createAgentIn(a.store, 'clerk');
    await a.store.turns.open({ ...turn('late', 'clerk'), receivedAt: 2_000 });
    await a.store.turns.open({ ...turn('early', 'clerk'), receivedAt: 1_000 });
    await postgres.query('UPDATE turn_journal SET node_id = NULL, lease_until = NULL', [], url.slice(url.lastIndexOf('/') + 1));
    expect(await b.leases.takeOver()).toEqual([
      { id: 'early', previous: null },
      { id: 'late', previous: null },
    ]);
    expect(await a.leases.takeOver()).toEqual([]);
  });

  it('a node whose own lease lapsed while its turn still runs there (its renewals failed a while) takes the lease back but never resumes the turn a second time', async () => {
    url = (await postgres.createDatabase({ template })).url;
    const a = await node('node-a');
    await createAgentIn(a.store, 'clerk');
    await a.store.turns.step('t1', [{ kind: 'model', at: 1_001, data: {} }], { open: turn('t1', 'clerk') });
    await lapse('t1');
    const resumed: string[] = [];
    const leases = createTurnLeases({
      url,
      target: 'test',
      nodeId: 'node-a',
      logger: createSilentLogger(),
      leaseMs: 60_000,
      held: () => ['t1'],
      resume: (turnId) => (resumed.push(turnId), Promise.resolve(true)),
    });
    try {
      leases.start();
      await waitFor('node A to take its lease back', async () => (await lease('t1'))?.lapsed === false);
      expect((await lease('t1'))?.node_id).toBe('node-a');
      expect(resumed).toEqual([]);
    } finally {
      await leases.stop();
    }
  });
});
