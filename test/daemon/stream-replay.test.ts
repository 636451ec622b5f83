import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UNKNOWN_OUTCOME_TEXT } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { type DaemonProcess, useDaemonHome } from '../support/daemon-process.ts';
import { waitFor } from '../support/wait-for.ts';
import { readSse, readSseUntil as readUntil, type SseEvent, sseText as textOf } from '../http/api-harness.ts';

const model = useScriptedModelServer();
const daemons = useDaemonHome('loom-replay-');

/** A server the agent's tool calls reach on 127.0.0.1: `/hold` is never answered (a call under way when the daemon is killed). */
let world: { server: Server; url: string; held: ServerResponse[] };

beforeEach(async () => {
  const held: ServerResponse[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    if (request.url === '/hold') held.push(response);
    else response.end('the order is placed');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  world = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, held };
});

afterEach(async () => {
  for (const response of world.held) response.destroy();
  await new Promise<void>((resolve) => world.server.close(() => resolve()));
});

const order = (path: string): { name: string; input: Record<string, unknown> } => ({
  name: 'http_request',
  input: { url: `${world.url}${path}`, method: 'POST', body: 'one order' },
});

/** Starts a daemon with an agent that may POST to the world. */
async function startClerk(): Promise<DaemonProcess> {
  const daemon = await daemons.start();
  const manifest = `name = "clerk"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n[capabilities]\ntools = ["http_request"]\nnetwork = ["${world.url.slice('http://'.length)}"]\n`;
  expect((await fetch(`${daemon.url}/api/agents`, { method: 'POST', headers: { 'content-type': 'application/toml' }, body: manifest })).status).toBe(201);
  return daemon;
}

/** Starts a daemon with an agent that may POST to the world, and streams its reply to "place the order". */
async function startStreaming(): Promise<{ daemon: DaemonProcess; events: AsyncGenerator<SseEvent> }> {
  const daemon = await startClerk();
  const response = await fetch(`${daemon.url}/api/agents/clerk/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ message: 'place the order' }),
  });
  return { daemon, events: readSse(response) };
}

async function kill(daemon: DaemonProcess, events: AsyncGenerator<SseEvent>): Promise<void> {
  daemon.child.kill('SIGKILL');
  await daemon.exited;
  // The client's stream breaks.
  await expect(events.next()).rejects.toThrow();
}

/** The resumed turn's stream from `lastEventId`, once the daemon resumed it. */
async function reconnect(daemon: DaemonProcess, lastEventId: string): Promise<AsyncGenerator<SseEvent>> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const response = await fetch(`${daemon.url}/api/agents/clerk/turn`, { headers: { accept: 'text/event-stream', 'last-event-id': lastEventId } });
    if (response.ok) return readSse(response);
    // The daemon answers before it has resumed its turns: not yet running.
    expect(response.status).toBe(409);
    await response.body?.cancel();
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('the resumed turn never ran');
}

const dataOf = (event: SseEvent | undefined): Record<string, unknown> => JSON.parse(event?.data ?? '{}') as Record<string, unknown>;

describe('a client of a turn the daemon is killed (SIGKILL) in reconnects with Last-Event-ID after the restart', () => {
  it('gets what it missed, no event twice, then the live rest and the end, under the same event ids', async () => {
    let answer!: () => void;
    model.script([
      { toolCalls: [order('/hold')] },
      { text: 'I will check whether the order went through.', gate: new Promise<void>((resolve) => (answer = resolve)) },
    ]);
    const first = await startStreaming();
    const before = await readUntil(first.events, 'tool-call');
    const last = before.at(-1)?.id ?? '';
    await kill(first.daemon, first.events);

    const second = await daemons.start();
    const events = await reconnect(second, last);
    answer();
    const after = await readUntil(events, 'run-finish');
    const names = after.map((event) => event.event);
    // The call it saw start is not shown again; its outcome, the reply and the end are, once each.
    expect(names).not.toContain('tool-call');
    expect(names).not.toContain('rewind');
    expect(after.filter((event) => event.event === 'tool-result').map((event) => dataOf(event)['text'])).toEqual([
      expect.stringContaining(UNKNOWN_OUTCOME_TEXT.slice(0, 40)) as string,
    ]);
    expect(textOf(after)).toBe('I will check whether the order went through.');
    expect(dataOf(after.at(-1))).toMatchObject({ type: 'run-finish', result: { text: 'I will check whether the order went through.' } });
    expect((await events.next()).done).toBe(true);
    // The same turn: its ids go on from the last one the client had.
    const turnOf = (id: string | undefined): string => id?.split(':').slice(0, -2).join(':') ?? '';
    expect(new Set(after.map((event) => turnOf(event.id)))).toEqual(new Set([turnOf(last)]));
    const seq = (id: string | undefined): number => Number(id?.split(':').at(-1));
    expect(Math.min(...after.map((event) => seq(event.id)))).toBeGreaterThan(seq(last));
    second.child.kill('SIGKILL');
  });

  it('keeps the events of a turn sent without a stream that a client started following during a call', async () => {
    let answer!: () => void;
    model.script([
      { toolCalls: [order('/hold')] },
      { text: 'I will check whether the order went through.', gate: new Promise<void>((resolve) => (answer = resolve)) },
    ]);
    const daemon = await startClerk();
    // A caller waiting for a JSON reply: no one is shown the turn's events while it starts its call.
    const reply = fetch(`${daemon.url}/api/agents/clerk/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'place the order' }),
    }).catch(() => undefined);
    await waitFor('the call to be under way', () => world.held.length === 1);
    // The owner opens the agent's page while the call runs, and is shown the turn so far.
    const followed = readSse(await fetch(`${daemon.url}/api/agents/clerk/turn`, { headers: { accept: 'text/event-stream' } }));
    const before = await readUntil(followed, 'tool-call');
    const last = before.at(-1)?.id ?? '';
    await kill(daemon, followed);
    await reply;

    const second = await daemons.start();
    const events = await reconnect(second, last);
    answer();
    const after = await readUntil(events, 'run-finish');
    // Its page goes on where it was: no start over, the call it saw not shown again.
    expect(after.map((event) => event.event)).not.toContain('rewind');
    expect(after.map((event) => event.event)).not.toContain('tool-call');
    expect(textOf(after)).toBe('I will check whether the order went through.');
    second.child.kill('SIGKILL');
  });

  it('is told to start over (rewind) when it had seen events the daemon had not saved, and gets the turn whole once', async () => {
    model.script([{ toolCalls: [order('/place')] }, { text: 'never ', stall: new Promise<never>(() => undefined) }]);
    const first = await startStreaming();
    const before = await readUntil(first.events, 'text-delta');
    const saved = before.find((event) => event.event === 'tool-result')?.id ?? '';
    const unsaved = before.at(-1)?.id ?? '';
    await kill(first.daemon, first.events);

    let answer!: () => void;
    model.script([{ text: 'The order is placed.', gate: new Promise<void>((resolve) => (answer = resolve)) }]);
    const second = await daemons.start();
    const fromUnsaved = await reconnect(second, unsaved);
    const fromSaved = await reconnect(second, saved);
    answer();
    const whole = await readUntil(fromUnsaved, 'run-finish');
    expect(whole[0]?.event).toBe('rewind');
    expect(whole.filter((event) => event.event === 'tool-call')).toHaveLength(1);
    expect(whole.filter((event) => event.event === 'tool-result')).toHaveLength(1);
    expect(textOf(whole)).toBe('The order is placed.');
    // What the restarted daemon replays keeps the ids the client had for it.
    expect(whole.find((event) => event.event === 'tool-result')?.id).toBe(saved);

    const rest = await readUntil(fromSaved, 'run-finish');
    expect(rest.map((event) => event.event)).not.toContain('rewind');
    expect(rest.map((event) => event.event)).not.toContain('tool-result');
    expect(textOf(rest)).toBe('The order is placed.');
    second.child.kill('SIGKILL');
  });
});
