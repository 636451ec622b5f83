import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/index.ts';
import { createDaemonApp } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createCostCatalog } from '../../src/models/index.ts';
import { createLoomMetrics } from '../../src/telemetry/loom-metrics.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-http-router-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

/** The app a daemon serves over the test host, with `config` (config.toml's shape). */
function daemonApp(config: Record<string, unknown>): ReturnType<typeof createDaemonApp> {
  const parsed = ConfigSchema.parse(config);
  const metrics = createLoomMetrics({ kernel: host.kernel, costs: createCostCatalog(parsed.prices), mcp: host.mcp });
  return createDaemonApp(host, {
    config: parsed,
    env: {},
    clock: host.clock,
    logger: createSilentLogger(),
    bindHost: '127.0.0.1',
    metrics,
    clientAddress: () => '127.0.0.1',
  });
}

describe("the daemon's routes", () => {
  it("are all of shapes Hono's RegExp router takes (a fixed segment beside a parameter with more after it would send every request to its slower trie router), with every door a daemon mounts", async () => {
    for (const config of [{}, { a2a: { enabled: true, listen_path: '/' } }]) {
      const app = daemonApp(config);
      const health = await app.request('/api/health');
      // The router is chosen at the first request.
      expect(app.router.name).toBe('SmartRouter + RegExpRouter');
      expect(health.status).toBe(200);
    }
  });

  it('answer the fixed segments routed as a parameter as before, and any other value as the route it stands beside', async () => {
    const app = daemonApp({});
    const json = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' };
    // A fixed value reaches its own route: each checks its body.
    for (const path of ['/api/tools/forged/import', '/api/packages/check', '/api/packages/skills']) {
      const answer = await app.request(path, json);
      expect({ path, status: answer.status }).toEqual({ path, status: 400 });
      expect(await answer.json()).toMatchObject({ error: { code: 'INVALID_REQUEST' } });
    }
    expect(await (await app.request('/api/packages/runs')).json()).toEqual([]);
    // Any other value: no route for a POST, the package itself for a GET.
    for (const path of ['/api/tools/forged/xyz', '/api/packages/xyz']) {
      const answer = await app.request(path, { method: 'POST' });
      expect(answer.status).toBe(404);
      expect(await answer.json()).toMatchObject({ error: { code: 'ROUTE_NOT_FOUND', message: expect.stringMatching(/^no route POST /) as string } });
    }
    const missing = await app.request('/api/packages/xyz');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 'PACKAGE_NOT_FOUND' } });
  });
});
