import { request as httpRequest } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/index.ts';
import { createHttpApp } from '../../src/http/index.ts';
import type { Kernel } from '../../src/kernel/index.ts';
import { createLogger } from '../../src/logging/index.ts';
import { createFakeClock } from '../../src/clock/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';
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
      const reply = await send(
        api.url,
        path,
        { host: `rebound.example:${port(api.url)}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        method,
        body,
      );
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

  it("serves the daemon's own pages (Origin equal to the Host it was asked for)", async () => {
    api = await startApi(dir.path);
    const host = `127.0.0.1:${port(api.url)}`;
    expect((await send(api.url, '/api/agents', { host, origin: `http://${host}` })).status).toBe(200);
  });

  it('answers the names and origins config.toml allows', async () => {
    api = await startApi(dir.path, {
      config: { http: { allowed_hosts: ['loom.internal'], allowed_origins: ['https://ops.example.com'] } },
      env: { LOOM_API_KEY: 'root-secret' },
    });
    const key = { authorization: 'Bearer root-secret' };
    expect((await send(api.url, '/api/agents', { ...key, host: 'loom.internal' })).status).toBe(200);
    expect((await send(api.url, '/api/agents', { ...key, host: 'loom.internal', origin: 'https://ops.example.com' })).status).toBe(200);
    expect((await send(api.url, '/api/agents', { ...key, host: 'other.internal' })).status).toBe(403);
  });
});

// A reverse proxy on this machine reaches the daemon from 127.0.0.1: with no key configured, every
// client it serves would be the owner. What it forwards is refused, but for the public routes.
describe('a daemon with no API key behind a reverse proxy', () => {
  it('refuses what a proxy forwards (its name in allowed_hosts, or forwarding headers) but for public routes, and still serves local clients', async () => {
    api = await startApi(dir.path, { config: { http: { allowed_hosts: ['loom.example.com'] } } });
    const spawn = { 'content-type': 'application/toml' };
    const manifest = 'name = "pwned"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n';
    for (const headers of [
      { host: 'loom.example.com' },
      { host: `127.0.0.1:${port(api.url)}`, 'x-forwarded-for': '203.0.113.7' },
      { host: `localhost:${port(api.url)}`, forwarded: 'for=203.0.113.7' },
      { host: `localhost:${port(api.url)}`, 'x-real-ip': '203.0.113.7' },
      { host: `localhost:${port(api.url)}`, via: '1.1 proxy' },
    ]) {
      const reply = await send(api.url, '/api/agents', { ...headers, ...spawn }, 'POST', manifest);
      expect(reply.status).toBe(403);
      expect(JSON.parse(reply.body)).toMatchObject({ error: { code: 'ACCESS_DENIED' } });
      expect(reply.body).toContain('refusing a request that came through a proxy');
      expect(reply.body).toContain('set LOOM_API_KEY or add [[auth.keys]]');
    }
    expect(api.host.kernel.list()).toEqual([]);
    // Public routes answer whoever asks, through the proxy too.
    expect((await send(api.url, '/api/health', { host: 'loom.example.com' })).status).toBe(200);
    // A client on this machine asking directly is the owner, as before.
    expect((await send(api.url, '/api/agents', { host: `127.0.0.1:${port(api.url)}`, ...spawn }, 'POST', manifest)).status).toBe(201);
  });
});

describe('Host on a daemon bound to another address', () => {
  it('answers any name on a keyed daemon when allowed_hosts is empty, and only those listed and the loopback names when it is set', async () => {
    api = await startApi(dir.path, { bindHost: '0.0.0.0', clientAddress: '127.0.0.1', env: { LOOM_API_KEY: 'root-secret' } });
    expect((await send(api.url, '/api/health', { host: 'loom.lan:4200' })).status).toBe(200);
    await api.close();
    api = await startApi(dir.path, { bindHost: '0.0.0.0', config: { http: { allowed_hosts: ['loom.lan'] } } });
    expect((await send(api.url, '/api/health', { host: 'loom.lan:4200' })).status).toBe(200);
    expect((await send(api.url, '/api/health', { host: 'localhost:4200' })).status).toBe(200);
    expect((await send(api.url, '/api/health', { host: 'rebound.example' })).status).toBe(403);
  });

  // The request a page at http://rebound.example:PORT sends once its name points at 127.0.0.1: from
  // the user's own browser (a loopback client, the owner when no key is configured), with its own
  // name as Host and its own site as Origin.
  it('refuses a rebinding page on a daemon bound to 0.0.0.0 with no API key: 403, no agent spawned', async () => {
    api = await startApi(dir.path, { bindHost: '0.0.0.0' });
    const rebound = `rebound.example:${port(api.url)}`;
    const manifest = 'name = "pwned"\n[capabilities]\nshell = ["*"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n';
    const reply = await send(api.url, '/api/agents', { host: rebound, origin: `http://${rebound}`, 'content-type': 'application/toml' }, 'POST', manifest);
    expect(reply.status).toBe(403);
    expect(JSON.parse(reply.body)).toMatchObject({ error: { code: 'HOST_NOT_ALLOWED' } });
    expect(reply.body).toContain('add \\"rebound.example\\" to [http].allowed_hosts');
    expect(api.host.kernel.list()).toEqual([]);
    for (const [method, path, body] of ROUTES) {
      const refused = await send(
        api.url,
        path,
        { host: rebound, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        method,
        body,
      );
      expect({ path, status: refused.status }).toEqual({ path, status: 403 });
    }
  });

  it('still serves the local user, with no API key, at the loopback names and the bound address (the URL the CLI uses); at allowed_hosts names, the public routes only', async () => {
    api = await startApi(dir.path, { bindHost: '0.0.0.0', config: { http: { allowed_hosts: ['loom.lan'] } } });
    for (const host of [`localhost:${port(api.url)}`, `127.0.0.1:${port(api.url)}`, `[::1]:${port(api.url)}`, `0.0.0.0:${port(api.url)}`]) {
      expect({ host, status: (await send(api.url, '/api/agents', { host, origin: `http://${host}` })).status }).toEqual({ host, status: 200 });
    }
    // The name a proxy serves it under: what comes by it may be anyone's.
    expect((await send(api.url, '/api/agents', { host: 'loom.lan:4200' })).status).toBe(403);
    expect((await send(api.url, '/api/health', { host: 'loom.lan:4200' })).status).toBe(200);
    await api.close();
    api = await startApi(dir.path, { bindHost: '::' });
    expect((await send(api.url, '/api/agents', { host: `[::]:${port(api.url)}` })).status).toBe(200);
    expect((await send(api.url, '/api/agents', { host: `rebound.example:${port(api.url)}` })).status).toBe(403);
  });

  it('warns at start when it listens on another address with no API key, saying who is served and how to serve more', () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', sink: { write: (text: string) => lines.push(text) } });
    const build = (bindHost: string, env: Record<string, string> = {}) =>
      createHttpApp({ kernel: {} as Kernel, config: ConfigSchema.parse({}), env, clock: createFakeClock(), logger, bindHost });
    build('127.0.0.1');
    build('0.0.0.0', { LOOM_API_KEY: 'root-secret' });
    expect(lines).toEqual([]);
    build('0.0.0.0');
    expect(lines).toHaveLength(1);
    const record = JSON.parse(lines[0] ?? '{}') as { level: number; msg: string };
    expect(record.msg).toContain('listening on "0.0.0.0" with no API key: only clients on this machine are served');
    expect(record.msg).toContain('set LOOM_API_KEY or add [[auth.keys]] to config.toml');
  });
});
