/**
 * The daemon's stop and the MCP requests it finds under way (decision 0027): a call admitted before
 * the stop is let finish, its answer written out to the client, before the endpoints close and the
 * server cuts the connections; one that runs past the wait is answered that the daemon is stopping.
 * The stop ends within MCP_DRAIN_MS either way. Over real HTTP, with the official client.
 */
import type { Client } from '@modelcontextprotocol/client';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MCP_CALLS_DRAIN_MS, MCP_DRAIN_MS } from '../../src/http/index.ts';
import { MCP_PRINCIPAL_NAME } from '../../src/mcp/server/index.ts';
import { useDaemonFolder } from '../support/daemon-folder.ts';
import { mcpSessionHeaders, openMcpSession } from '../support/open-mcp-session.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { agentManifest, type ClientKind, connectClient, firstText, type McpHttpServer, startMcpHttpServer } from './server-harness.ts';

const model = useScriptedModelServer();
const folder = useDaemonFolder('loom-mcp-stop-');
/** Set once a test has stopped the server itself, as the daemon does. */
let stopped = false;
const clients: Client[] = [];
const cleanups: (() => void)[] = [];

beforeEach(() => {
  stopped = false;
});
// Before the folder's own hook closes the server.
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
});

/** A model reply held until the test lets it go. */
function held(): { promise: Promise<void>; release: () => void } {
  let release: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (release = resolve));
  cleanups.push(release);
  return { promise, release };
}

/** The daemon's HTTP app and server, with the agent `helper`, and how to stop them as the daemon does. */
async function serveHelper(
  config?: Record<string, unknown>,
): Promise<{ url: string; server: McpHttpServer; stop: () => { drained: Promise<void>; closed: Promise<void> } }> {
  const stopping = new AbortController();
  // Every client on loopback, as the in-process requests below say they are.
  const server = await startMcpHttpServer(folder.dir, { closing: stopping.signal, clientAddress: '127.0.0.1', ...(config === undefined ? {} : { config }) });
  folder.closeAfter(() => (stopped ? server.host.close() : server.close()));
  await server.host.kernel.spawn(agentManifest('helper', model.url));
  return {
    url: server.url,
    server,
    // As `startDaemon`'s stop: the doors close, the server stops listening and cuts what is left once they are written out.
    stop: () => {
      stopped = true;
      stopping.abort();
      const drained = server.app.doorsClosed();
      return { drained, closed: server.server.close(drained) };
    },
  };
}

/** Whether `promise` has settled, once what is ready has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe.each<ClientKind>(['legacy-streamable', 'modern', 'legacy-sse'])('the daemon stopped while a %s client waits for a tools/call', (kind) => {
  it('lets the call finish: the client gets its result, then the stop ends, before MCP_DRAIN_MS', async () => {
    const { url, stop } = await serveHelper();
    const reply = held();
    model.script([{ text: 'Finished just in time.', stall: reply.promise }]);
    const client = await connectClient(url, kind);
    clients.push(client);
    const call = client.callTool({ name: 'loom_agent_helper', arguments: { message: 'Take your time.' } });
    await waitFor('the turn to reach the model', () => model.requests.length === 1);

    const { drained, closed } = stop();
    expect(await settled(drained)).toBe(false);
    // The clock is not moved: the stop goes on once the result is written out.
    reply.release();
    expect(firstText(await call)).toBe('Finished just in time.');
    await drained;
    await closed;
  });

  it('answers a call still running MCP_CALLS_DRAIN_MS after the stop began that the daemon is stopping, and the stop ends before MCP_DRAIN_MS', async () => {
    const { url, server, stop } = await serveHelper();
    const reply = held();
    model.script([{ text: 'Never in time.', stall: reply.promise }]);
    const client = await connectClient(url, kind);
    clients.push(client);
    const call = client.callTool({ name: 'loom_agent_helper', arguments: { message: 'Take all the time you need.' } });
    await waitFor('the turn to reach the model', () => model.requests.length === 1);

    const { drained, closed } = stop();
    await server.host.clock.advance(MCP_CALLS_DRAIN_MS - 1);
    expect(await settled(call)).toBe(false);
    expect(await settled(drained)).toBe(false);
    await server.host.clock.advance(1);
    const result = (await call) as { isError?: boolean };
    expect(result.isError).toBe(true);
    expect(firstText(result)).toBe(
      `cannot finish the call: the daemon is stopping, and the call was still running ${MCP_CALLS_DRAIN_MS / 1000} s after the stop began; it was cancelled, call again once the daemon is back`,
    );
    // Written out before MCP_DRAIN_MS: the clock moves no more.
    await drained;
    await closed;
  });

  it('does not wait for the answer of a call the client cancelled: the stop ends once the call has, the clock not moved', async () => {
    const { url, server, stop } = await serveHelper();
    const reply = held();
    model.script([{ text: 'Never read.', stall: reply.promise }]);
    const client = await connectClient(url, kind);
    clients.push(client);
    const cancel = new AbortController();
    const call = client.callTool({ name: 'loom_agent_helper', arguments: { message: 'Take your time.' } }, { signal: cancel.signal });
    await waitFor('the turn to reach the model', () => model.requests.length === 1);
    const cancelled = new Promise((resolve) => server.host.kernel.events.subscribe((event) => event.type === 'turn-cancel' && resolve(event)));
    cancel.abort();
    await expect(call).rejects.toThrow();
    await cancelled;

    // The server sends no answer to a cancelled call: the stop waits for the call alone, not for that answer.
    const { drained, closed } = stop();
    await waitFor('the stop to end', () => settled(drained));
    await closed;
  });

  it('lets its cancel during the stop reach the call, over HTTP: the turn is cancelled, and the stop ends, the clock not moved', async () => {
    const { url, server, stop } = await serveHelper();
    model.script([{ text: 'Never read.', stall: held().promise }]);
    const client = await connectClient(url, kind);
    clients.push(client);
    // The client tells its failures to send (a cancel refused a connection) to `onerror`.
    const unsent: string[] = [];
    client.onerror = (error) => void (/cancellation/i.test(String(error)) && unsent.push(String(error)));
    const cancel = new AbortController();
    const call = client.callTool({ name: 'loom_agent_helper', arguments: { message: 'Take your time.' } }, { signal: cancel.signal });
    await waitFor('the turn to reach the model', () => model.requests.length === 1);
    let cancelled = false;
    server.host.kernel.events.subscribe((event) => void (event.type === 'turn-cancel' && (cancelled = true)));

    // The server no longer listens, but the client's connections stay open until the stop ends: its cancel goes on an idle one.
    const { drained, closed } = stop();
    cancel.abort();
    await expect(call).rejects.toThrow();
    await waitFor('the cancel to reach the turn, or to fail', () => cancelled || unsent.length > 0);
    expect(unsent).toEqual([]);
    await waitFor('the stop to end', () => settled(drained));
    await closed;
  });

  it('lets a resources/read under way at the stop finish: the client gets the resource, then the stop ends', async () => {
    const { url, server, stop } = await serveHelper();
    const client = await connectClient(url, kind);
    clients.push(client);
    // The read of the session (a database round trip on PostgreSQL) held until the test lets it go.
    const { kernel } = server.host;
    const session = kernel.session.bind(kernel);
    const read = held();
    let reading = false;
    const spy = vi.spyOn(kernel, 'session').mockImplementation(async (...args) => {
      reading = true;
      await read.promise;
      return session(...args);
    });
    cleanups.push(() => spy.mockRestore());
    const resource = client.readResource({ uri: 'loom://agents/helper/session' });
    await waitFor('the read to reach the kernel', () => reading);

    const { drained, closed } = stop();
    expect(await settled(drained)).toBe(false);
    read.release();
    const { contents } = await resource;
    expect(JSON.parse((contents[0] as { text: string }).text)).toMatchObject({ agent: 'helper', messages: [], running: null });
    await drained;
    await closed;
  });

  it("answers a resources/read still running MCP_CALLS_DRAIN_MS after the stop began that the daemon is stopping, in a read's words", async () => {
    const { url, server, stop } = await serveHelper();
    const client = await connectClient(url, kind);
    clients.push(client);
    let reading = false;
    // A read that never ends by itself.
    const spy = vi.spyOn(server.host.kernel, 'session').mockImplementation(() => {
      reading = true;
      return new Promise(() => undefined);
    });
    cleanups.push(() => spy.mockRestore());
    const resource = client.readResource({ uri: 'loom://agents/helper/session' });
    const outcome = resource.then(
      () => 'read',
      (error: unknown) => (error as Error).message,
    );
    await waitFor('the read to reach the kernel', () => reading);

    const { drained, closed } = stop();
    await server.host.clock.advance(MCP_CALLS_DRAIN_MS);
    expect(await outcome).toContain(
      `cannot read the session: the daemon is stopping, and the read was still running ${MCP_CALLS_DRAIN_MS / 1000} s after the stop began; it was cancelled, read it again once the daemon is back`,
    );
    await drained;
    await closed;
  });

  it('does not wait for the stream the client listens on for list changes: the stop ends it, the clock not moved', async () => {
    const { url, server, stop } = await serveHelper();
    let changed = false;
    const client = await connectClient(url, kind, { clientOptions: { listChanged: { tools: { debounceMs: 0, onChanged: () => (changed = true) } } } });
    clients.push(client);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['loom_agent_helper']);
    // Its stream is open: a spawn reaches it.
    await server.host.kernel.spawn(agentManifest('second', model.url));
    await waitFor('the list change', () => changed);
    const { drained, closed } = stop();
    await drained;
    await closed;
  });
});

/** A client on a raw socket that reads only when told: what it has read, and whether the server has closed the connection. */
interface SlowReader {
  text: () => string;
  /** Stops reading: what the server writes waits in its buffers. */
  pause(): void;
  resume(): void;
  closed: Promise<void>;
}

/** Sends `head` (a request's line and headers) and `body` on a raw socket, and reads what comes back as it comes. */
function openRaw(url: string, head: string, body = ''): SlowReader {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  cleanups.push(() => socket.destroy());
  let text = '';
  socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(`${head}\r\nHost: ${hostname}:${port}\r\n${body === '' ? '' : `Content-Length: ${Buffer.byteLength(body)}\r\n`}\r\n${body}`);
  return { text: () => text, pause: () => socket.pause(), resume: () => socket.resume(), closed };
}

/** Opens the 2024-11-05 SSE stream on a raw socket; resolves with its session id once the `endpoint` event is read. */
async function openSlowReader(url: string): Promise<{ reader: SlowReader; sessionId: string }> {
  const reader = openRaw(url, 'GET /mcp/sse HTTP/1.1\r\nAccept: text/event-stream');
  const sessionId = await waitFor('the endpoint event', () => /sessionId=([0-9a-f-]{36})/.exec(reader.text())?.[1]);
  return { reader, sessionId };
}

/** The end of a chunked answer: a stream that shows it was ended, not cut. */
const ENDED = '\r\n0\r\n\r\n';

/** POSTs a JSON-RPC message to a 2024-11-05 session: the answer comes on its stream. */
async function postMessage(url: string, sessionId: string, message: object): Promise<void> {
  const response = await fetch(`${url}/mcp/messages?sessionId=${sessionId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', ...message }),
  });
  expect(response.status).toBe(202);
  await response.text();
}

/**
 * A reply larger than a connection's buffers hold while its client reads nothing (the receive
 * buffer does not grow then, the send buffer may grow to its maximum), twice over: the server keeps
 * the rest. Sized from the machine's TCP settings where it has them.
 */
const LONG_REPLY = (() => {
  const MAX_LONG_REPLY = 16 * 1024 * 1024;
  const setting = (name: string, index: number, otherwise: number): number => {
    try {
      return Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[index]) || otherwise;
    } catch {
      return otherwise;
    }
  };
  const buffered = setting('tcp_rmem', 1, 131_072) + setting('tcp_wmem', 2, 4_194_304);
  const line = 'All work and no play. ';
  // At most 16 MB: a send buffer grows to its maximum only as the connection's window does, which a
  // client reading nothing keeps small, and hosts whose maximum is 16-64 MB would push 130-260 MB.
  return line.repeat(Math.ceil(Math.min(2 * buffered, MAX_LONG_REPLY) / line.length));
})();

/** Opens a raw slow stream, has a call answered on it with {@link LONG_REPLY} while the client reads nothing, and stops the daemon. */
async function stopWhileUnread(): Promise<{ server: McpHttpServer; reader: SlowReader; drained: Promise<void>; closed: Promise<void> }> {
  const { url, server, stop } = await serveHelper();
  model.script([{ text: LONG_REPLY }]);
  const { reader, sessionId } = await openSlowReader(url);
  reader.pause();
  await postMessage(url, sessionId, {
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'slow-reader', version: '1.0.0' } },
  });
  await postMessage(url, sessionId, { method: 'notifications/initialized' });
  const finished = new Promise((resolve) => server.host.kernel.events.subscribe((event) => event.type === 'turn-finish' && resolve(event)));
  await postMessage(url, sessionId, { id: 1, method: 'tools/call', params: { name: 'loom_agent_helper', arguments: { message: 'Write at length.' } } });
  await finished;
  return { server, reader, ...stop() };
}

describe("the daemon's stop and a client that reads its MCP stream slowly, on a real socket", () => {
  it('waits for the client to read the last bytes of its stream, the answer and its end, then goes on before MCP_DRAIN_MS', async () => {
    const { server, reader, drained, closed } = await stopWhileUnread();
    await server.host.clock.advance(MCP_DRAIN_MS - 1);
    expect(await settled(drained), 'the server still holds part of the reply (LONG_REPLY is larger than the socket buffers)').toBe(false);
    reader.resume();
    await drained;
    await closed;
    await reader.closed;
    const text = reader.text();
    expect(text).toContain(JSON.stringify(LONG_REPLY));
    // The chunked stream's last chunk: the stream was ended, not cut.
    expect(text.endsWith(ENDED)).toBe(true);
  });

  it('cuts a client that has not read its stream MCP_DRAIN_MS after the stop began, and the stop goes on', async () => {
    const { server, reader, drained, closed } = await stopWhileUnread();
    await server.host.clock.advance(MCP_DRAIN_MS - 1);
    expect(await settled(drained)).toBe(false);
    await server.host.clock.advance(1);
    await drained;
    await closed;
    reader.resume();
    await reader.closed;
    expect(reader.text().endsWith(ENDED)).toBe(false);
  });
});

/** What a request on a kept connection got, and whether it went on the connection opened before. */
interface KeptAnswer {
  status: number;
  text: string;
  reused: boolean;
}

/**
 * A client's connection kept alive across the stop (a Node agent of one socket), opened by a first
 * request before it: the requests sent with it go on that connection.
 */
async function keptConnection(
  url: string,
): Promise<(path: string, init: { method: string; headers?: Record<string, string>; body?: string }) => Promise<KeptAnswer>> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  cleanups.push(() => agent.destroy());
  const send = (path: string, init: { method: string; headers?: Record<string, string>; body?: string }): Promise<KeptAnswer> =>
    new Promise((resolve, reject) => {
      const outgoing = httpRequest(`${url}${path}`, { method: init.method, headers: init.headers ?? {}, agent });
      outgoing
        .on('response', (response) => {
          let text = '';
          response
            .setEncoding('utf8')
            .on('data', (chunk: string) => (text += chunk))
            .on('end', () => resolve({ status: response.statusCode ?? 0, text, reused: outgoing.reusedSocket }));
        })
        .on('error', reject)
        .end(init.body);
    });
  expect((await send('/api/health', { method: 'GET' })).status).toBe(200);
  return send;
}

/** The error of a new connection to `url`'s server. */
function newConnectionError(url: string): Promise<string | undefined> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code));
  });
}

const CALL = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'loom_agent_helper', arguments: { message: 'Take your time.' } } };
const CANCEL = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'no longer needed' } };

describe('a client during the stop, while its call still runs', () => {
  // The server stops listening at the stop: the requests after it go on a connection the client opened before, kept alive.
  it('on a 2025-era session: its cancel reaches the call, a new request is refused, and the stop ends once the call has, the clock not moved', async () => {
    const { url, server, stop } = await serveHelper();
    model.script([{ text: 'Never read.', stall: held().promise }]);
    const sessionId = await openMcpSession(url);
    const call = await fetch(`${url}/mcp`, { method: 'POST', headers: mcpSessionHeaders(sessionId), body: JSON.stringify(CALL) });
    void call.text().catch(() => undefined);
    await waitFor('the turn to reach the model', () => model.requests.length === 1);
    const cancelled = new Promise((resolve) => server.host.kernel.events.subscribe((event) => event.type === 'turn-cancel' && resolve(event)));
    const send = await keptConnection(url);

    const { drained, closed } = stop();
    expect(await newConnectionError(url)).toBe('ECONNREFUSED');
    const refused = await send('/mcp', { method: 'POST', headers: mcpSessionHeaders(sessionId), body: JSON.stringify({ ...CALL, id: 2 }) });
    expect({ status: refused.status, body: JSON.parse(refused.text) as unknown, reused: refused.reused }).toEqual({
      status: 503,
      body: { jsonrpc: '2.0', error: { code: -32000, message: 'cannot answer an MCP request: the daemon is stopping' }, id: 2 },
      reused: true,
    });
    const cancel = await send('/mcp', { method: 'POST', headers: mcpSessionHeaders(sessionId), body: JSON.stringify(CANCEL) });
    expect({ status: cancel.status, reused: cancel.reused }).toEqual({ status: 202, reused: true });
    await cancelled;
    await waitFor('the stop to end', () => settled(drained));
    await closed;
  });

  it('on a 2025-era session: its DELETE ends the session and cancels the call, and the stop ends, the clock not moved', async () => {
    const { url, server, stop } = await serveHelper();
    model.script([{ text: 'Never read.', stall: held().promise }]);
    const sessionId = await openMcpSession(url);
    const call = await fetch(`${url}/mcp`, { method: 'POST', headers: mcpSessionHeaders(sessionId), body: JSON.stringify(CALL) });
    void call.text().catch(() => undefined);
    await waitFor('the turn to reach the model', () => model.requests.length === 1);
    const cancelled = new Promise((resolve) => server.host.kernel.events.subscribe((event) => event.type === 'turn-cancel' && resolve(event)));
    const send = await keptConnection(url);

    const { drained, closed } = stop();
    const ended = await send('/mcp', { method: 'DELETE', headers: mcpSessionHeaders(sessionId) });
    expect({ status: ended.status, reused: ended.reused }).toEqual({ status: 200, reused: true });
    await cancelled;
    await waitFor('the stop to end', () => settled(drained));
    await closed;
    // Ended: the session is gone (asked in-process: the server has closed).
    const again = await server.app.request('/mcp', { method: 'DELETE', headers: mcpSessionHeaders(sessionId) });
    expect(again.status).toBe(404);
  });

  it('on a 2024-11-05 stream: its cancel reaches the call, and the stop ends once the call has, its stream ended, the clock not moved', async () => {
    const { url, server, stop } = await serveHelper();
    model.script([{ text: 'Never read.', stall: held().promise }]);
    const { reader, sessionId } = await openSlowReader(url);
    await postMessage(url, sessionId, {
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'raw-client', version: '1.0.0' } },
    });
    await postMessage(url, sessionId, { method: 'notifications/initialized' });
    await postMessage(url, sessionId, CALL);
    await waitFor('the turn to reach the model', () => model.requests.length === 1);
    const cancelled = new Promise((resolve) => server.host.kernel.events.subscribe((event) => event.type === 'turn-cancel' && resolve(event)));
    const send = await keptConnection(url);

    const { drained, closed } = stop();
    const post = (message: object) =>
      send(`/mcp/messages?sessionId=${sessionId}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(message) });
    const refused = await post({ ...CALL, id: 2 });
    expect(refused).toEqual({ status: 503, text: 'cannot answer an MCP message: the daemon is stopping', reused: true });
    expect(await post(CANCEL)).toMatchObject({ status: 202, reused: true });
    await cancelled;
    await waitFor('the stop to end', () => settled(drained));
    await closed;
    await reader.closed;
    expect(reader.text().endsWith(ENDED)).toBe(true);
  });
});

describe("the daemon's stop and a 2025-era client that does not read its calls' answers, on a real socket", () => {
  it("ends the other clients' streams at once, the clock not moved: it waits for calls, not for clients to read", async () => {
    const { url, server, stop } = await serveHelper();
    model.script([{ text: LONG_REPLY }, { text: LONG_REPLY }]);
    const sessionId = await openMcpSession(url);
    let finished = 0;
    server.host.kernel.events.subscribe((event) => void (event.type === 'turn-finish' && (finished += 1)));
    const headers = Object.entries(mcpSessionHeaders(sessionId))
      .filter(([name]) => name !== 'host')
      .map(([name, value]) => `${name}: ${value}`)
      .join('\r\n');
    // Two calls in one POST (a batch): their answers come on one stream, which the client does not read.
    const slow = openRaw(url, `POST /mcp HTTP/1.1\r\n${headers}`, JSON.stringify([CALL, { ...CALL, id: 2 }]));
    slow.pause();
    await waitFor('both turns to finish', () => finished === 2);
    // Another client, which reads its 2024-11-05 stream.
    const { reader: other } = await openSlowReader(url);

    const { drained, closed } = stop();
    await waitFor("the other client's stream to end", () => other.text().endsWith(ENDED));
    expect(await settled(drained), 'the server still holds part of the answers (LONG_REPLY is larger than the socket buffers)').toBe(false);
    await server.host.clock.advance(MCP_DRAIN_MS);
    await drained;
    await closed;
  });
});

/** A command that runs long, once it has said it started. */
const LONG_COMMAND = "sh -c 'touch started; sleep 30'";

describe("the daemon's stop and a call of the installation's own tools", () => {
  it('answers one still running MCP_CALLS_DRAIN_MS after the stop began with a tool error saying why, as for an agent', async () => {
    const { url, server, stop } = await serveHelper({ mcp_server: { capabilities: { tools: ['shell_exec'], shell: [LONG_COMMAND] } } });
    const workspace = join(server.host.home.workspacesDir, MCP_PRINCIPAL_NAME);
    await mkdir(workspace, { recursive: true });
    const client = await connectClient(url, 'modern');
    clients.push(client);
    const call = client.callTool({ name: 'shell_exec', arguments: { command: LONG_COMMAND } });
    await waitFor('the command to run', () => existsSync(join(workspace, 'started')));

    const { drained, closed } = stop();
    await server.host.clock.advance(MCP_CALLS_DRAIN_MS);
    const result = (await call) as { isError?: boolean };
    expect({ isError: result.isError, text: firstText(result) }).toEqual({
      isError: true,
      text: `cannot finish the call: the daemon is stopping, and the call was still running ${MCP_CALLS_DRAIN_MS / 1000} s after the stop began; it was cancelled, call again once the daemon is back`,
    });
    await drained;
    await closed;
  });
});
