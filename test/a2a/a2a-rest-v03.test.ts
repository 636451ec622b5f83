import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait-for.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml, type Api, startApi } from '../http/api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-rest-v03-');
  api = await startApi(dir.path, { env: { LOOM_API_KEY: 'secret' } });
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

const auth = { authorization: 'Bearer secret', 'content-type': 'application/json' };

describe('A2A 0.3 HTTP+JSON in the daemon (exact 0.3 request shapes, no A2A-Version header)', () => {
  // The 0.3 proto JSON the SDK reads and writes (`request`, `content`), as its 0.3 client sends it.
  it('POST /a2a/{agent}/v1/message:send runs the task, GET /v1/tasks/{id} returns it, behind the API key', async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'Hello over 0.3 REST.' }]);
    const body = JSON.stringify({ request: { messageId: 'm-1', role: 'ROLE_USER', content: [{ text: 'Hi' }] } });
    expect((await api.request('/a2a/echo/v1/message:send', { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status).toBe(401);
    const sent = await api.request('/a2a/echo/v1/message:send', { method: 'POST', headers: auth, body });
    expect(sent.status).toBe(201); // the SDK's 0.3 router answers message:send with 201
    const result = (await sent.json()) as { task?: { id: string; status: { state: string }; artifacts: { parts: { text?: string }[] }[] } };
    expect(result.task?.status.state).toBe('TASK_STATE_COMPLETED');
    expect(result.task?.artifacts.flatMap((artifact) => artifact.parts.map((part) => part.text ?? '')).join('')).toBe('Hello over 0.3 REST.');
    const id = result.task?.id ?? '';
    const fetched = await api.request(`/a2a/echo/v1/tasks/${id}`, { headers: auth });
    expect(fetched.status).toBe(200);
    expect(await fetched.json()).toMatchObject({ id, status: { state: 'TASK_STATE_COMPLETED' } });
    const unknown = await api.request('/a2a/echo/v1/tasks/nope', { headers: auth });
    expect(unknown.status).toBe(404);
  });
});

/** What a client reads of an answer, less the headers that say how it travelled (its date, the connection, its framing). */
async function answerOf(response: Response): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const headers = Object.fromEntries([...response.headers].filter(([name]) => !['date', 'connection', 'keep-alive', 'transfer-encoding'].includes(name)));
  return { status: response.status, headers, body: await response.text() };
}

/** A task of agent `echo`, run to its end over 0.3 HTTP+JSON. */
async function echoTask(): Promise<string> {
  await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
  model.script([{ text: 'Hello over 0.3 REST.' }]);
  const body = JSON.stringify({ request: { messageId: 'm-1', role: 'ROLE_USER', content: [{ text: 'Hi' }] } });
  const sent = await api.request('/a2a/echo/v1/message:send', { method: 'POST', headers: auth, body });
  expect(sent.status).toBe(201);
  return ((await sent.json()) as { task: { id: string } }).task.id;
}

describe("A2A 0.3 HTTP+JSON's answers", () => {
  it('answer a HEAD as its GET, without the body: a task, an unknown task, a route that takes only a POST, an unknown route', async () => {
    const id = await echoTask();
    const paths = [`/a2a/echo/v1/tasks/${id}`, '/a2a/echo/v1/tasks/nope', '/a2a/echo/v1/card', '/a2a/echo/v1/message:send', '/a2a/echo/v1/no-such-route'];
    for (const path of paths) {
      const get = await answerOf(await api.request(path, { headers: auth }));
      expect(get.body).not.toBe('');
      const head = await answerOf(await api.request(path, { method: 'HEAD', headers: auth }));
      // The not-found answer is streamed (no Content-Length) to a GET, and has no body to a HEAD.
      expect({ path, ...head }).toEqual({ path, ...get, body: '' });
    }
    expect((await api.request('/a2a/echo/v1/tasks/nope', { method: 'HEAD', headers: auth })).status).toBe(404);
    expect((await api.request(`/a2a/echo/v1/tasks/${id}`, { method: 'HEAD', headers: auth })).status).toBe(200);
  });

  it("answer a HEAD of a running task's subscription with the stream's headers alone, and hold no subscription open", async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    let release: () => void = () => undefined;
    model.script([{ text: 'Done at last.', gate: new Promise<void>((resolve) => (release = resolve)) }]);
    const body = JSON.stringify({ request: { messageId: 'm-1', role: 'ROLE_USER', content: [{ text: 'Hi' }] }, configuration: { blocking: false } });
    const sent = await api.request('/a2a/echo/v1/message:send', { method: 'POST', headers: auth, body });
    const id = ((await sent.json()) as { task: { id: string } }).task.id;
    // A HEAD, then a GET on the same connection: Node answers the GET once the HEAD's answer has ended.
    const { port } = new URL(api.url);
    const socket = connect(Number(port), '127.0.0.1');
    let read = '';
    socket.on('data', (chunk: Buffer) => (read += chunk.toString('latin1')));
    const head = `HEAD /a2a/echo/v1/tasks/${id}:subscribe HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: Bearer secret\r\n\r\n`;
    socket.write(`${head}GET /api/health HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`);
    try {
      // While the task still runs: the subscription's answer ended with its headers.
      await waitFor('the answer to the GET after the HEAD', () => read.includes('"status"'));
      const headAnswer = read.slice(0, read.indexOf('\r\n\r\n')).toLowerCase();
      expect(headAnswer).toMatch(/^http\/1\.1 200 /);
      expect(headAnswer).toContain('content-type: text/event-stream');
      expect(headAnswer).toContain("content-security-policy: default-src 'none'; frame-ancestors 'none'");
      const task = await api.request(`/a2a/echo/v1/tasks/${id}`, { headers: auth });
      expect(await task.json()).toMatchObject({ status: { state: 'TASK_STATE_WORKING' } });
    } finally {
      socket.destroy();
      release();
    }
  });

  it("and so does 1.0's HTTP+JSON: a HEAD as its GET, a running task's subscription with the stream's headers alone, a path that does not decode 400", async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    let release: () => void = () => undefined;
    model.script([{ text: 'Done at last.', gate: new Promise<void>((resolve) => (release = resolve)) }]);
    const body = JSON.stringify({ message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'Hi' }] }, configuration: { returnImmediately: true } });
    const sent = await api.request('/a2a/echo/rest/message:send', { method: 'POST', headers: auth, body });
    const id = ((await sent.json()) as { task: { id: string } }).task.id;
    try {
      for (const path of [`/a2a/echo/rest/tasks/${id}`, '/a2a/echo/rest/tasks/nope', '/a2a/echo/rest/tasks', '/a2a/echo/rest/message:send']) {
        const get = await answerOf(await api.request(path, { headers: auth }));
        const head = await answerOf(await api.request(path, { method: 'HEAD', headers: auth }));
        const { 'content-length': length, ...headers } = get.headers;
        const { 'content-length': headLength, ...headHeaders } = head.headers;
        expect({ path, ...head, headers: headHeaders }).toEqual({ path, ...get, headers, body: '' });
        // Its Content-Length too, its GET's (RFC 9110 §8.6), a 404 naming GET included.
        expect(headLength).toBe(length);
      }
      const subscription = await api.request(`/a2a/echo/rest/tasks/${id}:subscribe`, { method: 'HEAD', headers: auth });
      expect({ status: subscription.status, type: subscription.headers.get('content-type'), body: await subscription.text() }).toEqual({
        status: 200,
        type: 'text/event-stream',
        body: '',
      });
      const task = await api.request(`/a2a/echo/rest/tasks/${id}`, { headers: auth });
      expect(await task.json()).toMatchObject({ status: { state: 'TASK_STATE_WORKING' } });
    } finally {
      release();
    }
    const undecodable = await api.request('/a2a/echo/rest/tasks/%E0%A4%A', { headers: auth });
    expect({ status: undecodable.status, body: await undecodable.json() }).toMatchObject({
      status: 400,
      body: {
        error: { code: 400, status: 'INVALID_ARGUMENT', message: 'cannot read GET /a2a/echo/rest/tasks/%E0%A4%A: a percent-escape in it does not decode' },
      },
    });
  });

  it('answer a HEAD of a subscription the GET refuses as the GET, on both bindings: an unknown task, an ended task', async () => {
    const id = await echoTask();
    for (const binding of ['v1', 'rest']) {
      for (const task of ['nope', id]) {
        const path = `/a2a/echo/${binding}/tasks/${task}:subscribe`;
        const get = await answerOf(await api.request(path, { headers: auth }));
        expect(get.status).toBeGreaterThanOrEqual(400);
        const head = await answerOf(await api.request(path, { method: 'HEAD', headers: auth }));
        const { 'content-length': _getLength, ...headers } = get.headers;
        const { 'content-length': _headLength, ...headHeaders } = head.headers;
        expect({ path, ...head, headers: headHeaders }).toEqual({ path, ...get, headers, body: '' });
      }
    }
  });

  it("leave no request deadline waiting after a HEAD of a running task's subscription, on both bindings, nor under a GET of it however spelled", async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    let release: () => void = () => undefined;
    model.script([{ text: 'Done at last.', gate: new Promise<void>((resolve) => (release = resolve)) }]);
    const body = JSON.stringify({ message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'Hi' }] }, configuration: { returnImmediately: true } });
    const sent = await api.request('/a2a/echo/rest/message:send', { method: 'POST', headers: auth, body });
    const id = ((await sent.json()) as { task: { id: string } }).task.id;
    try {
      for (const binding of ['rest', 'v1']) {
        const pending = api.host.clock.pending();
        const head = await api.request(`/a2a/echo/${binding}/tasks/${id}:subscribe`, { method: 'HEAD', headers: auth });
        expect({ binding, status: head.status, type: head.headers.get('content-type'), body: await head.text() }).toEqual({
          binding,
          status: 200,
          type: 'text/event-stream',
          body: '',
        });
        // The request's deadline (300 s on the daemon's clock) would keep a stopped daemon's process up.
        expect({ binding, pending: api.host.clock.pending() }).toEqual({ binding, pending });
      }
      // Nor does a GET of it spelled with an escape or a trailing slash, which streams as its plain spelling does.
      for (const spelling of [`${id}%3Asubscribe`, `${id}:subscribe/`]) {
        const pending = api.host.clock.pending();
        const stream = await api.request(`/a2a/echo/rest/tasks/${spelling}`, { headers: auth });
        expect({ spelling, status: stream.status, type: stream.headers.get('content-type') }).toEqual({ spelling, status: 200, type: 'text/event-stream' });
        expect({ spelling, pending: api.host.clock.pending() }).toEqual({ spelling, pending });
        await stream.body?.cancel();
      }
    } finally {
      release();
    }
  });

  it("carry the API's security headers, the router's own errors and 404s included", async () => {
    const id = await echoTask();
    const requests: [string, RequestInit][] = [
      [`/a2a/echo/v1/tasks/${id}`, { headers: auth }],
      ['/a2a/echo/v1/tasks/nope', { headers: auth }],
      ['/a2a/echo/v1/card', { headers: auth }],
      ['/a2a/echo/v1/no-such-route', { headers: auth }],
      ['/a2a/echo/v1/tasks/nope:cancel', { method: 'POST', headers: auth, body: '{}' }],
      ['/a2a/echo/v1/message:send', { method: 'POST', headers: { ...auth, 'content-type': 'text/plain' }, body: 'hi' }],
      ['/a2a/echo/v1/tasks/nope', { method: 'HEAD', headers: auth }],
    ];
    for (const [path, init] of requests) {
      const response = await api.request(path, init);
      await response.body?.cancel();
      expect({ path, method: init.method ?? 'GET', headers: Object.fromEntries(response.headers) }).toMatchObject({
        path,
        method: init.method ?? 'GET',
        headers: {
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
          'x-frame-options': 'DENY',
        },
      });
    }
  });

  it("answer a path that does not decode with the router's JSON error: 400, the API's security headers, no stack", async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    const response = await api.request('/a2a/echo/v1/tasks/%E0%A4%A', { headers: auth });
    const text = await response.text();
    expect({ status: response.status, type: response.headers.get('content-type'), body: JSON.parse(text) as unknown }).toEqual({
      status: 400,
      type: 'application/json',
      body: { code: -32600, message: "cannot read GET /a2a/echo/v1/tasks/%E0%A4%A: Failed to decode param '%E0%A4%A'" },
    });
    expect(text).not.toMatch(/URIError|node_modules|\s+at /);
    expect(Object.fromEntries(response.headers)).toMatchObject({
      'x-content-type-options': 'nosniff',
      'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
      'x-frame-options': 'DENY',
    });
  });

  it('name the whole path the client asked for, the agent with it, when no route takes it (and so does 1.0)', async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    const answers = await Promise.all(
      ['/a2a/echo/v1/message:send', '/a2a/echo/v1/no-such-route?x=1', '/a2a/echo/rest/no-such-route'].map(async (path) => {
        const response = await api.request(path, { headers: auth });
        return { status: response.status, body: await response.json() };
      }),
    );
    expect(answers).toEqual([
      { status: 404, body: { code: -32601, message: 'no A2A route GET /a2a/echo/v1/message:send' } },
      { status: 404, body: { code: -32601, message: 'no A2A route GET /a2a/echo/v1/no-such-route' } },
      { status: 404, body: { error: { code: 404, status: 'NOT_FOUND', message: 'no A2A route GET /a2a/echo/rest/no-such-route' } } },
    ]);
  });
});
