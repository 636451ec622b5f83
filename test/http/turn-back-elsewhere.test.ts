/**
 * `GET /api/agents/{agent}/turn` with `Last-Event-ID`, after the turn's end, on a node of a cluster
 * that did not run it (decision 0059, amended): the end is told from the session the caller holds,
 * never from another caller's. Node A runs Alice's turn and stops; node B, on the same SQLite file
 * and leasing turns as a node on PostgreSQL does, answers Bob and Alice with her event's id.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import { ConfigSchema } from '../../src/config/index.ts';
import { createHttpApp, type RunningHttpServer, startHttpServer } from '../../src/http/index.ts';
import type { Kernel } from '../../src/kernel/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { openSqliteStore, type SqliteStore } from '../../src/store/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { bootLeasingKernel } from '../support/cluster-node.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml, readSse, type SseEvent, sseText } from './api-harness.ts';

const model = useScriptedModelServer();

/** Two user keys: each has its own session of an agent. */
const KEYS = {
  config: {
    auth: {
      keys: [
        { name: 'alice', role: 'user', key_env: 'ALICE_KEY' },
        { name: 'bob', role: 'user', key_env: 'BOB_KEY' },
      ],
    },
  },
  env: { ALICE_KEY: 'alice-secret', BOB_KEY: 'bob-secret' },
};

/** A node: its kernel on its own connection to the database, served over HTTP. */
interface Node {
  kernel: Kernel;
  url: string;
  close(): Promise<void>;
}

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let clock: FakeClock;
let running: Node[];

beforeEach(async () => {
  dir = await makeTempDir('loom-turn-back-elsewhere-');
  clock = createFakeClock();
  running = [];
});

afterEach(async () => {
  for (const node of running) await node.close();
  await dir.remove();
});

/** Node `id` on the database of the test, booted: it leases its turns, as a node on PostgreSQL does. */
async function startNode(id: string): Promise<Node> {
  const store: SqliteStore = openSqliteStore({ path: `${dir.path}/loom.db` });
  const kernel = await bootLeasingKernel(store, id, clock, { workspaces: `${dir.path}/workspaces` });
  const app = createHttpApp({ kernel, config: ConfigSchema.parse(KEYS.config), env: KEYS.env, clock, logger: createSilentLogger() });
  const server: RunningHttpServer = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  let closed = false;
  const node: Node = {
    kernel,
    url: server.url,
    close: async () => {
      if (closed) return;
      closed = true;
      await server.close();
      await kernel.shutdown();
      await store.close();
    },
  };
  running.push(node);
  return node;
}

/** `GET …/turn` on `node` as a stream, as the key `secret`, from `lastEventId`. */
const followAs = (node: Node, secret: string, lastEventId: string): Promise<Response> =>
  fetch(`${node.url}/api/agents/clerk/turn`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${secret}`, 'last-event-id': lastEventId } });

/** The events of a stream until it ends. */
async function rest(response: Response): Promise<SseEvent[]> {
  const all: SseEvent[] = [];
  for await (const event of readSse(response)) if (event.comment === undefined) all.push(event);
  return all;
}

describe('a client back after a turn ended on another node', () => {
  it("gets the end of a turn of its own session, and 409 TURN_NOT_RUNNING with an id of another caller's turn", async () => {
    model.script([{ text: 'The order is placed.' }]);
    const a = await startNode('node-a');
    await a.kernel.spawn(manifest(agentToml('clerk', model.url)));
    // Alice's turn on node A, streamed to its end.
    const streamed = await fetch(`${a.url}/api/agents/clerk/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', authorization: 'Bearer alice-secret' },
      body: JSON.stringify({ message: 'place the order' }),
    });
    expect(streamed.status).toBe(200);
    const seen = await rest(streamed);
    expect(seen.at(-1)?.event).toBe('run-finish');
    const lastText = seen.filter((event) => event.event === 'text-delta').at(-1)?.id ?? '';
    expect(lastText).not.toBe('');
    // Node A stops; node B, which never ran the turn, is asked.
    await a.close();
    const b = await startNode('node-b');

    // Bob with Alice's event id: his session holds no such turn, and Alice's is not looked into.
    const bob = await followAs(b, 'bob-secret', lastText);
    expect(bob.status).toBe(409);
    expect(await bob.json()).toMatchObject({
      error: { code: 'TURN_NOT_RUNNING', message: expect.stringContaining('has ended; its reply is in the session') as string },
    });

    // Alice with the same id gets her turn's reply and its end.
    const alice = await followAs(b, 'alice-secret', lastText);
    expect(alice.status).toBe(200);
    const back = await rest(alice);
    expect(back.map((event) => event.event)).toEqual(['rewind', 'text-delta', 'run-finish']);
    expect(sseText(back)).toBe('The order is placed.');
  });
});
