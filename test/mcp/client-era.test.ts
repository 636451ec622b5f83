import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FakeClock } from '../../src/clock/index.ts';
import type { McpClientManager, McpServerEntry } from '../../src/mcp/client/index.ts';
import { outcomeWithin } from '../support/outcome-within.ts';
import { createRecordingLogger } from '../support/recording-logger.ts';
import { waitFor } from '../support/wait-for.ts';
import { callTool, makeManager, startEverythingServer, stdioEntry, toolNamed, waitForStatus } from './client-helpers.ts';
import { EXIT_ON_PROBE_SERVER, type EraFixtureServer, SLOW_FIRST_ANSWER_SERVER, startEraFixtureServer } from './era-fixture-servers.ts';

/**
 * How Loom's MCP client picks a server's protocol era: the 2026-07-28 `server/discover` probe
 * first, the 2025 `initialize` handshake only on an answer that shows an older server, never on
 * silence; what it chose is shown per server.
 */
let manager: McpClientManager | undefined;
let fixture: EraFixtureServer | undefined;
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'loom-mcp-era-'));
});

afterEach(async () => {
  await manager?.stop();
  manager = undefined;
  await fixture?.close();
  fixture = undefined;
  await rm(dir, { recursive: true, force: true });
});

const httpEntry = (url: string, timeout_secs = 30): McpServerEntry => ({
  name: 'remote',
  timeout_secs,
  env: [],
  allow_private_network: true,
  transport: { type: 'http', url, headers: {} },
});
const methods = (server: EraFixtureServer): string[] => server.requests.map((request) => request.method);

describe('MCP protocol era negotiation', () => {
  it('connects a 2026-era server whose first answer takes 6 s in the 2026 era: the probe is asked again, never replaced by the 2025 handshake', async () => {
    fixture = await startEraFixtureServer();
    fixture.hold = (index) => (index === 0 ? 6_000 : 0);
    const logger = createRecordingLogger();
    let clock: FakeClock;
    ({ manager, clock } = makeManager([httpEntry(fixture.url)], process.env, logger));
    manager.start();
    // The first probe waits 5 s, then the manager backs off on the clock before asking again.
    await waitFor('the manager to ask again after the first probe timed out', () =>
      logger.entries.find((entry) => entry.message === 'MCP server did not answer in time; asking again in the same era'),
    );
    expect(manager.servers()[0]?.status).toBe('connecting');
    expect(manager.servers()[0]?.error).toMatch(/no answer within 5 s; asking again/);
    await clock.advance(250);
    await waitForStatus(manager, 'remote', 'connected');
    expect(manager.servers()[0]).toMatchObject({ status: 'connected', era: 'modern', protocolVersion: '2026-07-28' });
    expect(manager.servers()[0]?.eraReason).toBeUndefined();
    expect(methods(fixture)).not.toContain('initialize');
    expect(methods(fixture).filter((method) => method === 'server/discover')).toHaveLength(2);
    expect(await callTool(toolNamed(manager, 'mcp_remote_hello'), {})).toEqual({ text: 'hello' });
  });

  it('connects a 2026-era stdio server whose first answer takes 6 s in the 2026 era (the SDK would take a silent stdio server for a 2025 one)', async () => {
    const logger = createRecordingLogger();
    let clock: FakeClock;
    ({ manager, clock } = makeManager([stdioEntry('slow', [SLOW_FIRST_ANSWER_SERVER, '6000'])], process.env, logger));
    manager.start();
    await waitFor('the manager to ask again after the first probe timed out', () =>
      logger.entries.find((entry) => entry.message === 'MCP server did not answer in time; asking again in the same era'),
    );
    await clock.advance(250);
    await waitForStatus(manager, 'slow', 'connected');
    expect(manager.servers()[0]).toMatchObject({ era: 'modern', protocolVersion: '2026-07-28' });
    expect(await callTool(toolNamed(manager, 'mcp_slow_hello'), {})).toEqual({ text: 'hello, eventually' });
  });

  it('fails a server that answers nothing within timeout_secs without ever sending the 2025 initialize, and probes again on the next attempt', async () => {
    fixture = await startEraFixtureServer();
    fixture.hold = () => 'until released';
    let clock: FakeClock;
    ({ manager, clock } = makeManager([httpEntry(fixture.url, 1)]));
    manager.start();
    await waitForStatus(manager, 'remote', 'failed');
    expect(manager.servers()[0]?.error).toMatch(/did not answer within its timeout_secs \(1 s\)/);
    expect(methods(fixture)).toEqual(['server/discover']);
    await clock.advance(1_000);
    await waitFor('a second probe', () => fixture !== undefined && fixture.requests.length >= 2);
    await waitForStatus(manager, 'remote', 'failed');
    expect(methods(fixture)).toEqual(['server/discover', 'server/discover']);
    fixture.release();
    // reconnect() tries at once, without waiting for the backoff on the clock.
    expect(manager.reconnect('remote')).toBe(true);
    await waitForStatus(manager, 'remote', 'connected');
    expect(manager.servers()[0]).toMatchObject({ era: 'modern', protocolVersion: '2026-07-28' });
    expect(methods(fixture)).not.toContain('initialize');
    expect(manager.reconnect('nobody')).toBe(false);
  });

  it('does not claim to reconnect a server it refused for good', async () => {
    // OAuth with nowhere to keep its sessions: refused, and never retried.
    ({ manager } = makeManager([{ ...httpEntry('http://127.0.0.1:9/mcp'), oauth: { grant: 'authorization_code' } }]));
    manager.start();
    await waitForStatus(manager, 'remote', 'failed');
    expect(manager.servers()[0]?.error).toMatch(/keeps no OAuth sessions/);
    expect(manager.reconnect('remote')).toBe(false);
  });

  it('stops, or reconnects, in the middle of a probe without waiting for its answer', async () => {
    fixture = await startEraFixtureServer();
    fixture.hold = () => 'until released';
    ({ manager } = makeManager([httpEntry(fixture.url)]));
    manager.start();
    await waitFor('the first probe', () => fixture !== undefined && fixture.requests.length === 1);
    // reconnect() ends the probe under way and asks again at once.
    expect(manager.reconnect('remote')).toBe(true);
    await waitFor('a second probe', () => fixture !== undefined && fixture.requests.length === 2);
    expect(methods(fixture)).toEqual(['server/discover', 'server/discover']);
    // The probe waits 5 s for its answer; a stop does not.
    expect(await outcomeWithin(manager.stop(), 3_000)).toEqual({ value: undefined });
    manager = undefined;
  });

  it('connects a 2025-era server (server-everything over Streamable HTTP) in the 2025 era and says why', async () => {
    const everything = await startEverythingServer('streamableHttp');
    try {
      ({ manager } = makeManager([httpEntry(`http://127.0.0.1:${everything.port}/mcp`)]));
      manager.start();
      await waitForStatus(manager, 'remote', 'connected');
      const status = manager.servers()[0];
      expect(status?.era).toBe('legacy');
      expect(status?.protocolVersion).toMatch(/^2025-/);
      expect(status?.eraReason).toMatch(/answered the 2026-07-28 probe \(server\/discover\) as a 2025-era server/);
      expect(await callTool(toolNamed(manager, 'mcp_remote_echo'), { message: 'old' })).toEqual({ text: 'Echo: old' });
    } finally {
      everything.child.kill();
    }
  });

  it('connects a stdio server that exits on the probe in the 2025 era, and probes for the newer era again on every reconnection', async () => {
    const log = join(dir, 'first-methods.log');
    const logger = createRecordingLogger();
    ({ manager } = makeManager([stdioEntry('old', [EXIT_ON_PROBE_SERVER, log])], process.env, logger));
    manager.start();
    await waitForStatus(manager, 'old', 'connected');
    const status = manager.servers()[0];
    expect(status?.era).toBe('legacy');
    expect(status?.protocolVersion).toMatch(/^2025-/);
    expect(status?.eraReason).toMatch(/exited on the 2026-07-28 probe/);
    expect(await callTool(toolNamed(manager, 'mcp_old_hello'), {})).toEqual({ text: 'hello from 2025' });
    expect(logger.entries.some((entry) => entry.message === 'MCP server failed to connect')).toBe(false);
    expect(manager.reconnect('old')).toBe(true);
    await waitFor(
      'the reconnection',
      async () => (await readFile(log, 'utf8')).split('\n').filter(Boolean).length === 4 && manager?.servers()[0]?.status === 'connected',
    );
    expect((await readFile(log, 'utf8')).split('\n').filter(Boolean)).toEqual(['server/discover', 'initialize', 'server/discover', 'initialize']);
    expect(await callTool(toolNamed(manager, 'mcp_old_hello'), {})).toEqual({ text: 'hello from 2025' });
  });
});
