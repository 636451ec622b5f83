/**
 * Forged tools that call tools, through the whole daemon: a model's call of a compose tool runs
 * its steps and its inner tool's steps as tool calls in the audit log, a compose tool that would
 * be a third level fails its own test when it is forged, and a sandboxed tool's fetch is part of
 * its call, ending with its time limit.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_COMPOSE_LEVELS } from '../../src/forged-tools/run-forged.ts';
import { APPROVE } from '../support/forge-requests.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { startTestServer, type TestServer } from '../tools/web-tool-context.ts';

const server = useScriptedModelServer();
let web: TestServer;
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

/** Requests to /hang, answered only when the test says so. */
const hanging: (() => void)[] = [];

beforeAll(async () => {
  web = await startTestServer((request, response) => {
    if (request.url === '/hang') hanging.push(() => response.end('late'));
    else response.end('ok');
  });
});
afterAll(async () => {
  await web.close();
});
beforeEach(async () => {
  web.received.length = 0;
  dir = await makeTempDir('loom-nested-compose-');
  host = await openTestHost(dir.path, { default_model: { provider: 'openai', model: 'gpt-4o', base_url: server.url } });
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

/** Forges a compose tool for "composer" whose steps call `tool` (with `input`) `count` times. */
async function forgeCompose(name: string, tool: string, count: number, input: (index: number) => Record<string, string> = () => ({})) {
  server.script([APPROVE]);
  return host.kernel.forgedTools.forge(
    'composer',
    {
      name,
      description: `Calls ${tool} ${count} times`,
      inputSchema: { type: 'object', properties: {} },
      implementation: {
        mode: 'compose',
        steps: Array.from({ length: count }, (_, index) => ({ name: `s${index + 1}`, tool, inputMapping: input(index + 1) })),
      },
      testCases: [{ input: {} }],
    },
    'test',
  );
}

describe('forged compose tools that call compose tools', () => {
  beforeEach(async () => {
    await host.kernel.spawn(
      manifest(
        `name = "composer"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["forge_tool", "http_request"]\nnetwork = ["127.0.0.1:${web.port}"]\n[emergent]\n`,
      ),
    );
    expect((await forgeCompose('leaf', 'http_request', 3, (index) => ({ url: `${web.origin}/leaf/${index}`, method: 'GET' }))).ok).toBe(true);
    expect((await forgeCompose('middle', 'leaf', 2)).ok).toBe(true);
    web.received.length = 0;
  });

  it("holds a model's call to the agent's [emergent].max_nested_calls, every level counted together", async () => {
    // middle makes 8 nested calls (leaf, 3 requests, leaf, 3 requests); the agent now allows 5.
    await host.kernel.update(
      'composer',
      manifest(
        `name = "composer"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["forge_tool", "http_request"]\nnetwork = ["127.0.0.1:${web.port}"]\n[emergent]\nmax_nested_calls = 5\n`,
      ),
    );
    server.script([{ toolCalls: [{ name: 'middle', input: {} }] }, { text: 'done' }]);
    await host.kernel.send('composer', 'run middle');
    expect(web.received.map((request) => request.url)).toEqual(['/leaf/1', '/leaf/2', '/leaf/3']);
    const refused = await host.kernel.audit({ agent: 'composer', type: 'tool-deny' });
    expect(refused.map((entry) => JSON.stringify(entry.data['reason']))).toContainEqual(expect.stringContaining('[emergent].max_nested_calls = 5'));
  });

  it('runs two levels from one model call, every nested call a tool call in the audit log', async () => {
    // The forges' test runs are in the log already.
    const before = (await host.kernel.audit({ agent: 'composer', type: 'tool-finish' })).length;
    server.script([{ toolCalls: [{ name: 'middle', input: {} }] }, { text: 'done' }]);
    const reply = await host.kernel.send('composer', 'run middle');
    expect(reply.text).toBe('done');
    expect(web.received.map((request) => request.url)).toEqual(['/leaf/1', '/leaf/2', '/leaf/3', '/leaf/1', '/leaf/2', '/leaf/3']);
    const calls = (await host.kernel.audit({ agent: 'composer', type: 'tool-finish' })).slice(before);
    expect(calls.map((entry) => entry.data['tool'])).toEqual([
      ...Array.from({ length: 2 }, () => ['http_request', 'http_request', 'http_request', 'leaf']).flat(),
      'middle',
    ]);
  });

  it('fails the test of a compose tool that would be a third level, without a request of the innermost', async () => {
    const outcome = await forgeCompose('top', 'middle', 2);
    expect(outcome).toMatchObject({ ok: false, stage: 'test' });
    expect(outcome.ok ? '' : outcome.reason).toContain(
      `leaf failed: not run: it was called by a step of a compose tool that is itself a step of another, and compose tools nest at most ${MAX_COMPOSE_LEVELS} levels`,
    );
    expect(web.received).toEqual([]);
  });
});

describe("a sandboxed tool's fetch", () => {
  it("is cancelled when the tool's call times out, and the fetch after it is not started", async () => {
    await host.kernel.spawn(
      manifest(
        `name = "fetcher"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["forge_tool", "http_request"]\nnetwork = ["localhost:${web.port}"]\n` +
          '[emergent]\nallowed_sandbox_apis = ["fetch"]\nfetch_domain_allowlist = ["localhost"]\n[tools.probe]\ntimeout_seconds = 3\n',
      ),
    );
    server.script([APPROVE]);
    const code =
      'async function execute(input) { if (input.origin === "none") return { skipped: true }; const seen = []; ' +
      'for (const path of ["/hang", "/after"]) { try { const r = await fetch(input.origin + path); seen.push(await r.text()); } catch (e) { seen.push("refused"); } } return { seen }; }';
    const forged = await host.kernel.forgedTools.forge(
      'fetcher',
      {
        name: 'probe',
        description: 'Fetches two paths in turn',
        inputSchema: { type: 'object', properties: { origin: { type: 'string' } } },
        implementation: { mode: 'sandbox', code, allowlist: ['fetch'] },
        testCases: [{ input: { origin: 'none' } }],
      },
      'test',
    );
    if (!forged.ok) throw new Error(`expected probe to be forged, got ${forged.reason}`);

    const origin = `http://localhost:${web.port}`;
    server.script([{ toolCalls: [{ name: 'probe', input: { origin } }] }, { text: 'done' }]);
    const reply = host.kernel.send('fetcher', 'probe it');
    await waitFor('the first fetch to reach the server', () => hanging.length === 1);
    await host.clock.advance(3_000);
    expect((await reply).text).toBe('done');
    // The model's last request carries the tool's result.
    const messages = server.requests.at(-1)?.body['messages'] as { role: string; content: string }[];
    expect(JSON.parse(messages.find((message) => message.role === 'tool')?.content ?? '{}')).toEqual({ error: 'tool "probe" timed out after 3 s' });

    // Answer the first fetch, were it still waiting: its http_request call was cancelled with the probe's.
    hanging.shift()?.();
    const fetches = await waitFor("the first fetch's call to end", async () => {
      const ended = await host.kernel.audit({ agent: 'fetcher', types: ['tool-finish', 'tool-fail'] });
      const calls = ended.filter((entry) => entry.data['tool'] === 'http_request');
      return calls.length > 0 && calls;
    });
    expect(fetches.map((entry) => entry.type)).toEqual(['tool-fail']);
    await waitFor('the probe to end', async () => (await host.kernel.forgedTools.get(forged.tool.id)).calls === 1);
    expect(web.received.map((request) => request.url)).toEqual(['/hang']);
  });
});
