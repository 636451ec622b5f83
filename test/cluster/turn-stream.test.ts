import { describe, expect, it } from 'vitest';
import { readSse, readSseUntil, type SseEvent, sseText } from '../http/api-harness.ts';
import { useTurnCluster } from '../support/turn-cluster.ts';
import { type DaemonNode, waitFor } from './daemons.ts';

// A turn's stream followed through another node of the cluster (decision 0059, amended): two
// daemons in separate processes on one PostgreSQL database. The node that does not run the turn
// shows each step the turn's node records, then its end; a turn taken over from a node that died
// is followed by a client of the other node from its last event. A single daemon on PostgreSQL,
// restarted, tells a client back after a turn's end that end as another node would.

/** The lease the nodes hold their turns with, in seconds: short, so that a takeover comes soon. */
const LEASE_SECONDS = 3;

const cluster = useTurnCluster('loom-turn-stream-', LEASE_SECONDS);

/** A call that is not idempotent (a POST): its node records the turn's step before and after it. */
const order = { name: 'http_request', input: { url: '', method: 'POST', body: 'one order' } };
const placeOrder = (): typeof order => ({ ...order, input: { ...order.input, url: `${cluster.world.url}/place` } });

/** A promise the test settles when it chooses: what the scripted model waits for. */
function gate(): { promise: Promise<void>; release: () => void } {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}

/** Two nodes on a fresh database, the clerk spawned on A and held by B. */
const twoNodes = (): Promise<{ a: DaemonNode; b: DaemonNode }> => cluster.twoNodes(['stream-a', 'stream-b']);

/** "place the order" sent to node A, its reply streamed (`POST …/messages` as SSE): its events as they come. */
async function streamOnA(a: DaemonNode): Promise<AsyncGenerator<SseEvent>> {
  const response = await fetch(`${a.url}/api/agents/clerk/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ message: 'place the order' }),
  });
  expect(response.status).toBe(200);
  return readSse(response);
}

/** `GET …/turn` on a node as a stream, from `lastEventId` when given. */
function followOn(node: DaemonNode, lastEventId?: string): Promise<Response> {
  return fetch(`${node.url}/api/agents/clerk/turn`, {
    headers: { accept: 'text/event-stream', ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) },
  });
}

/** The events of a stream until it ends. */
async function rest(events: AsyncGenerator<SseEvent>): Promise<SseEvent[]> {
  const all: SseEvent[] = [];
  for await (const event of events) if (event.comment === undefined) all.push(event);
  return all;
}

const dataOf = (event: SseEvent | undefined): Record<string, unknown> => JSON.parse(event?.data ?? '{}') as Record<string, unknown>;

describe("a turn's stream followed through another node", () => {
  it('shows on node B each step node A records as the model is let go, then the rest of the reply and its end', async () => {
    const first = gate();
    const second = gate();
    cluster.model.script([
      { toolCalls: [placeOrder()], gate: first.promise },
      { text: 'The order is placed.', gate: second.promise },
    ]);
    const { a, b } = await twoNodes();
    const onA = await streamOnA(a);
    await waitFor('the first model call', () => cluster.model.requests.length >= 1);

    // Node B does not run the turn: it shows it, and follows it, from the journal node A writes.
    const { running } = (await (await fetch(`${b.url}/api/agents/clerk/session`)).json()) as { running: { run_id: string } | null };
    expect(running).toMatchObject({ message: 'place the order', state: 'running', run_id: expect.stringMatching(/^[0-9a-f-]{36}$/) as string });
    const response = await followOn(b);
    expect(response.status).toBe(200);
    const onB = readSse(response);
    // Node B cannot cancel it (a cancel stops a turn in its node's memory): it says which node can.
    const cancel = await fetch(`${b.url}/api/agents/clerk/turn/cancel`, { method: 'POST' });
    expect(cancel.status).toBe(409);
    expect(await cancel.json()).toMatchObject({
      error: { code: 'TURN_ELSEWHERE', message: expect.stringContaining(`runs on node "stream-a" (${a.url})`) as string },
    });

    first.release();
    const steps = await readSseUntil(onB, 'tool-result');
    expect(steps.map((event) => event.event)).toEqual(expect.arrayContaining(['run-start', 'tool-call', 'tool-result']));
    expect(steps.some((event) => event.event === 'text-delta')).toBe(false);
    expect(dataOf(steps.find((event) => event.event === 'tool-result'))).toMatchObject({
      toolName: 'http_request',
      text: expect.stringContaining('the order is placed') as string,
    });
    // The same events as node A streamed, under the same ids: a client may come back to either node with them.
    const seenOnA = await readSseUntil(onA, 'tool-result');
    expect(steps.map((event) => `${event.id ?? ''} ${event.event ?? ''}`)).toEqual(
      seenOnA.filter((event) => steps.some((step) => step.id === event.id)).map((event) => `${event.id ?? ''} ${event.event ?? ''}`),
    );
    expect(steps.every((event) => event.id?.startsWith(`${running?.run_id ?? ''}:`))).toBe(true);

    second.release();
    const ending = await rest(onB);
    expect(sseText(ending)).toBe('The order is placed.');
    expect(ending.at(-1)?.event).toBe('run-finish');
    expect(dataOf(ending.at(-1))).toMatchObject({ result: { text: 'The order is placed.', iterations: 2, model: 'openai/gpt-4o' } });
    expect(cluster.world.hits).toEqual(['POST /place']);
    await rest(onA);
  }, 90_000);

  it('shows on node B the steps of a turn node A runs for a plain JSON request with an Idempotency-Key, and its end', async () => {
    const second = gate();
    cluster.model.script([{ toolCalls: [placeOrder()] }, { text: 'Placed.', gate: second.promise }]);
    const { a, b } = await twoNodes();
    const reply = fetch(`${a.url}/api/agents/clerk/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'order-1' },
      body: JSON.stringify({ message: 'place the order' }),
    });
    // Awaited at the end; a test that fails first leaves it to fail with its node.
    reply.catch(() => undefined);
    await waitFor('the model call after the tool result', () => cluster.model.requests.length >= 2);

    // Nobody streams it on node A; on a cluster its steps are saved all the same, for node B's clients.
    const response = await followOn(b);
    expect(response.status).toBe(200);
    const onB = readSse(response);
    const steps = await readSseUntil(onB, 'tool-result');
    expect(steps.map((event) => event.event)).toEqual(expect.arrayContaining(['run-start', 'tool-call', 'tool-result']));

    second.release();
    const ending = await rest(onB);
    expect(sseText(ending)).toBe('Placed.');
    expect(dataOf(ending.at(-1))).toMatchObject({ result: { text: 'Placed.' } });
    expect(((await (await reply).json()) as { text: string }).text).toBe('Placed.');
  }, 90_000);

  it("a client of node A back after the turn's end on node B gets its reply again and its end; an id of no turn of the session gets 409", async () => {
    cluster.model.script([{ text: 'The order is placed.' }]);
    const { a, b } = await twoNodes();
    const onA = await rest(await streamOnA(a));
    expect(onA.at(-1)?.event).toBe('run-finish');
    const lastText = onA.filter((event) => event.event === 'text-delta').at(-1)?.id;
    expect(lastText).toBeDefined();

    // The stream broke before its end: node B did not run the turn, and knows not what the client was shown.
    const response = await followOn(b, lastText);
    expect(response.status).toBe(200);
    const back = await rest(readSse(response));
    expect(back.map((event) => event.event)).toEqual(['rewind', 'text-delta', 'run-finish']);
    expect(sseText(back)).toBe('The order is placed.');
    expect(dataOf(back.at(-1))).toMatchObject({ result: { text: 'The order is placed.', iterations: 1, model: 'openai/gpt-4o' } });
    // As node A tells it, with the ids it gave.
    const again = await rest(readSse(await followOn(a, lastText)));
    expect(again.map((event) => event.event)).toEqual(['run-finish']);

    const unknown = await followOn(b, '00000000-0000-4000-8000-000000000000:x:1');
    expect(unknown.status).toBe(409);
    expect(await unknown.json()).toMatchObject({
      error: { code: 'TURN_NOT_RUNNING', message: expect.stringContaining('has ended; its reply is in the session') as string },
    });
  }, 90_000);

  it("a single daemon on PostgreSQL restarted within two minutes of a turn's end gives a client back with one of its event ids the reply and its end", async () => {
    cluster.model.script([{ text: 'The order is placed.' }]);
    const database = await cluster.postgres.createDatabase();
    const lease = { turn_lease_seconds: LEASE_SECONDS };
    const solo = await cluster.nodes.start('stream-solo', database.url, { cluster: lease });
    const spawned = await fetch(`${solo.url}/api/agents`, { method: 'POST', headers: { 'content-type': 'application/toml' }, body: cluster.manifest() });
    expect(spawned.status).toBe(201);
    const seen = await rest(await streamOnA(solo));
    expect(seen.at(-1)?.event).toBe('run-finish');
    const lastText = seen.filter((event) => event.event === 'text-delta').at(-1)?.id;
    expect(lastText).toBeDefined();

    // Restarted, the daemon no longer keeps the turn's events: it tells the end from the session.
    expect(await cluster.nodes.stop(solo)).toBe(0);
    const restarted = await cluster.nodes.start('stream-solo', database.url, { cluster: lease });
    const response = await followOn(restarted, lastText);
    expect(response.status).toBe(200);
    const back = await rest(readSse(response));
    expect(back.map((event) => event.event)).toEqual(['rewind', 'text-delta', 'run-finish']);
    expect(sseText(back)).toBe('The order is placed.');
    expect(dataOf(back.at(-1))).toMatchObject({ result: { text: 'The order is placed.', iterations: 1, model: 'openai/gpt-4o' } });
  }, 90_000);

  it('a client of the node that died follows the turn on the other node from its last event, and gets the rest as that node says it once it took the turn over', async () => {
    cluster.model.script([{ toolCalls: [placeOrder()] }, { text: 'never said', gate: new Promise<never>(() => undefined) }]);
    const { a, b } = await twoNodes();
    const onA = await streamOnA(a);
    const seen = await readSseUntil(onA, 'tool-result');
    await waitFor('the model call after the tool result', () => cluster.model.requests.length >= 2);
    const resumed = gate();
    cluster.model.script([{ text: 'The order is placed.', gate: resumed.promise }]);
    a.child.kill('SIGKILL');
    await a.exited;

    // Node B follows it from the journal until A's lease lapses and B takes it over, or as B runs it
    // when it took it over first: either way from the client's last event, nothing repeated.
    const response = await followOn(b, seen.at(-1)?.id);
    expect(response.status).toBe(200);
    await waitFor("node B's model call of the turn it took over", () => cluster.model.requests.length >= 3, { ms: 60_000 });
    resumed.release();
    const ending = await rest(readSse(response));
    expect(ending.map((event) => event.event)).not.toContain('rewind');
    expect(ending.map((event) => event.event)).not.toContain('tool-call');
    expect(sseText(ending)).toBe('The order is placed.');
    expect(ending.at(-1)?.event).toBe('run-finish');
    expect(dataOf(ending.at(-1))).toMatchObject({ result: { text: 'The order is placed.' } });
    // What B said carries B's ids: the same turn, under the epoch of B's run of it.
    const [turnId = '', epochOfA = ''] = (seen.at(-1)?.id ?? '').split(':');
    expect(ending.every((event) => event.id?.startsWith(`${turnId}:`) === true && !event.id.startsWith(`${turnId}:${epochOfA}:`))).toBe(true);
    expect(cluster.world.hits).toEqual(['POST /place']);
  }, 90_000);
});
