import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardHarness, startDashboard, visible } from '../support/browser.ts';
import { runCli } from '../support/run-cli.ts';
import { EXIT_ON_PROBE_SERVER, type EraFixtureServer, startEraFixtureServer } from '../mcp/era-fixture-servers.ts';
import { waitFor } from '../support/wait-for.ts';

/** A server behind OAuth that nobody has logged in to: every MCP request is answered 401. */
async function startLockedServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    if ((request.url ?? '').startsWith('/.well-known/')) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(401, { 'www-authenticate': 'Bearer realm="locked"' }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('the MCP servers on the dashboard Tools page and in loom mcp servers, against a real daemon', () => {
  let harness: DashboardHarness;
  let page: Page;
  let modern: EraFixtureServer;
  let locked: Awaited<ReturnType<typeof startLockedServer>>;

  beforeAll(async () => {
    modern = await startEraFixtureServer();
    locked = await startLockedServer();
    const log = `${process.env['TMPDIR'] ?? '/tmp'}/loom-web-mcp-${process.pid}.log`;
    harness = await startDashboard(
      'loom-web-mcp-',
      {
        mcp_servers: [
          { name: 'modern', allow_private_network: true, transport: { type: 'http', url: modern.url } },
          { name: 'old', transport: { type: 'stdio', command: process.execPath, args: [EXIT_ON_PROBE_SERVER, log] } },
          {
            name: 'locked',
            allow_private_network: true,
            oauth: { grant: 'authorization_code', client_id: 'loom-test' },
            transport: { type: 'http', url: locked.url },
          },
        ],
      },
      { connectMcpServers: true },
    );
    page = await harness.browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
    await modern?.close();
    await locked?.close();
  });

  it("shows each server's negotiated era and protocol version, why one speaks a 2025 revision, and the login a locked one needs", async () => {
    const mcp = harness.host.mcp;
    if (mcp === undefined) throw new Error('the host connects no MCP servers');
    await waitFor('the three servers to settle', () => {
      const [first, second, third] = mcp.servers();
      return first?.status === 'connected' && second?.status === 'connected' && third?.action !== undefined;
    });
    await page.goto(`${harness.server.url}/#/tools`);
    const rows = page.getByTestId('mcp-server');
    await visible(rows.filter({ hasText: 'modern' }), '2026-07-28');
    await visible(rows.filter({ hasText: 'modern' }), '2026 era');
    await visible(rows.filter({ hasText: 'modern' }), 'mcp_modern_hello');
    await visible(rows.filter({ hasText: 'old' }), '2025 era');
    await visible(rows.filter({ hasText: 'old' }), 'exited on the 2026-07-28 probe');
    const action = rows.filter({ hasText: 'locked' }).getByTestId('mcp-action');
    await visible(action, 'Needs you: run loom mcp login locked');
    expect(await rows.count()).toBe(3);
  });

  it('answers the same in GET /api/mcp/servers, and reconnects a server on POST …/reconnect', async () => {
    const view = (await (await fetch(`${harness.server.url}/api/mcp/servers`)).json()) as { configured: Record<string, unknown>[] };
    expect(view.configured.map((server) => [server['name'], server['status'], server['era'], server['protocol_version']])).toEqual([
      ['modern', 'connected', 'modern', '2026-07-28'],
      ['old', 'connected', 'legacy', expect.stringMatching(/^2025-/) as unknown],
      ['locked', 'failed', undefined, undefined],
    ]);
    expect(view.configured[2]?.['action']).toMatchObject({ kind: 'login', command: 'loom mcp login locked' });
    const before = modern.requests.length;
    expect((await fetch(`${harness.server.url}/api/mcp/servers/modern/reconnect`, { method: 'POST' })).status).toBe(204);
    await waitFor('the modern server to be probed again', () => modern.requests.slice(before).some((request) => request.method === 'server/discover'));
    const unknown = await fetch(`${harness.server.url}/api/mcp/servers/nobody/reconnect`, { method: 'POST' });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toContain('no MCP server named "nobody"');
  });

  it('prints the protocol and the pending login in loom mcp servers', async () => {
    const result = await runCli(harness.host.home.root, ['mcp', 'servers'], { env: { LOOM_URL: harness.server.url } });
    expect(result.stdout).toMatch(/modern\s+http\s+connected\s+2026-07-28 \(2026 era\)/);
    expect(result.stdout).toMatch(/old\s+stdio\s+connected\s+2025-\S+ \(2025 era\)/);
    expect(result.stdout).toContain('locked needs you: run "loom mcp login locked"');
    expect(result.stdout).toContain('old speaks a 2025 revision: the server exited on the 2026-07-28 probe');
  });
});
