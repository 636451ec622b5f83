/**
 * The MCP client's HTTP connections are pinned to the addresses checked at connect: a DNS answer
 * that changes afterwards (DNS rebinding) never moves them. Real servers on loopback; the host
 * name `rebind.localhost` resolves through an injected resolver that answers differently over time.
 */
import type { LookupAddress } from 'node:dns';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { createSecureContext, createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPinnedFetch, MCP_RETRY_BASE_MS, type McpClientManager, McpServerRefusedError, type McpServerEntry } from '../../src/mcp/client/index.ts';
import type { HostResolver } from '../../src/tools/builtin/net-guard.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { callTool, makeManager, toolNamed, waitForStatus } from './client-helpers.ts';
import { agentManifest, type McpHttpServer, startMcpHttpServer } from './server-harness.ts';
import { waitFor } from '../support/wait-for.ts';

/** A self-signed certificate for rebind.localhost (EC P-256, valid to 2126), trusted by nobody. */
const REBIND_TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgRCJvf4937Wljiglt
9NXp0EuW8q2EsxCUrpnQ6yGLhFyhRANCAATOIauM+WEub0k5r0oR8P50dMVm6iuV
ToEgIByrjNYI6skoI6eloOcdKO4JCYEBd37tLJrktgyRjudT4F7jtpXk
-----END PRIVATE KEY-----`;
const REBIND_TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBmzCCAUGgAwIBAgIUFu7OiqhljTczRsQBYn2Cmfr2J+8wCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLcmViaW5kLnRlc3QwIBcNMjYxMTIyMjI0MzAxWhgPMjEyNjEw
MjkyMjQzMDFaMBYxFDASBgNVBAMMC3JlYmluZC50ZXN0MFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAEziGrjPlhLm9JOa9KEfD+dHTFZuorlU6BICAcq4zWCOrJKCOn
paDnHSjuCQmBAXd+7Sya5LYMkY7nU+Be47aV5KNrMGkwHQYDVR0OBBYEFL89t0XU
b17B6t2uwCEDhiDCNjqMMB8GA1UdIwQYMBaAFL89t0XUb17B6t2uwCEDhiDCNjqM
MA8GA1UdEwEB/wQFMAMBAf8wFgYDVR0RBA8wDYILcmViaW5kLnRlc3QwCgYIKoZI
zj0EAwIDSAAwRQIhAMrHx0ySLwJEfYBL/mXh7y5XtDKSCA4CzLT2jiOVPuO0AiA0
qZdnhlHXsZkrKaPY7rFegzoJbs01uldmTtfX0ZW7Sg==
-----END CERTIFICATE-----`;

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let manager: McpClientManager | undefined;
let served: McpHttpServer | undefined;
const servers: (HttpServer | NetServer | TlsServer)[] = [];

beforeEach(async () => {
  dir = await makeTempDir('loom-mcp-pinning-');
});
afterEach(async () => {
  await manager?.stop();
  manager = undefined;
  await served?.close();
  served = undefined;
  for (const server of servers.splice(0)) {
    if ('closeAllConnections' in server) server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  await dir.remove();
});

/** A resolver that answers `first` the first time and `later` every time after, counting its calls. */
function rebindingResolver(first: string, later: string): HostResolver & { calls: string[] } {
  const calls: string[] = [];
  const answer = (address: string): LookupAddress[] => [{ address, family: address.includes(':') ? 6 : 4 }];
  return Object.assign(
    (host: string) => {
      calls.push(host);
      return Promise.resolve(answer(calls.length === 1 ? first : later));
    },
    { calls },
  );
}

/** Listens on `address`:`port` and counts the TCP connections that reach it. */
async function trap(address: string, port: number): Promise<{ connections: number }> {
  const seen = { connections: 0 };
  const server = createNetServer((socket) => {
    seen.connections += 1;
    socket.destroy();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, address, resolve));
  return seen;
}

function portOf(server: HttpServer | NetServer | TlsServer): number {
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  return address.port;
}

function entry(name: string, transport: McpServerEntry['transport'], allowPrivate = true): McpServerEntry {
  return { name, timeout_secs: 30, env: [], allow_private_network: allowPrivate, transport };
}

describe('MCP client connections pinned to the vetted address', () => {
  it.each([
    ['Streamable HTTP', (port: number): McpServerEntry['transport'] => ({ type: 'http', url: `http://rebind.localhost:${port}/mcp`, headers: {} })],
    ['legacy SSE', (port: number): McpServerEntry['transport'] => ({ type: 'sse', url: `http://rebind.localhost:${port}/mcp/sse` })],
  ])('over %s, keep talking to the checked address when the host name later resolves elsewhere (DNS rebinding)', async (_kind, transport) => {
    // The server answers the name the client uses (a loopback daemon refuses other names otherwise;
    // one under .localhost, since a daemon with no key serves no other allowed name but to public routes).
    served = await startMcpHttpServer(dir.path, { config: { http: { allowed_hosts: ['rebind.localhost'] } } });
    await served.host.kernel.spawn(agentManifest('helper', 'http://127.0.0.1:9'));
    const port = Number(new URL(served.url).port);
    const elsewhere = await trap('127.0.0.2', port);
    const resolve = rebindingResolver('127.0.0.1', '127.0.0.2');
    ({ manager } = makeManager([entry('rebind', transport(port))], {}, undefined, resolve));
    manager.start();
    await waitForStatus(manager, 'rebind', 'connected');
    // Every request after the first answer (initialize, tools/list, the event stream) went to 127.0.0.1.
    expect(manager.servers()[0]?.tools.map((tool) => tool.name)).toEqual(['mcp_rebind_loom_agent_helper']);
    expect(resolve.calls).toEqual(['rebind.localhost']);
    expect(elsewhere.connections).toBe(0);
  });

  it('drops a connection whose checked address stops answering, and checks the host again to reconnect: a rebind to the metadata address is refused then', async () => {
    // The server answers the name the client uses (a loopback daemon refuses other names otherwise;
    // one under .localhost, since a daemon with no key serves no other allowed name but to public routes).
    served = await startMcpHttpServer(dir.path, { config: { http: { allowed_hosts: ['rebind.localhost'] } } });
    await served.host.kernel.spawn(agentManifest('helper', 'http://127.0.0.1:9'));
    const port = Number(new URL(served.url).port);
    const resolve = rebindingResolver('127.0.0.1', '169.254.169.254');
    let clock;
    ({ manager, clock } = makeManager([entry('rebind', { type: 'http', url: `http://rebind.localhost:${port}/mcp`, headers: {} })], {}, undefined, resolve));
    manager.start();
    await waitForStatus(manager, 'rebind', 'connected');
    const tool = toolNamed(manager, 'mcp_rebind_loom_agent_helper');
    await served.close();
    served = undefined;

    // Calls may first meet pooled sockets the server closed ("socket hang up"); the first on a
    // fresh socket is refused, which drops the connection (and with it that call).
    let result = await callTool(tool, { message: 'hi' });
    for (let attempt = 0; attempt < 5 && result.text.includes('socket hang up'); attempt += 1) result = await callTool(tool, { message: 'hi' });
    expect(result).toMatchObject({ isError: true, text: expect.stringMatching(/ECONNREFUSED|Connection closed/) as unknown });
    await waitForStatus(manager, 'rebind', 'failed');
    expect(manager.servers()[0]?.error).toBe('the connection was lost');
    await clock.advance(MCP_RETRY_BASE_MS);
    await waitFor('the reconnection to be refused', () =>
      /it is a cloud metadata address \(rebind\.localhost resolves to 169\.254\.169\.254\)/.test(manager?.servers()[0]?.error ?? ''),
    );
    expect(resolve.calls).toEqual(['rebind.localhost', 'rebind.localhost']);
    expect(clock.pending()).toBe(0);
  });

  it('refuses at connect a host name that resolves to a loopback address when allow_private_network is off, reaching nothing', async () => {
    const listening = await trap('127.0.0.1', 0);
    const port = portOf(servers[0] as NetServer);
    let clock;
    ({ manager, clock } = makeManager([entry('local', { type: 'http', url: `http://localhost:${port}/mcp`, headers: {} }, false)]));
    manager.start();
    await waitForStatus(manager, 'local', 'failed');
    expect(manager.servers()[0]?.error).toMatch(
      /URL http:\/\/localhost:\d+ is refused: loopback addresses are refused unless allow_private_network = true \(localhost resolves to (127\.0\.0\.1|::1)\)/,
    );
    expect(clock.pending()).toBe(0);
    expect(listening.connections).toBe(0);
  });

  it('judges every address the host resolves to: one private address among public ones refuses the server', async () => {
    const resolve: HostResolver = () =>
      Promise.resolve([
        { address: '93.184.216.34', family: 4 },
        { address: '10.1.2.3', family: 4 },
      ]);
    ({ manager } = makeManager([entry('mixed', { type: 'sse', url: 'http://mixed.test/sse' }, false)], {}, undefined, resolve));
    manager.start();
    await waitForStatus(manager, 'mixed', 'failed');
    expect(manager.servers()[0]?.error).toMatch(/private addresses are refused unless allow_private_network = true \(mixed\.test resolves to 10\.1\.2\.3\)/);
  });

  it('refuses a host name resolving to the metadata address even with allow_private_network', async () => {
    const resolve: HostResolver = () => Promise.resolve([{ address: '169.254.169.254', family: 4 }]);
    ({ manager } = makeManager([entry('meta', { type: 'http', url: 'http://innocent.test/mcp', headers: {} })], {}, undefined, resolve));
    manager.start();
    await waitForStatus(manager, 'meta', 'failed');
    expect(manager.servers()[0]?.error).toMatch(/it is a cloud metadata address \(innocent\.test resolves to 169\.254\.169\.254\)/);
  });

  it('keeps TLS on the host name: the server is asked for rebind.localhost, and a certificate nobody trusts is refused', async () => {
    const asked: string[] = [];
    const context = createSecureContext({ key: REBIND_TEST_KEY, cert: REBIND_TEST_CERT });
    const server = createTlsServer({
      key: REBIND_TEST_KEY,
      cert: REBIND_TEST_CERT,
      SNICallback: (name, callback) => {
        asked.push(name);
        callback(null, context);
      },
    });
    server.on('tlsClientError', () => undefined);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const resolve = rebindingResolver('127.0.0.1', '127.0.0.1');
    ({ manager } = makeManager([entry('tls', { type: 'http', url: `https://rebind.localhost:${portOf(server)}/mcp`, headers: {} })], {}, undefined, resolve));
    manager.start();
    await waitForStatus(manager, 'tls', 'failed');
    expect(manager.servers()[0]?.error).toMatch(/certificate/i);
    expect(asked[0]).toBe('rebind.localhost');
  });
});

describe('createPinnedFetch()', () => {
  it("sends to the vetted address with the URL's host name in the Host header, and streams the answer back as a Response", async () => {
    const seen: { host?: string; body?: string; method?: string } = {};
    const server = createHttpServer((request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        Object.assign(seen, { host: request.headers.host, body, method: request.method, type: request.headers['content-type'] });
        response.writeHead(201, { 'content-type': 'text/plain', 'x-answer': 'yes' });
        response.end('created');
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = portOf(server);
    const pinned = createPinnedFetch('pin', { url: new URL(`http://rebind.localhost:${port}/mcp`), addresses: [{ address: '127.0.0.1', family: 4 }] });
    try {
      const response = await pinned.fetch(`http://rebind.localhost:${port}/mcp`, { method: 'POST', body: 'hello' });
      expect({ status: response.status, answer: response.headers.get('x-answer'), url: response.url, text: await response.text() }).toEqual({
        status: 201,
        answer: 'yes',
        url: `http://rebind.localhost:${port}/mcp`,
        text: 'created',
      });
      expect(seen).toEqual({ host: `rebind.localhost:${port}`, body: 'hello', method: 'POST', type: 'text/plain;charset=UTF-8' });
    } finally {
      pinned.close();
    }
  });

  it('refuses a request for a host other than the one checked', async () => {
    const pinned = createPinnedFetch('pin', { url: new URL('http://rebind.localhost:1/mcp'), addresses: [{ address: '127.0.0.1', family: 4 }] });
    await expect(pinned.fetch('http://elsewhere.test:1/mcp')).rejects.toBeInstanceOf(McpServerRefusedError);
    await expect(pinned.fetch('http://elsewhere.test:1/mcp')).rejects.toThrow(
      'MCP server "pin": a request to http://elsewhere.test:1 is refused: only rebind.localhost was checked for this connection',
    );
    pinned.close();
  });
});
