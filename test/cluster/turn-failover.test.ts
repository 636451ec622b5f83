import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UNKNOWN_OUTCOME_TEXT } from '../../src/runtime/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { startScriptedModelServer, type ScriptedModelServer } from '../support/scripted-model-server.ts';
import { startTestPostgres, type TestPostgres } from '../support/postgres-server.ts';
import { clusterOf, type DaemonNode, DaemonNodes, waitFor } from './daemons.ts';
import { copies, type Session } from '../support/session-copies.ts';

// A turn running on a node that is SIGKILLed is taken over by another node once its lease lapses
// (decision 0061) and finished there from its journal: two daemons in separate processes on one
// PostgreSQL database, a tool whose side effect lands on an HTTP server of the test's.

/** The lease the nodes hold their turns with, in seconds: short, so that a takeover comes soon. */
const LEASE_SECONDS = 2;

let postgres: TestPostgres;
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let model: ScriptedModelServer;
let nodes: DaemonNodes;
/** The world the tool acts on: it counts requests, and holds those to `/hold` unanswered. */
let world: { server: Server; url: string; hits: { method: string; path: string }[]; held: ServerResponse[] };

beforeAll(async () => {
  dir = await makeTempDir('loom-failover-');
  postgres = await startTestPostgres();
}, 120_000);

afterAll(async () => {
  await postgres?.stop();
  await dir?.remove();
}, 60_000);

beforeEach(async () => {
  model = await startScriptedModelServer({ steps: [] });
  nodes = new DaemonNodes(dir.path, model.url);
  const hits: { method: string; path: string }[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    hits.push({ method: request.method ?? '', path: request.url ?? '' });
    request.resume();
    if (request.url === '/hold') held.push(response);
    else response.end('the order is placed');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  world = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, held };
});

afterEach(async (context) => {
  if (context.task.result?.state === 'fail')
    for (const node of nodes.started)
      process.stderr.write(`--- the last log lines of node "${node.name}":\n${node.output().split('\n').slice(-40).join('\n')}\n`);
  await nodes.stopAll();
  for (const response of world.held) response.destroy();
  await new Promise<void>((resolve) => world.server.close(() => resolve()));
  await model.close();
}, 30_000);

const post = (url: string, path: string, body: string, type = 'application/json'): Promise<Response> =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': type }, body, signal: AbortSignal.timeout(30_000) });

/** An agent that may call `http_request` on the world's server. */
const manifest = (): string =>
  `name = "clerk"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n[capabilities]\ntools = ["http_request"]\nnetwork = ["${world.url.slice('http://'.length)}"]\n`;

const order = (path: string): { name: string; input: Record<string, unknown> } => ({
  name: 'http_request',
  input: { url: `${world.url}${path}`, method: 'POST', body: 'one order' },
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
  const database = await postgres.createDatabase();
  const cluster = { turn_lease_seconds: LEASE_SECONDS };
  const a = await nodes.start('turn-a', database.url, { cluster });
  const b = await nodes.start('turn-b', database.url, { cluster });
  expect((await post(a.url, '/api/agents', manifest(), 'application/toml')).status).toBe(201);
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
    model.script([{ toolCalls: [order('/place')] }, { text: 'never said', gate: new Promise<never>(() => undefined) }]);
    const { a, b, aId } = await startTurnOnA();
    await waitFor('the model call after the tool result', () => model.requests.length >= 2);
    model.script([{ text: 'The order is placed.' }]);
    const diedAt = await kill(a);

    await waitFor('node B to ask the model the next step', () => model.requests.length >= 3, { ms: 25_000 });
    const failoverMs = Date.now() - diedAt;
    const session = await finishedSession(b);
    const took = logOf(b).filter((message) => message.startsWith('took over turn'));
    expect(took).toHaveLength(1);
    expect(took[0]).toMatch(new RegExp(`^took over turn "[0-9a-f-]{36}" from node ${aId}: its lease lapsed; resuming it from its journal$`));
    // Within the lease (and the second a node takes to look), measured from A's death.
    expect(failoverMs).toBeLessThan(LEASE_SECONDS * 1000 + 5_000);
    // The side effect happened once; the model was not asked again what it had answered.
    expect(world.hits).toEqual([{ method: 'POST', path: '/place' }]);
    expect(model.requests).toHaveLength(3);
    expect(JSON.stringify(model.requests[2]?.body)).toContain('the order is placed');
    expect(copies(session, 'user', 'place the order')).toBe(1);
    expect(copies(session, 'assistant', 'http_request')).toBe(1);
    expect(copies(session, 'tool', 'the order is placed')).toBe(1);
    expect(copies(session, 'assistant', 'The order is placed.')).toBe(1);
    expect(await nodes.stop(b)).toBe(0);
  }, 90_000);

  it('during a call that is not idempotent: the other node does not run it again, and its model is told the outcome is unknown', async () => {
    model.script([{ toolCalls: [order('/hold')] }, { text: 'I will check whether the order went through.' }]);
    const { a, b } = await startTurnOnA();
    await waitFor('the tool call to reach the world', () => world.hits.length >= 1);
    await kill(a);

    const session = await finishedSession(b);
    expect(world.hits).toEqual([{ method: 'POST', path: '/hold' }]);
    expect(model.requests).toHaveLength(2);
    expect(JSON.stringify(model.requests[1]?.body)).toContain('it may or may not have run');
    expect(copies(session, 'user', 'place the order')).toBe(1);
    expect(copies(session, 'tool', UNKNOWN_OUTCOME_TEXT.slice(0, 40))).toBe(1);
    expect(copies(session, 'assistant', 'I will check whether the order went through.')).toBe(1);
    expect(await nodes.stop(b)).toBe(0);
  }, 90_000);
});
