import { describe, expect, it } from 'vitest';
import { UNKNOWN_OUTCOME_TEXT } from '../../src/runtime/index.ts';
import { useTurnCluster } from '../support/turn-cluster.ts';
import { clusterOf, type DaemonNode, waitFor } from './daemons.ts';
import { copies, type Session } from '../support/session-copies.ts';

// A turn running on a node that is SIGKILLed is taken over by another node once its lease lapses
// (decision 0061) and finished there from its journal: two daemons in separate processes on one
// PostgreSQL database, a tool whose side effect lands on an HTTP server of the test's.

/** The lease the nodes hold their turns with, in seconds: short, so that a takeover comes soon. */
const LEASE_SECONDS = 2;

const cluster = useTurnCluster('loom-failover-', LEASE_SECONDS);

const post = (url: string, path: string, body: string, type = 'application/json'): Promise<Response> =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': type }, body, signal: AbortSignal.timeout(30_000) });

const order = (path: string): { name: string; input: Record<string, unknown> } => ({
  name: 'http_request',
  input: { url: `${cluster.world.url}${path}`, method: 'POST', body: 'one order' },
});

/** The messages of a node's JSON log lines so far. */
function logOf(node: DaemonNode): string[] {
  return node
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .flatMap((line) => {
      try {
        const record = JSON.parse(line) as { msg?: unknown };
        return typeof record.msg === 'string' ? [record.msg] : [];
      } catch {
        return [];
      }
    });
}

/** Two nodes on a fresh database, the clerk spawned on A, and "place the order" sent to A (its reply not awaited). */
async function startTurnOnA(): Promise<{ a: DaemonNode; b: DaemonNode; aId: string }> {
  const { a, b } = await cluster.twoNodes(['turn-a', 'turn-b']);
  void post(a.url, '/api/agents/clerk/messages', JSON.stringify({ message: 'place the order' })).catch(() => undefined);
  return { a, b, aId: (await clusterOf(a)).self };
}

/** SIGKILLs the node; answers when it died. */
async function kill(node: DaemonNode): Promise<number> {
  node.child.kill('SIGKILL');
  await node.exited;
  return Date.now();
}

/** The clerk's session on `node` once its turn is committed. */
const finishedSession = (node: DaemonNode): Promise<Session> =>
  waitFor('the turn to be committed', async () => {
    const session = (await (await fetch(`${node.url}/api/agents/clerk/session`)).json()) as Session;
    return session.running === null && session.messages.length > 0 ? session : undefined;
  });

describe('a node SIGKILLed mid-turn on PostgreSQL', () => {
  it('after a tool result, in the next model call: the other node takes the turn over once its lease lapses and finishes it, the tool run once', async () => {
    cluster.model.script([{ toolCalls: [order('/place')] }, { text: 'never said', gate: new Promise<never>(() => undefined) }]);
    const { a, b, aId } = await startTurnOnA();
    await waitFor('the model call after the tool result', () => cluster.model.requests.length >= 2);
    cluster.model.script([{ text: 'The order is placed.' }]);
    const diedAt = await kill(a);

    await waitFor('node B to ask the model the next step', () => cluster.model.requests.length >= 3, { ms: 25_000 });
    const failoverMs = Date.now() - diedAt;
    const session = await finishedSession(b);
    const took = logOf(b).filter((message) => message.startsWith('took over turn'));
    expect(took).toHaveLength(1);
    expect(took[0]).toMatch(new RegExp(`^took over turn "[0-9a-f-]{36}" from node ${aId}: its lease lapsed; resuming it from its journal$`));
    // Within the lease (and the second a node takes to look), measured from A's death.
    expect(failoverMs).toBeLessThan(LEASE_SECONDS * 1000 + 5_000);
    // The side effect happened once; the model was not asked again what it had answered.
    expect(cluster.world.hits).toEqual(['POST /place']);
    expect(cluster.model.requests).toHaveLength(3);
    expect(JSON.stringify(cluster.model.requests[2]?.body)).toContain('the order is placed');
    expect(copies(session, 'user', 'place the order')).toBe(1);
    expect(copies(session, 'assistant', 'http_request')).toBe(1);
    expect(copies(session, 'tool', 'the order is placed')).toBe(1);
    expect(copies(session, 'assistant', 'The order is placed.')).toBe(1);
    expect(await cluster.nodes.stop(b)).toBe(0);
  }, 90_000);

  it('during a call that is not idempotent: the other node does not run it again, and its model is told the outcome is unknown', async () => {
    cluster.model.script([{ toolCalls: [order('/hold')] }, { text: 'I will check whether the order went through.' }]);
    const { a, b } = await startTurnOnA();
    await waitFor('the tool call to reach the world', () => cluster.world.hits.length >= 1);
    await kill(a);

    const session = await finishedSession(b);
    expect(cluster.world.hits).toEqual(['POST /hold']);
    expect(cluster.model.requests).toHaveLength(2);
    expect(JSON.stringify(cluster.model.requests[1]?.body)).toContain('it may or may not have run');
    expect(copies(session, 'user', 'place the order')).toBe(1);
    expect(copies(session, 'tool', UNKNOWN_OUTCOME_TEXT.slice(0, 40))).toBe(1);
    expect(copies(session, 'assistant', 'I will check whether the order went through.')).toBe(1);
    expect(await cluster.nodes.stop(b)).toBe(0);
  }, 90_000);
});
