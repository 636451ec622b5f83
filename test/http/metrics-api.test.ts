import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAuthenticator } from '../../src/access/index.ts';
import { ConfigSchema } from '../../src/config/index.ts';
import { type RunningHttpServer, startHttpServer } from '../../src/http/index.ts';
import type { HttpEnv } from '../../src/http/http-context.ts';
import { createMetricsRoutes } from '../../src/http/metrics-routes.ts';
import { toErrorResponse } from '../../src/errors/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createCostCatalog } from '../../src/models/index.ts';
import { createLoomMetrics, type LoomMetrics } from '../../src/telemetry/loom-metrics.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

const server = useScriptedModelServer();
const KEYS = {
  auth: {
    keys: [
      { name: 'admin', role: 'owner', key_env: 'ADMIN_KEY' },
      { name: 'watcher', role: 'viewer', key_env: 'VIEWER_KEY' },
    ],
  },
};
const ENV = { ...TEST_KEYS, ADMIN_KEY: 'admin-secret', VIEWER_KEY: 'viewer-secret' };

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;
let http: RunningHttpServer;
let metrics: LoomMetrics;

/**
 * Serves `/metrics` behind the daemon's door as create-http-app is to mount it: the same
 * authenticator, `/metrics` public only with `[telemetry].metrics_public`, errors mapped by the
 * same function. (The daemon's app does not mount it yet: its dashboard answers every other GET.)
 */
async function serve(config: Record<string, unknown>): Promise<void> {
  host = await openTestHost(dir.path, config);
  const parsed = ConfigSchema.parse(config);
  const authenticator = createAuthenticator(parsed, ENV);
  const logger = createSilentLogger();
  const app = new Hono<HttpEnv>();
  app.onError((error, c) => {
    const { status, body, headers } = toErrorResponse(error, host.clock.now(), logger);
    return c.json(body, status as 400, headers);
  });
  app.use('*', async (c, next) => {
    const principal = authenticator.authenticate(
      { authorization: c.req.header('authorization'), apiKey: c.req.header('x-api-key'), address: '127.0.0.1' },
      { isPublic: parsed.telemetry.metrics_public && c.req.path === '/metrics' },
    );
    c.set('principal', principal);
    await next();
  });
  metrics = createLoomMetrics({ kernel: host.kernel, costs: createCostCatalog(parsed.prices) });
  app.route('/', createMetricsRoutes({ kernel: host.kernel, metrics, metricsPublic: parsed.telemetry.metrics_public }));
  http = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
}

beforeEach(async () => {
  dir = await makeTempDir('loom-metrics-');
});
afterEach(async () => {
  metrics.dispose();
  await http.close();
  await host.close();
  await dir.remove();
});

/** The samples of a Prometheus text exposition, by `name{labels}` as written. */
function parse(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})?) (\S+)$/.exec(line);
    if (match === null) throw new Error(`not a Prometheus sample line: ${line}`);
    samples.set(match[1] as string, Number(match[2]));
  }
  return samples;
}

async function scrape(key = 'admin-secret'): Promise<Map<string, number>> {
  const response = await fetch(`${http.url}/metrics`, { headers: { authorization: `Bearer ${key}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toContain('text/plain');
  return parse(await response.text());
}

describe('GET /metrics', () => {
  it('parses as Prometheus text, and its counters move with a turn: the turn, its model calls, tokens, cost and tool call', async () => {
    await serve(KEYS);
    await host.kernel.spawn(
      manifest(`name = "counter"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["agent_list"]\n`),
    );
    const before = await scrape();
    expect(before.get('loom_turns_total{agent="counter",outcome="finished"}')).toBeUndefined();
    expect(before.get('loom_running_turns')).toBe(0);
    expect(before.get('loom_pending_approvals')).toBe(0);

    server.script([
      { toolCalls: [{ name: 'agent_list', input: {} }], usage: { inputTokens: 1000, outputTokens: 100 } },
      { text: 'One agent runs.', usage: { inputTokens: 1200, outputTokens: 50 } },
    ]);
    await host.kernel.send('counter', 'Which agents run?');

    const after = await scrape();
    expect(after.get('loom_turns_total{agent="counter",outcome="finished"}')).toBe(1);
    expect(after.get('loom_turn_duration_seconds_count{outcome="finished"}')).toBe(1);
    expect(after.get('loom_model_calls_total{agent="counter",model="openai/gpt-4o",outcome="ok"}')).toBe(2);
    expect(after.get('loom_model_call_duration_seconds_count{model="openai/gpt-4o",outcome="ok"}')).toBe(2);
    expect(after.get('loom_tokens_total{agent="counter",model="openai/gpt-4o",kind="input"}')).toBe(2200);
    expect(after.get('loom_tokens_total{agent="counter",model="openai/gpt-4o",kind="output"}')).toBe(150);
    // gpt-4o: $2.50 per million tokens in, $10 out.
    expect(after.get('loom_cost_usd_total{agent="counter",model="openai/gpt-4o",kind="input"}')).toBeCloseTo(0.0055, 10);
    expect(after.get('loom_cost_usd_total{agent="counter",model="openai/gpt-4o",kind="output"}')).toBeCloseTo(0.0015, 10);
    expect(after.get('loom_tool_calls_total{tool="agent_list",outcome="ok"}')).toBe(1);
    expect(after.get('loom_tool_call_duration_seconds_count{tool="agent_list"}')).toBe(1);
    expect(after.get('loom_running_turns')).toBe(0);
  });

  it("shows a turn running and the one queued behind it, and times the store's commits", async () => {
    await serve(KEYS);
    await host.kernel.spawn(manifest(`name = "busy"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`));
    const commitsBefore = (await scrape()).get('loom_store_commit_duration_seconds_count{store="sqlite"}') ?? 0;
    let answer = (): void => undefined;
    const gate = new Promise<void>((resolve) => (answer = resolve));
    server.script([{ text: 'First.', gate }, { text: 'Second.' }]);
    const first = host.kernel.send('busy', 'one');
    const second = host.kernel.send('busy', 'two');
    await waitFor('the first turn to reach the model', () => server.requests.length === 1);
    const during = await scrape();
    expect(during.get('loom_running_turns')).toBe(1);
    expect(during.get('loom_queued_turns')).toBe(1);

    answer();
    expect((await Promise.all([first, second])).map((result) => result.text)).toEqual(['First.', 'Second.']);
    const after = await scrape();
    expect(after.get('loom_running_turns')).toBe(0);
    expect(after.get('loom_queued_turns')).toBe(0);
    // Each turn's messages and usage are committed in one transaction.
    expect((after.get('loom_store_commit_duration_seconds_count{store="sqlite"}') ?? 0) - commitsBefore).toBeGreaterThanOrEqual(2);
    expect(after.get('loom_store_commit_duration_seconds_bucket{le="+Inf",store="sqlite"}')).toBe(
      after.get('loom_store_commit_duration_seconds_count{store="sqlite"}'),
    );
  });

  it("answers only an owner's key, unless [telemetry].metrics_public is set", async () => {
    await serve(KEYS);
    expect((await fetch(`${http.url}/metrics`)).status).toBe(401);
    const viewer = await fetch(`${http.url}/metrics`, { headers: { authorization: 'Bearer viewer-secret' } });
    expect(viewer.status).toBe(403);
    expect(await viewer.text()).toContain('metrics_public');
    metrics.dispose();
    await http.close();
    await host.close();

    await serve({ ...KEYS, telemetry: { metrics_public: true } });
    expect((await scrape('viewer-secret')).has('loom_running_turns')).toBe(true);
    expect((await fetch(`${http.url}/metrics`)).status).toBe(200);
  });
});
