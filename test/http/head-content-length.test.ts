/**
 * A HEAD is answered with the head of its GET, `Content-Length` included where the GET's body has a
 * known length (JSON, the dashboard's files, A2A's cards, an error), so a client learns a size
 * without the body; a stream's HEAD states none. Over real HTTP, on one kept-alive connection.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { headContentLength } from '../../src/http/head-content-length.ts';
import { LOCAL_OWNER } from '../../src/access/index.ts';
import { createLegacySseEndpoints } from '../../src/mcp/server/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { agentToml, type Api, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

beforeEach(async () => {
  dir = await makeTempDir('loom-http-head-');
  await mkdir(join(dir.path, 'dist', 'assets'), { recursive: true });
  await writeFile(join(dir.path, 'dist', 'index.html'), '<!doctype html><title>Loom</title><script type="module" src="/assets/index-abc123.js"></script>');
  await writeFile(join(dir.path, 'dist', 'assets', 'index-abc123.js'), 'document.title = "Loom — ünïcode";');
  api = await startApi(join(dir.path, 'home'), { config: { a2a: { enabled: true } }, env: { LOOM_DASHBOARD_DIR: join(dir.path, 'dist') } });
  const spawned = await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('helper', model.url) });
  expect(spawned.status).toBe(201);
});
afterEach(async () => {
  agent.destroy();
  await api.close();
  await dir.remove();
});

interface Answer {
  status: number;
  contentLength: string | undefined;
  /** The bytes of the body read. */
  bytes: number;
  /** Whether the request went on a connection an earlier one had used. */
  reused: boolean;
}

/** `method path`'s answer, as a Node client reads it off the wire. */
function ask(method: string, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(`${api.url}${path}`, { method, agent });
    outgoing
      .on('response', (response) => {
        let bytes = 0;
        response
          .on('data', (chunk: Buffer) => (bytes += chunk.length))
          .on('end', () =>
            resolve({ status: response.statusCode ?? 0, contentLength: response.headers['content-length'], bytes, reused: outgoing.reusedSocket }),
          );
      })
      .on('error', reject)
      .end();
  });
}

describe('HEAD', () => {
  it.each([
    ['the OpenAPI document', '/api/openapi.json', 200],
    ['the health', '/api/health', 200],
    ['the dashboard page', '/', 200],
    ['a dashboard asset (multi-byte characters)', '/assets/index-abc123.js', 200],
    ["A2A's agent card", '/a2a/helper/.well-known/agent-card.json', 200],
    ['an agent that does not exist (a JSON error)', '/api/agents/nobody', 404],
    ['a path no route takes (its 404 names GET, for a HEAD too)', '/nothing-here.txt', 404],
    ["a path under A2A's that no A2A route takes (its 404 names GET, for a HEAD too)", '/a2a%2Fhelper', 404],
  ])('of %s states the Content-Length its GET has, and sends no body', async (_what, path, status) => {
    const get = await ask('GET', path);
    expect(get).toMatchObject({ status });
    expect(get.contentLength).toBe(String(get.bytes));
    expect(get.bytes).toBeGreaterThan(0);
    const head = await ask('HEAD', path);
    expect(head).toEqual({ status, contentLength: String(get.bytes), bytes: 0, reused: true });
    // The connection stays usable after the HEAD.
    expect(await ask('GET', '/api/health')).toMatchObject({ status: 200, reused: true });
  });

  it('of the event stream states no length: a stream has none', async () => {
    const head = await ask('HEAD', '/api/events');
    expect(head).toMatchObject({ status: 200, contentLength: undefined, bytes: 0 });
  });
});

describe('HEAD of a stream', () => {
  it('of the 2024-11-05 MCP stream (/mcp/sse) gets its headers, no length, and opens no MCP session', async () => {
    const head = await ask('HEAD', '/mcp/sse');
    expect(head).toMatchObject({ status: 200, contentLength: undefined, bytes: 0 });
    let made = 0;
    const endpoints = createLegacySseEndpoints({
      factory: () => {
        made += 1;
        throw new Error('no server is made for a HEAD');
      },
      messagesPath: '/mcp/messages',
    });
    const answer = await endpoints.open(new Request('http://127.0.0.1/mcp/sse', { method: 'HEAD' }), { principal: LOCAL_OWNER });
    expect({ status: answer.status, type: answer.headers.get('content-type'), body: answer.body, made }).toEqual({
      status: 200,
      type: 'text/event-stream',
      body: null,
      made: 0,
    });
  });

  it('is never read whole: a body that is not all there at once (a stream of any type) gets no length, and the answer does not wait for it', async () => {
    const app = new Hono();
    app.use('*', headContentLength);
    let pulls = 0;
    app.get('/stream', () => {
      const body = new ReadableStream<Uint8Array>({
        pull: (controller) => {
          pulls += 1;
          // One chunk, then nothing more for now: a stream that produces over time (it never ends here).
          if (pulls === 1) controller.enqueue(new TextEncoder().encode('first chunk'));
          return new Promise(() => undefined);
        },
      });
      return new Response(body, { headers: { 'content-type': 'application/octet-stream' } });
    });
    app.get('/json', (c) => c.json({ greeting: 'ünïcode' }));
    const streamed = await app.request('/stream', { method: 'HEAD' });
    expect({ status: streamed.status, length: streamed.headers.get('content-length'), pulls }).toEqual({ status: 200, length: null, pulls: 1 });
    const json = await app.request('/json', { method: 'HEAD' });
    expect(json.headers.get('content-length')).toBe(String(Buffer.byteLength(JSON.stringify({ greeting: 'ünïcode' }))));
  });
});
