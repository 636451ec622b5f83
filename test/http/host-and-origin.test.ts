import { request as httpRequest } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../helpers/test-kernel.ts';
import { type Api, startApi } from './api-harness.ts';

/**
 * DNS rebinding: a web page whose own name the attacker rebinds to 127.0.0.1 can make the
 * user's browser send requests to a daemon on loopback, with its own name as Host and its own
 * site as Origin. The daemon must answer neither, on any route.
 */

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-host-origin-');
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await dir.remove();
});

interface Reply {
  status: number;
  body: string;
}

/** A request with headers fetch would not let us forge (Host), over real HTTP. */
function send(url: string, path: string, headers: Record<string, string>, method = 'GET', body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${url}${path}`, { method, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

const port = (url: string): string => new URL(url).port;

const ROUTES: [string, string, string?][] = [
  ['GET', '/api/agents'],
  ['GET', '/api/health'],
  ['POST', '/mcp', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })],
  ['POST', '/v1/chat/completions', JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi' }] })],
  ['GET', '/.well-known/agent-card.json'],
  ['GET', '/'],
];

describe('Host and Origin on a loopback daemon', () => {
  it('refuses a request whose Host names another site, on every route, with 403 naming the header and the fix', async () => {
    api = await startApi(dir.path);
    for (const [method, path, body] of ROUTES) {
      const reply = await send(api.url, path, { host: `rebound.example:${port(api.url)}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, method, body);
      expect({ path, status: reply.status }).toEqual({ path, status: 403 });
      expect(reply.body).toContain(`refusing a request for host \\"rebound.example:${port(api.url)}\\"`);
      expect(reply.body).toContain('add \\"rebound.example\\" to [http].allowed_hosts in config.toml');
    }
  });

  it('answers localhost, 127.0.0.1 and [::1], with or without the port', async () => {
    api = await startApi(dir.path);
    for (const host of ['localhost', `localhost:${port(api.url)}`, `127.0.0.1:${port(api.url)}`, `[::1]:${port(api.url)}`, 'LOCALHOST']) {
      expect({ host, status: (await send(api.url, '/api/agents', { host })).status }).toEqual({ host, status: 200 });
    }
  });

  it('refuses a browser request from another origin, or from "null", even with the right Host', async () => {
    api = await startApi(dir.path);
    const host = `127.0.0.1:${port(api.url)}`;
    for (const origin of ['https://evil.example', 'null', `http://localhost:${Number(port(api.url)) + 1}`]) {
      const reply = await send(api.url, '/api/agents', { host, origin, 'content-type': 'application/json' }, 'POST', '{}');
      expect({ origin, status: reply.status }).toEqual({ origin, status: 403 });
      expect(reply.body).toContain(`refusing a request from the page at origin \\"${origin}\\"`);
      expect(reply.body).toContain('[http].allowed_origins');
    }
    expect(api.host.kernel.list()).toEqual([]);
  });

  it('serves the daemon\'s own pages (Origin equal to the Host it was asked for)', async () => {
    api = await startApi(dir.path);
    const host = `127.0.0.1:${port(api.url)}`;
    expect((await send(api.url, '/api/agents', { host, origin: `http://${host}` })).status).toBe(200);
  });

  it('answers the names and origins config.toml allows', async () => {
    api = await startApi(dir.path, { config: { http: { allowed_hosts: ['loom.internal'], allowed_origins: ['https://ops.example.com'] } } });
    expect((await send(api.url, '/api/agents', { host: 'loom.internal' })).status).toBe(200);
    expect((await send(api.url, '/api/agents', { host: 'loom.internal', origin: 'https://ops.example.com' })).status).toBe(200);
    expect((await send(api.url, '/api/agents', { host: 'other.internal' })).status).toBe(403);
  });
});

describe('Host on a daemon bound to another address', () => {
  it('answers any name when allowed_hosts is empty, and only those listed and the loopback names when it is set', async () => {
    api = await startApi(dir.path, { bindHost: '0.0.0.0', clientAddress: '127.0.0.1' });
    expect((await send(api.url, '/api/health', { host: 'loom.lan:4200' })).status).toBe(200);
    await api.close();
    api = await startApi(dir.path, { bindHost: '0.0.0.0', config: { http: { allowed_hosts: ['loom.lan'] } } });
    expect((await send(api.url, '/api/health', { host: 'loom.lan:4200' })).status).toBe(200);
    expect((await send(api.url, '/api/health', { host: 'localhost:4200' })).status).toBe(200);
    expect((await send(api.url, '/api/health', { host: 'rebound.example' })).status).toBe(403);
  });
});
