/**
 * The daemon's stop and the MCP requests it finds under way (decision 0027): a call admitted before
 * the stop is let finish, its answer written out to the client, before the endpoints close and the
 * server cuts the connections; one that runs past the wait is answered that the daemon is stopping.
 * The stop ends within MCP_DRAIN_MS either way. Over real HTTP, with the official client.
 */
import type { Client } from '@modelcontextprotocol/client';
import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MCP_CALLS_DRAIN_MS, MCP_DRAIN_MS } from '../../src/http/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { agentManifest, type ClientKind, connectClient, firstText, type McpHttpServer, startMcpHttpServer } from './server-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let served: McpHttpServer | undefined;
/** Set once a test has stopped the server itself, as the daemon does. */
let stopped = false;
const clients: Client[] = [];
const cleanups: (() => void)[] = [];

beforeEach(async () => {
  dir = await makeTempDir('loom-mcp-stop-');
  stopped = false;
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  if (stopped) await served?.host.close();
  else await served?.close();
  served = undefined;
  await dir.remove();
});

/** A model reply held until the test lets it go. */
function held(): { promise: Promise<void>; release: () => void } {
  let release: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => (release = resolve));
  cleanups.push(release);
  return { promise, release };
}

/** The daemon's HTTP app and server, with the agent `helper`, and how to stop them as the daemon does. */
async function serveHelper(): Promise<{ url: string; server: McpHttpServer; stop: () => { drained: Promise<void>; closed: Promise<void> } }> {
  const stopping = new AbortController();
  served = await startMcpHttpServer(dir.path, { closing: stopping.signal });
  await served.host.kernel.spawn(agentManifest('helper', model.url));
  const server = served;
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

/** Opens the 2024-11-05 SSE stream on a raw socket; resolves with its session id once the `endpoint` event is read. */
async function openSlowReader(url: string): Promise<{ reader: SlowReader; sessionId: string }> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  cleanups.push(() => socket.destroy());
  let text = '';
  socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(`GET /mcp/sse HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\n\r\n`);
  const sessionId = await waitFor('the endpoint event', () => /sessionId=([0-9a-f-]{36})/.exec(text)?.[1]);
  return { reader: { text: () => text, pause: () => socket.pause(), resume: () => socket.resume(), closed }, sessionId };
}

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

/** A reply larger than a socket's buffers hold: a client that does not read leaves most of it with the server. */
const LONG_REPLY = 'All work and no play. '.repeat(400_000);

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
    expect(await settled(drained)).toBe(false);
    reader.resume();
    await drained;
    await closed;
    await reader.closed;
    const text = reader.text();
    expect(text).toContain(JSON.stringify(LONG_REPLY));
    // The chunked stream's last chunk: the stream was ended, not cut.
    expect(text.endsWith('\r\n0\r\n\r\n')).toBe(true);
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
    expect(reader.text().endsWith('\r\n0\r\n\r\n')).toBe(false);
  });
});
