import { Agent, type IncomingMessage, request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EVENTS_HEARTBEAT_MS } from '../../src/http/index.ts';
import { hostApiApp } from '../support/test-host.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml, type Api, type HangingModelServer, readSse, type SseEvent, startApi, startHangingModelServer } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;
let hanging: HangingModelServer | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-http-sse-');
  api = await startApi(dir.path, { config: { daemon: { request_timeout_seconds: 60 } } });
});
afterEach(async () => {
  await hanging?.close();
  hanging = undefined;
  await api.close();
  await dir.remove();
});

const message = (text: string, accept = 'text/event-stream', signal?: AbortSignal): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', accept },
  body: JSON.stringify({ message: text }),
  ...(signal === undefined ? {} : { signal }),
});

async function collect(response: Response): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of readSse(response)) events.push(event);
  return events;
}

describe('POST /api/agents/:agent/messages with Accept: text/event-stream', () => {
  it('streams one SSE event per agent event, from run-start through text-delta to run-finish', async () => {
    await api.host.kernel.spawn(manifest(agentToml('streamer', model.url)));
    model.script([{ text: 'Hello from the stream.' }]);
    const response = await api.request('/api/agents/streamer/messages', message('Hi'));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const events = (await collect(response)).filter((event) => event.comment === undefined);
    const types = events.map((event) => event.event);
    expect(types[0]).toBe('run-start');
    expect(types).toContain('text-delta');
    expect(types.at(-1)).toBe('run-finish');
    expect(types.indexOf('text-delta')).toBeLessThan(types.indexOf('run-finish'));
    const text = events
      .filter((event) => event.event === 'text-delta')
      .map((event) => (JSON.parse(event.data) as { text: string }).text)
      .join('');
    expect(text).toBe('Hello from the stream.');
    const finish = JSON.parse(events.at(-1)?.data ?? '{}') as { result: { text: string; usage: { input_tokens: number } } };
    expect(finish.result).toMatchObject({ text: 'Hello from the stream.', usage: { input_tokens: 10 } });
  });

  it('writes a streamed chat on the Node server as the app writes it in process, byte for byte but the ids, with the headers every answer carries', async () => {
    await api.host.kernel.spawn(manifest(agentToml('twin', model.url)));
    model.script([{ text: 'Line one.\nLine two.' }, { text: 'Line one.\nLine two.' }]);
    const served = await api.request('/api/agents/twin/messages', message('Hi'));
    const inProcess = await hostApiApp(api.host, {}, '127.0.0.1').request('/api/agents/twin/messages', message('Hi'));
    // Each turn has its own run, agent-event ids and epoch.
    const withoutIds = (text: string): string => text.replace(/[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}/g, '<uuid>').replace(/:[0-9a-f]{8}:/g, ':<epoch>:');
    const body = withoutIds(await served.text());
    expect(body).toBe(withoutIds(await inProcess.text()));
    expect(body).toMatch(/^event: run-start\ndata: \{"type":"run-start",.*\}\nid: <uuid>:<epoch>:1\n\n/);
    expect(body).toMatch(/\nevent: text-delta\ndata: \{"type":"text-delta","text":"[^"]*"\}\nid: <uuid>:<epoch>:\d+\n\n/);
    expect(body.endsWith('\n\n')).toBe(true);
    for (const response of [served, inProcess]) {
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/event-stream');
      expect(response.headers.get('cache-control')).toBe('no-cache');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
    }
  });

  it('waits for a client that reads slower than the turn writes, then gives it the whole reply and the end', async () => {
    const spawned = await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('long', model.url) });
    const { session_id: sessionId } = (await spawned.json()) as { session_id: string };
    // Six deltas of 1 MB: more than the sockets hold while the client reads nothing.
    const text = Array.from({ length: 6 }, (_, index) => `${String(index).repeat(1_000_000)} `).join('');
    model.script([{ text }]);
    const body = JSON.stringify({ message: 'Write a lot' });
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const outgoing = httpRequest(`${api.url}/api/agents/long/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'content-length': Buffer.byteLength(body) },
      });
      outgoing.on('response', resolve).on('error', reject).end(body);
    });
    response.pause();
    // The turn is committed while its client has read nothing.
    for (let tries = 0; tries < 100_000; tries++) {
      if ((await api.host.store.sessions.get(sessionId))?.messages.length === 2) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect((await api.host.store.sessions.get(sessionId))?.messages).toHaveLength(2);
    const events = await collect(new Response(Readable.toWeb(response) as ReadableStream<Uint8Array>));
    const deltas = events.filter((event) => event.event === 'text-delta').map((event) => (JSON.parse(event.data) as { text: string }).text);
    expect(deltas.join('')).toBe(text);
    expect(events.at(-1)?.event).toBe('run-finish');
  });

  it("answers HEAD on a running turn's stream with its head alone, lets its follower go, and the connection serves the next request", async () => {
    let finish!: () => void;
    const stall = new Promise<void>((resolve) => (finish = resolve));
    await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('header', model.url) });
    model.script([{ text: 'Once upon ', stall }]);
    const sending = api.request('/api/agents/header/messages', message('Tell a story', 'application/json'));
    await waitFor('the turn to run', async () => (await api.request('/api/agents/header/turn', { headers: { accept: 'application/json' } })).status === 200);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const ask = (method: string, path: string, accept: string): Promise<{ status: number; type: string; reused: boolean }> =>
      new Promise((resolve, reject) => {
        const outgoing = httpRequest(`${api.url}${path}`, { method, agent, headers: { accept } });
        outgoing
          .on('response', (response) => {
            response
              .resume()
              .on('end', () => resolve({ status: response.statusCode ?? 0, type: response.headers['content-type'] ?? '', reused: outgoing.reusedSocket }));
          })
          .on('error', reject)
          .end();
      });
    try {
      const waiting = api.host.clock.pending();
      expect(await ask('HEAD', '/api/agents/header/turn', 'text/event-stream')).toEqual({ status: 200, type: 'text/event-stream', reused: false });
      // The HEAD's follower and deadline are let go at once: nothing of it is left waiting.
      await new Promise((resolve) => setImmediate(resolve));
      expect(api.host.clock.pending()).toBe(waiting);
      expect(await ask('GET', '/api/health', 'application/json')).toMatchObject({ status: 200, reused: true });
    } finally {
      agent.destroy();
      finish();
      await sending;
    }
  });

  it('answers a refused turn (suspended agent) with a JSON 409, not a stream', async () => {
    await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('paused', model.url) });
    await api.host.kernel.suspend('paused');
    const response = await api.request('/api/agents/paused/messages', message('Hi'));
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ error: { code: 'AGENT_STATE' } });
  });

  it('keeps the turn running when the client disconnects mid-stream: it is committed whole, and the next message is answered after it', async () => {
    let finish!: () => void;
    const stall = new Promise<void>((resolve) => (finish = resolve));
    const spawned = await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('talker', model.url) });
    const { session_id: sessionId } = (await spawned.json()) as { session_id: string };
    model.script([{ text: 'Once upon a time ', stall }, { text: 'Here I am.' }]);
    const client = new AbortController();
    const response = await api.request('/api/agents/talker/messages', message('Tell me a long story', 'text/event-stream', client.signal));
    const events = readSse(response);
    expect((await events.next()).value).toMatchObject({ event: 'run-start' });
    let event = (await events.next()).value as SseEvent;
    while (event.event !== 'text-delta') event = (await events.next()).value as SseEvent;

    client.abort();
    // The turn goes on without its client: the next message waits for it, then is answered.
    const next = api.request('/api/agents/talker/messages', message('Are you there?', 'application/json'));
    finish();
    const answered = await next;
    expect(answered.status).toBe(200);
    expect(await answered.json()).toMatchObject({ text: 'Here I am.' });
    const session = await api.host.store.sessions.get(sessionId);
    expect(session?.messages).toMatchObject([
      { role: 'user', content: 'Tell me a long story', providerOptions: { loom: { turn: { status: 'finished' } } } },
      { role: 'assistant', content: [{ type: 'text', text: 'Once upon a time ' }] },
      { role: 'user', content: 'Are you there?' },
      { role: 'assistant', content: [{ type: 'text', text: 'Here I am.' }] },
    ]);
    expect((await api.request('/api/health')).status).toBe(200);
  });
});

describe('request timeout', () => {
  it('answers 504 REQUEST_TIMEOUT and cancels the turn when a message outlasts daemon.request_timeout_seconds', async () => {
    hanging = await startHangingModelServer();
    // Spawned in the kernel: a spawn over HTTP probes the model server, which would take its one hanging answer.
    await api.host.kernel.spawn(manifest(agentToml('slow', hanging.url)));
    const pending = api.request('/api/agents/slow/messages', message('Hi', 'application/json'));
    await hanging.received;
    await api.host.clock.advance(60_000);
    const response = await pending;
    expect(response.status).toBe(504);
    expect(await response.json()).toMatchObject({ error: { code: 'REQUEST_TIMEOUT' } });
    await hanging.closed;
  });
});

describe('GET /api/events', () => {
  it('streams kernel events as SSE with their type as the event name', async () => {
    const response = await api.request('/api/events');
    expect(response.status).toBe(200);
    const events = readSse(response);
    expect((await events.next()).value).toMatchObject({ comment: 'connected' });
    await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('watched', model.url) });
    const spawnEvent = (await events.next()).value as SseEvent;
    expect(spawnEvent.event).toBe('agent-spawn');
    expect(JSON.parse(spawnEvent.data)).toMatchObject({ type: 'agent-spawn', name: 'watched' });
    await api.request('/api/agents/watched/suspend', { method: 'POST' });
    expect((await events.next()).value).toMatchObject({ event: 'agent-suspend' });
    await events.return(undefined);
  });

  it('answers HEAD with the head alone, following nothing', async () => {
    const waiting = api.host.clock.pending();
    const response = await api.request('/api/events', { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    await new Promise((resolve) => setImmediate(resolve));
    // No heartbeat waits for a stream nobody reads.
    expect(api.host.clock.pending()).toBe(waiting);
  });

  it('writes a heartbeat comment every 15 s of the clock', async () => {
    const response = await api.request('/api/events');
    const events = readSse(response);
    expect((await events.next()).value).toMatchObject({ comment: 'connected' });
    await api.host.clock.advance(EVENTS_HEARTBEAT_MS);
    expect((await events.next()).value).toMatchObject({ comment: 'heartbeat' });
    await api.host.clock.advance(EVENTS_HEARTBEAT_MS);
    expect((await events.next()).value).toMatchObject({ comment: 'heartbeat' });
    await events.return(undefined);
  });

  it('stops listening to the kernel when the client disconnects', async () => {
    const client = new AbortController();
    const response = await api.request('/api/events', { signal: client.signal });
    const events = readSse(response);
    await events.next();
    const sleepersBefore = api.host.clock.pending();
    client.abort();
    // The heartbeat sleeper goes away once the stream notices the disconnect.
    for (let tries = 0; api.host.clock.pending() >= sleepersBefore && tries < 100; tries++) await new Promise((resolve) => setImmediate(resolve));
    expect(api.host.clock.pending()).toBeLessThan(sleepersBefore);
  });
});
