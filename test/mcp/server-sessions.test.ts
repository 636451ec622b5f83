import { Client, type FetchLike, type ReconnectionScheduler, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { KernelEvent } from '../../src/kernel/index.ts';
import { DEFAULT_MCP_SESSION_IDLE_MS, DEFAULT_MCP_SESSIONS_PER_PRINCIPAL, DEFAULT_MCP_SSE_RETRY_MS } from '../../src/mcp/server/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { OWNER_AND_HELPER_KEYS } from '../http/api-harness.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { agentManifest, firstText, type McpHttpServer, MODERN_REVISION, startMcpHttpServer } from './server-harness.ts';

// The sessionful 2025-era leg of /mcp (decision 0027), driven by the official client over real HTTP.

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let served: McpHttpServer | undefined;
const clients: Client[] = [];
const cleanups: (() => void)[] = [];

beforeEach(async () => {
  dir = await makeTempDir('loom-mcp-sessions-');
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await served?.close();
  served = undefined;
  await dir.remove();
});

const KEYS = OWNER_AND_HELPER_KEYS;
const REVISION = '2025-11-25';
const ACCEPT = 'application/json, text/event-stream';

async function serve(options: Parameters<typeof startMcpHttpServer>[1] = {}): Promise<McpHttpServer> {
  served = await startMcpHttpServer(dir.path, options);
  return served;
}

/** A promise settled from outside: a model reply held until the test lets it go. */
function held(): { promise: Promise<void>; release: () => void } {
  let release: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (release = resolve));
  cleanups.push(release);
  return { promise, release };
}

/** The next kernel event `predicate` accepts. */
function nextEvent(served: McpHttpServer, predicate: (event: KernelEvent) => boolean): Promise<KernelEvent> {
  return new Promise((resolve) => {
    const unsubscribe = served.host.kernel.events.subscribe((event) => {
      if (!predicate(event)) return;
      unsubscribe();
      resolve(event);
    });
  });
}

/** Waits until the scripted model has received `count` requests: a turn is under way. */
async function modelRequests(count: number): Promise<void> {
  await waitFor(`${count} model request(s)`, () => model.requests.length >= count);
  expect(model.requests.length).toBe(count);
}

/** Connects the official client over Streamable HTTP with the 2025 handshake (no version pin). */
async function connect(
  url: string,
  options: { apiKey?: string; fetch?: FetchLike; reconnectionScheduler?: ReconnectionScheduler; onToolsChanged?: (names: string[]) => void } = {},
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    ...(options.apiKey === undefined ? {} : { authProvider: { token: () => Promise.resolve(options.apiKey) } }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    ...(options.reconnectionScheduler === undefined ? {} : { reconnectionScheduler: options.reconnectionScheduler }),
  });
  const onToolsChanged = options.onToolsChanged;
  const client = new Client(
    { name: 'loom-session-test', version: '1.0.0' },
    onToolsChanged === undefined
      ? {}
      : { listChanged: { tools: { debounceMs: 0, onChanged: (_error, tools) => onToolsChanged((tools ?? []).map((tool) => tool.name)) } } },
  );
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

/** A fetch that keeps the text of each POST's response as it arrives (the SDK reads it as usual). */
function recordingFetch(): { fetch: FetchLike; posts: { body: string; text: () => string }[] } {
  const posts: { body: string; text: () => string }[] = [];
  return {
    posts,
    fetch: async (url, init) => {
      const response = await fetch(url, init);
      if (init?.method !== 'POST' || response.body === null) return response;
      let text = '';
      const decoder = new TextDecoder();
      posts.push({ body: typeof init.body === 'string' ? init.body : '', text: () => text });
      const body = response.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            text += decoder.decode(chunk, { stream: true });
            controller.enqueue(chunk);
          },
        }),
      );
      return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    },
  };
}

/** Reads `response`'s SSE text up to the end of its first event. */
async function firstSseEvent(response: Response): Promise<{ event: string; reader: ReadableStreamDefaultReader<Uint8Array> }> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes('\n\n')) {
    const next = await reader.read();
    if (next.done) break;
    text += decoder.decode(next.value, { stream: true });
  }
  return { event: text.slice(0, text.indexOf('\n\n') + 2), reader };
}

const initializeBody = (id = 0) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: REVISION, capabilities: {}, clientInfo: { name: 'raw-client', version: '1.0.0' } },
  });

const bearer = (apiKey: string | undefined): Record<string, string> => (apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` });

/** Opens a session by hand (initialize, then initialized), reading every response to its end; returns its id. */
async function openRawSession(url: string, apiKey?: string): Promise<string> {
  const opened = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT, ...bearer(apiKey) },
    body: initializeBody(),
  });
  expect(opened.status).toBe(200);
  await opened.text();
  const sessionId = opened.headers.get('mcp-session-id') ?? '';
  expect(sessionId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const initialized = await sessionRequest(url, sessionId, apiKey, {
    method: 'POST',
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  expect(initialized.status).toBe(202);
  return sessionId;
}

/** A request in a session, as a 2025-era client sends it. */
function sessionRequest(
  url: string,
  sessionId: string,
  apiKey: string | undefined,
  init: { method: string; body?: string; headers?: Record<string, string> },
): Promise<Response> {
  return fetch(`${url}/mcp`, {
    method: init.method,
    headers: {
      'content-type': 'application/json',
      accept: init.method === 'GET' ? 'text/event-stream' : ACCEPT,
      'mcp-session-id': sessionId,
      'mcp-protocol-version': REVISION,
      ...bearer(apiKey),
      ...init.headers,
    },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
}

/** `tools/list` in a session, read to its end; the status. */
async function listInSession(url: string, sessionId: string, apiKey?: string): Promise<number> {
  const response = await sessionRequest(url, sessionId, apiKey, {
    method: 'POST',
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} }),
  });
  await response.text();
  return response.status;
}

describe('a 2025-era Streamable HTTP client gets a session', () => {
  it('initialize answers an unguessable Mcp-Session-Id, and every POST stream starts with a priming event (an id, empty data) carrying the retry field', async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('helper', model.url));
    const recorded = recordingFetch();
    const { client, transport } = await connect(url, { fetch: recorded.fetch });
    expect(client.getNegotiatedProtocolVersion()).toBe(REVISION);
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['loom_agent_helper']);

    const list = recorded.posts.find((post) => post.body.includes('"tools/list"'));
    const text = list?.text() ?? '';
    expect(text).toMatch(new RegExp(`^id: [0-9a-f-]{36}\\nretry: ${DEFAULT_MCP_SSE_RETRY_MS}\\ndata: \\n\\n`));
    expect(text).toContain('"loom_agent_helper"');
    expect(recorded.posts.find((post) => post.body.includes('"initialize"'))?.text()).toMatch(/^id: \S+\nretry: \d+\ndata: \n\n/);
  });

  it('resumes a POST stream dropped mid-call with GET and Last-Event-ID: the turn runs on and its result still arrives', async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('helper', model.url));
    const reply = held();
    model.script([{ text: 'The long answer.', stall: reply.promise }]);
    const finished = nextEvent(served as McpHttpServer, (event) => event.type === 'turn-finish' || event.type === 'turn-cancel');

    let primingId = '';
    const gets: (string | null)[] = [];
    const dropping: FetchLike = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === 'GET') gets.push(new Headers(init.headers).get('last-event-id'));
      if (init?.method !== 'POST' || typeof init.body !== 'string' || !init.body.includes('"tools/call"') || primingId !== '') return response;
      // The network drops the call's stream right after its priming event.
      const { event, reader } = await firstSseEvent(response);
      await reader.cancel();
      primingId = /^id: (\S+)/.exec(event)?.[1] ?? '';
      return new Response(event, { status: response.status, headers: response.headers });
    };
    const delays: number[] = [];
    const { client } = await connect(url, {
      fetch: dropping,
      // The client reconnects after the server's retry interval; here, once the turn has ended, so the result waits in the event store.
      reconnectionScheduler: (reconnect, delay) => {
        delays.push(delay);
        void finished.then(reconnect);
      },
    });

    const call = client.callTool({ name: 'loom_agent_helper', arguments: { message: 'Take your time.' } });
    await modelRequests(1);
    reply.release();
    expect((await finished).type).toBe('turn-finish');
    expect(firstText(await call)).toBe('The long answer.');
    expect(primingId).not.toBe('');
    expect(gets).toContain(primingId);
    expect(delays[0]).toBe(DEFAULT_MCP_SSE_RETRY_MS);
  });

  it("cancels the agent's turn on notifications/cancelled: it reaches the session's server and the running call", async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('helper', model.url));
    const reply = held();
    model.script([{ text: 'Once upon a time', stall: reply.promise }, { text: 'never sent' }]);
    const ended = nextEvent(served as McpHttpServer, (event) => event.type === 'turn-finish' || event.type === 'turn-cancel');
    const { client, transport } = await connect(url);

    const controller = new AbortController();
    const call = client.callTool({ name: 'loom_agent_helper', arguments: { message: 'Tell me a story' } }, { signal: controller.signal });
    await modelRequests(1);
    controller.abort(new Error('stop'));
    await expect(call).rejects.toThrow();
    expect(await ended).toMatchObject({ type: 'turn-cancel', name: 'helper' });
    // The MCP session's own conversation of the agent.
    const session = await host.kernel.session('helper', { conversation: `mcp:${transport.sessionId ?? ''}` });
    expect(session.messages[0]).toMatchObject({ role: 'user', content: 'Tell me a story', providerOptions: { loom: { turn: { status: 'cancelled' } } } });
    expect(model.requests).toHaveLength(1);
  });

  it('tells the client on its GET stream when an agent is spawned', async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('first', model.url));
    let resolve: (names: string[]) => void = () => undefined;
    const changed = new Promise<string[]>((done) => (resolve = done));
    const { client } = await connect(url, { onToolsChanged: (names) => names.includes('loom_agent_second') && resolve(names) });
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['loom_agent_first']);
    await host.kernel.spawn(agentManifest('second', model.url));
    expect(await changed).toEqual(['loom_agent_first', 'loom_agent_second']);
  });
});

describe('a 2025-era session belongs to the principal that opened it', () => {
  it('answers another key using the session id with 404, as an unknown session: it cannot call, cancel, resume or end it', async () => {
    const { url, host } = await serve(KEYS);
    await host.kernel.spawn(agentManifest('helper-one', model.url));
    const reply = held();
    model.script([{ text: 'Done.', stall: reply.promise }]);
    const ended = nextEvent(served as McpHttpServer, (event) => event.type === 'turn-finish' || event.type === 'turn-cancel');

    let primingId = '';
    let primed: () => void = () => undefined;
    const primedOnce = new Promise<void>((resolve) => (primed = resolve));
    const watching: FetchLike = async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method !== 'POST' || typeof init.body !== 'string' || !init.body.includes('"tools/call"') || response.body === null) return response;
      const [mine, theirs] = response.body.tee();
      void firstSseEvent(new Response(mine)).then(({ event, reader }) => {
        primingId = /^id: (\S+)/.exec(event)?.[1] ?? '';
        primed();
        return reader.cancel();
      });
      return new Response(theirs, { status: response.status, headers: response.headers });
    };
    const { client, transport } = await connect(url, { apiKey: 'helper-secret', fetch: watching });
    const sessionId = transport.sessionId ?? '';
    const call = client.callTool({ name: 'loom_agent_helper_one', arguments: { message: 'go' } });
    await modelRequests(1);
    await primedOnce;

    const unknown = await sessionRequest(url, crypto.randomUUID(), 'admin-secret', {
      method: 'POST',
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(unknown.status).toBe(404);
    const unknownBody = await unknown.text();
    const attempts = [
      { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }) },
      { method: 'GET', headers: { 'last-event-id': primingId } },
      { method: 'DELETE' },
      // Request ids count from 0 in every client: try them all.
      ...[0, 1, 2, 3, 4, 5].map((requestId) => ({
        method: 'POST',
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason: 'not yours' } }),
      })),
    ];
    for (const attempt of attempts) {
      const refused = await sessionRequest(url, sessionId, 'admin-secret', attempt);
      expect({ method: attempt.method, status: refused.status, body: await refused.text() }).toEqual({
        method: attempt.method,
        status: 404,
        body: unknownBody,
      });
    }

    reply.release();
    expect(firstText(await call)).toBe('Done.');
    expect((await ended).type).toBe('turn-finish');
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['loom_agent_helper_one']);
  });
});

describe('2025-era session lifetime', () => {
  it("closes a session idle for 30 minutes on the kernel's clock, keeps one holding a stream, and ends one on DELETE", async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('helper', model.url));
    const idle = await openRawSession(url);
    const listening = await openRawSession(url);
    const stream = await sessionRequest(url, listening, undefined, { method: 'GET' });
    expect(stream.status).toBe(200);
    cleanups.push(() => void stream.body?.cancel().catch(() => undefined));

    await host.clock.advance(DEFAULT_MCP_SESSION_IDLE_MS - 60_000);
    expect(await listInSession(url, idle)).toBe(200);
    await host.clock.advance(DEFAULT_MCP_SESSION_IDLE_MS - 1);
    expect(await listInSession(url, idle)).toBe(200);
    await host.clock.advance(DEFAULT_MCP_SESSION_IDLE_MS);
    expect(await listInSession(url, idle)).toBe(404);
    // Its GET stream is open: not idle, however long it has been.
    expect(await listInSession(url, listening)).toBe(200);

    const ended = await sessionRequest(url, listening, undefined, { method: 'DELETE' });
    expect(ended.status).toBe(200);
    expect(await listInSession(url, listening)).toBe(404);
  });

  it("ends every session and stream when the daemon stops, before its server closes: the session's GET stream and a legacy SSE stream end, and the session is gone", async () => {
    const stopping = new AbortController();
    const { url, host } = await serve({ closing: stopping.signal });
    await host.kernel.spawn(agentManifest('helper', model.url));
    const session = await openRawSession(url);
    const stream = await sessionRequest(url, session, undefined, { method: 'GET' });
    expect(stream.status).toBe(200);
    const legacy = await firstSseEvent(await fetch(`${url}/mcp/sse`, { headers: { accept: 'text/event-stream' } }));
    expect(legacy.event).toContain('event: endpoint');
    const ended = async (reader: ReadableStreamDefaultReader<Uint8Array>): Promise<true> => {
      while (!(await reader.read()).done);
      return true;
    };
    const streams = Promise.all([ended((stream.body as ReadableStream<Uint8Array>).getReader()), ended(legacy.reader)]);

    stopping.abort();
    // Ended by the MCP endpoints (the server still listens), not cut: each reads to its end.
    expect(await streams).toEqual([true, true]);
    expect(await listInSession(url, session)).toBe(503);
  });

  it("refuses, once the daemon stops, to open a session or a stream or to answer a request, with 503 saying why (and the request's id); a session ended is not found", async () => {
    const stopping = new AbortController();
    const { url } = await serve({ closing: stopping.signal });
    const session = await openRawSession(url);
    stopping.abort();
    const answers = await Promise.all(
      [
        fetch(`${url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: ACCEPT }, body: initializeBody(7) }),
        fetch(`${url}/mcp/sse`, { headers: { accept: 'text/event-stream' } }),
        sessionRequest(url, session, undefined, { method: 'GET' }),
        sessionRequest(url, session, undefined, { method: 'DELETE' }),
        fetch(`${url}/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: ACCEPT, 'mcp-protocol-version': MODERN_REVISION },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        }),
      ].map(async (answer) => {
        const response = await answer;
        return { status: response.status, text: await response.text() };
      }),
    );
    expect(answers).toEqual([
      {
        status: 503,
        text: JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'cannot open an MCP session: the daemon is stopping' }, id: 7 }),
      },
      { status: 503, text: 'cannot open an MCP session: the daemon is stopping' },
      {
        status: 503,
        text: JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'cannot open an MCP stream: the daemon is stopping' }, id: null }),
      },
      // As the SDK answers a session it has ended.
      { status: 404, text: JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }) },
      {
        status: 503,
        text: JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'cannot answer an MCP request: the daemon is stopping' }, id: 1 }),
      },
    ]);
  });

  it('keeps a principal to 32 sessions: the 33rd closes its least recently used idle one, and is refused with 429 while all are busy', async () => {
    const { url, host } = await serve({ ...KEYS, config: { ...KEYS.config, rate_limit: { per_minute: 100_000 } } });
    const cap = DEFAULT_MCP_SESSIONS_PER_PRINCIPAL;
    const ids: string[] = [];
    for (let index = 0; index < cap; index++) {
      ids.push(await openRawSession(url, 'helper-secret'));
      await host.clock.advance(1000);
    }
    // The first is used again: the second is now the least recently used.
    expect(await listInSession(url, ids[0] as string, 'helper-secret')).toBe(200);

    const extra = await openRawSession(url, 'helper-secret');
    expect(await listInSession(url, ids[1] as string, 'helper-secret')).toBe(404);
    expect(await listInSession(url, ids[0] as string, 'helper-secret')).toBe(200);
    // Another principal has its own allowance.
    await openRawSession(url, 'admin-secret');

    // Every session of the principal holds a stream: none may be closed for a new one.
    const live = [ids[0] as string, ...ids.slice(2), extra];
    for (const id of live) {
      const stream = await sessionRequest(url, id, 'helper-secret', { method: 'GET' });
      expect(stream.status).toBe(200);
      cleanups.push(() => void stream.body?.cancel().catch(() => undefined));
    }
    const refused = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: ACCEPT, ...bearer('helper-secret') },
      body: initializeBody(),
    });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(`"helper-bot": it has ${cap} sessions open`);
    expect(await listInSession(url, live[0] as string, 'helper-secret')).toBe(200);
  });
});
