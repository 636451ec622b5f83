import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isLoopbackAddress } from '../../src/access/index.ts';
import { RateLimiter } from '../../src/http/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml, type Api, type ApiOptions, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-http-auth-');
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await dir.remove();
});

const KEYS = {
  config: {
    auth: {
      keys: [
        { name: 'admin', role: 'owner', key_env: 'ADMIN_KEY' },
        { name: 'helper-bot', role: 'user', key_env: 'HELPER_KEY', agents: ['helper-*'] },
        { name: 'dashboard', role: 'viewer', key_env: 'VIEWER_KEY' },
        { name: 'unset', role: 'owner', key_env: 'NOT_SET_ANYWHERE' },
      ],
    },
  },
  env: { ADMIN_KEY: 'admin-secret', HELPER_KEY: 'helper-secret', VIEWER_KEY: 'viewer-secret', LOOM_API_KEY: 'root-secret' },
} satisfies ApiOptions;

async function open(options: ApiOptions): Promise<Api> {
  api = await startApi(dir.path, options);
  return api;
}

const bearer = (key: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${key}` },
});
const spawnInit = (name: string): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml(name, model.url) });
const messageInit = (text: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ message: text }),
});

async function errorCode(response: Response): Promise<string> {
  return ((await response.json()) as { error: { code: string } }).error.code;
}

describe('without API keys', () => {
  it('serves a loopback client as the owner', async () => {
    const served = await open({});
    const response = await served.request('/api/agents', spawnInit('local-agent'));
    expect(response.status).toBe(201);
  });

  it('refuses a non-loopback client with 403 saying only loopback clients are served', async () => {
    const served = await open({ clientAddress: '203.0.113.7' });
    for (const path of ['/api/agents', '/api/health']) {
      const response = await served.request(path);
      expect(response.status).toBe(403);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('ACCESS_DENIED');
      expect(body.error.message).toContain('203.0.113.7');
      expect(body.error.message).toContain('loopback');
    }
  });

  it('serves an IPv4-mapped loopback client', async () => {
    const served = await open({ clientAddress: '::ffff:127.0.0.1' });
    expect((await served.request('/api/agents')).status).toBe(200);
  });
});

describe('with API keys', () => {
  it('answers /api/health without a key', async () => {
    const served = await open(KEYS);
    expect((await served.request('/api/health')).status).toBe(200);
  });

  it('answers 401 UNAUTHORIZED when the key is missing', async () => {
    const served = await open(KEYS);
    const response = await served.request('/api/agents');
    expect(response.status).toBe(401);
    expect(await errorCode(response)).toBe('UNAUTHORIZED');
  });

  it('answers 401 UNAUTHORIZED when the key is wrong, by header or bearer', async () => {
    const served = await open(KEYS);
    expect((await served.request('/api/agents', bearer('admin-secreT'))).status).toBe(401);
    expect((await served.request('/api/agents', { headers: { 'x-api-key': 'nope' } })).status).toBe(401);
  });

  it('accepts a key by Authorization: Bearer or X-API-Key, and LOOM_API_KEY as an owner key', async () => {
    const served = await open(KEYS);
    expect((await served.request('/api/agents', bearer('admin-secret'))).status).toBe(200);
    expect((await served.request('/api/agents', { headers: { 'x-api-key': 'viewer-secret' } })).status).toBe(200);
    expect((await served.request('/api/agents', bearer('root-secret', spawnInit('by-root')))).status).toBe(201);
  });

  it('serves a non-loopback client that presents a valid key', async () => {
    const served = await open({ ...KEYS, clientAddress: '198.51.100.20' });
    expect((await served.request('/api/agents', bearer('admin-secret'))).status).toBe(200);
    expect((await served.request('/api/agents')).status).toBe(401);
  });

  it('answers 403 when a viewer spawns, kills, suspends or messages', async () => {
    const served = await open(KEYS);
    await served.request('/api/agents', bearer('admin-secret', spawnInit('target')));
    const refused = [
      await served.request('/api/agents', bearer('viewer-secret', spawnInit('sneaky'))),
      await served.request('/api/agents/target', bearer('viewer-secret', { method: 'DELETE' })),
      await served.request('/api/agents/target/suspend', bearer('viewer-secret', { method: 'POST' })),
      await served.request('/api/agents/target/messages', bearer('viewer-secret', messageInit('hi'))),
      await served.request('/api/agents/target/session', bearer('viewer-secret', { method: 'DELETE' })),
    ];
    expect(refused.map((response) => response.status)).toEqual([403, 403, 403, 403, 403]);
    expect(await errorCode(refused[0] as Response)).toBe('ACCESS_DENIED');
    expect(served.host.kernel.list().map((agent) => agent.name)).toEqual(['target']);
    expect(served.host.kernel.get('target').state).toBe('running');
    // Reading is allowed.
    expect((await served.request('/api/agents/target', bearer('viewer-secret'))).status).toBe(200);
  });

  it('shows the nodes (GET /api/cluster) to owner and viewer keys, and answers 403 to a user key', async () => {
    const served = await open(KEYS);
    for (const key of ['admin-secret', 'viewer-secret']) {
      const response = await served.request('/api/cluster', bearer(key));
      expect(response.status).toBe(200);
      const view = (await response.json()) as {
        store: string;
        self: string;
        leader: string;
        nodes: { id: string; leader: boolean; self: boolean; alive: boolean }[];
      };
      expect(view.store).toBe('sqlite');
      expect(view.leader).toBe(view.self);
      expect(view.nodes).toEqual([expect.objectContaining({ id: view.self, leader: true, self: true, alive: true })]);
    }
    const refused = await served.request('/api/cluster', bearer('helper-secret'));
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
      'a user key ("helper-bot") may not read the cluster\'s nodes: that shows the whole installation, not its agents; it needs the viewer or owner role',
    );
  });

  it('lets a user message agents matching its patterns, and answers 403 for one outside them', async () => {
    const served = await open(KEYS);
    await served.request('/api/agents', bearer('admin-secret', spawnInit('helper-one')));
    await served.request('/api/agents', bearer('admin-secret', spawnInit('private')));
    model.script([{ text: 'at your service' }]);

    const allowed = await served.request('/api/agents/helper-one/messages', bearer('helper-secret', messageInit('hi')));
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toMatchObject({ text: 'at your service' });

    const refused = await served.request('/api/agents/private/messages', bearer('helper-secret', messageInit('hi')));
    expect(refused.status).toBe(403);
    expect(await errorCode(refused)).toBe('ACCESS_DENIED');
    expect(model.requests).toHaveLength(1);

    const listed = (await (await served.request('/api/agents', bearer('helper-secret'))).json()) as { name: string }[];
    expect(listed.map((agent) => agent.name)).toEqual(['helper-one']);
    expect((await served.request('/api/agents/helper-one', bearer('helper-secret', { method: 'DELETE' }))).status).toBe(403);
  });
});

describe('rate limiting', () => {
  it('answers 429 with Retry-After when a client spends its units, and serves it again once the clock moves on', async () => {
    // 100 units a minute: two messages (30 each) and two spawns (50 each) would be 160.
    const served = await open({ config: { rate_limit: { per_minute: 100, loopback: true } } });
    expect((await served.request('/api/agents', spawnInit('busy'))).status).toBe(201);
    model.script([{ text: 'one' }, { text: 'two' }]);
    expect((await served.request('/api/agents/busy/messages', messageInit('1'))).status).toBe(200);
    const limited = await served.request('/api/agents/busy/messages', messageInit('2'));
    expect(limited.status).toBe(429);
    expect(await errorCode(limited)).toBe('RATE_LIMITED');
    const retryAfter = Number(limited.headers.get('retry-after'));
    // 80 units spent of 100; 30 more needs 10 units back, 6 s at 100 a minute.
    expect(retryAfter).toBe(6);

    await served.host.clock.advance(retryAfter * 1000);
    expect((await served.request('/api/agents/busy/messages', messageInit('2'))).status).toBe(200);
  });

  it('does not limit the local user (loopback, no keys) unless [rate_limit].loopback says so', async () => {
    const served = await open({ config: { rate_limit: { per_minute: 10 } } });
    for (let index = 0; index < 5; index += 1) expect((await served.request('/api/agents')).status).toBe(200);
  });

  it('counts each API key separately', async () => {
    const served = await open({ ...KEYS, config: { ...KEYS.config, rate_limit: { per_minute: 10 } } });
    expect((await served.request('/api/agents', bearer('admin-secret'))).status).toBe(200);
    expect((await served.request('/api/agents', bearer('admin-secret'))).status).toBe(200);
    expect((await served.request('/api/agents', bearer('admin-secret'))).status).toBe(429);
    expect((await served.request('/api/agents', bearer('viewer-secret'))).status).toBe(200);
  });

  it('charges refused keys to the client address, so guessing keys is rate limited too', async () => {
    const served = await open({ ...KEYS, config: { ...KEYS.config, rate_limit: { per_minute: 10 } } });
    expect((await served.request('/api/agents', bearer('guess-1'))).status).toBe(401);
    expect((await served.request('/api/agents', bearer('guess-2'))).status).toBe(401);
    const limited = await served.request('/api/agents', bearer('guess-3'));
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('30');
  });
});

/** A request that starts one turn of the agent "echo" (or of the workflow agent "lead"), as some door spells it. */
interface TurnSpelling {
  name: string;
  config?: Record<string, unknown>;
  workflow?: boolean;
  request(): [string, RequestInit];
}

const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
const jsonRpcSend = (): unknown => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'message/send',
  params: { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'hi' }] } },
});
const restV03Send = (): unknown => ({ request: { messageId: randomUUID(), role: 'ROLE_USER', content: [{ text: 'hi' }] } });

const TURN_SPELLINGS: TurnSpelling[] = [
  { name: 'POST /api/agents/echo/messages', request: () => ['/api/agents/echo/messages', messageInit('hi')] },
  { name: 'A2A JSON-RPC, POST /a2a/echo', request: () => ['/a2a/echo', json(jsonRpcSend())] },
  { name: 'A2A JSON-RPC with a trailing slash, POST /a2a/echo/', request: () => ['/a2a/echo/', json(jsonRpcSend())] },
  { name: 'A2A 0.3 HTTP+JSON, POST /a2a/echo/v1/message:send', request: () => ['/a2a/echo/v1/message:send', json(restV03Send())] },
  { name: 'A2A 0.3 HTTP+JSON streamed, POST /a2a/echo/v1/message:stream', request: () => ['/a2a/echo/v1/message:stream', json(restV03Send())] },
  {
    name: 'A2A 1.0 HTTP+JSON with a trailing slash, POST /a2a/echo/rest/message:send/',
    request: () => ['/a2a/echo/rest/message:send/', json({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] } })],
  },
  {
    name: 'the legacy shim with a trailing slash, POST /a2a/tasks/send/',
    request: () => [
      '/a2a/tasks/send/',
      json({ jsonrpc: '2.0', id: 1, method: 'tasks/send', params: { message: { role: 'user', parts: [{ type: 'text', text: 'hi' }] } } }),
    ],
  },
  {
    name: 'A2A JSON-RPC under a custom [a2a].listen_path, POST /peers/echo',
    config: { a2a: { listen_path: '/peers' } },
    request: () => ['/peers/echo', json(jsonRpcSend())],
  },
  { name: 'a workflow command, POST /api/agents/lead/workflow/pause', workflow: true, request: () => ['/api/agents/lead/workflow/pause', { method: 'POST' }] },
];

describe('rate limiting of turns', () => {
  // 90 units a minute: three turns (30 each), whatever door they come through; the fourth waits.
  it.each(TURN_SPELLINGS)('charges a turn started by $name as a message: the fourth in a minute at 90 units is refused 429', async (spelling) => {
    const served = await open({ config: { rate_limit: { per_minute: 90, loopback: true }, ...spelling.config } });
    const agent =
      spelling.workflow === true
        ? `name = "lead"\nmodule = "builtin:workflow"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n[capabilities]\ntools = ["agent_message"]\nagent_message = ["echo"]\n[workflow]\nmanaged_agents = ["echo"]\n`
        : agentToml('echo', model.url);
    if (spelling.workflow === true) await served.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    await served.host.kernel.spawn(manifest(agent));
    // A workflow agent takes a command it cannot apply as a request, and plans it: each turn gets a plan.
    const plan = {
      summary: 'one task',
      missing_info: null,
      tasks: [{ id: 't1', title: 'task', instruction: 'do it', agent: 'echo', depends_on: [], acceptance: 'done' }],
    };
    // A fourth reply, so that a fourth turn let through answers (and fails the test) rather than waits.
    model.script(['one', 'two', 'three', 'four'].map((text) => ({ text: spelling.workflow === true ? JSON.stringify(plan) : text })));
    const statuses: number[] = [];
    for (let turn = 0; turn < 4; turn += 1) {
      const [path, init] = spelling.request();
      const response = await served.request(path, init);
      await response.text();
      statuses.push(response.status);
    }
    expect(statuses.slice(0, 3).every((status) => status >= 200 && status < 300)).toBe(true);
    expect(statuses[3]).toBe(429);
  });

  it("answers a refused A2A turn with the API's 429 and Retry-After, and starts no turn", async () => {
    const served = await open({ config: { rate_limit: { per_minute: 90, loopback: true } } });
    await served.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'one' }, { text: 'two' }, { text: 'three' }, { text: 'four' }, { text: 'five' }]);
    for (let turn = 0; turn < 3; turn += 1) expect((await served.request('/a2a/echo/v1/message:send', json(restV03Send()))).status).toBe(201);
    const before = model.requests.length;
    for (const [path, init] of [
      ['/a2a/echo/v1/message:send', json(restV03Send())],
      ['/a2a/echo/', json(jsonRpcSend())],
    ] as const) {
      const limited = await served.request(path, init);
      expect(limited.status).toBe(429);
      expect(await errorCode(limited)).toBe('RATE_LIMITED');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    expect(model.requests.length).toBe(before);
  });
});

describe('RateLimiter', () => {
  it("allows a minute's worth of units in a burst, then one interval at a time", () => {
    let now = 0;
    const limiter = new RateLimiter(60, () => now);
    for (let index = 0; index < 60; index++) expect(limiter.take('a', 1)).toEqual({ allowed: true });
    expect(limiter.take('a', 1)).toEqual({ allowed: false, retryAfterMs: 1000 });
    now += 1000;
    expect(limiter.take('a', 1)).toEqual({ allowed: true });
    expect(limiter.take('b', 60)).toEqual({ allowed: true });
  });

  it("refuses a request costing more than a minute's worth, and does not charge for it", () => {
    const limiter = new RateLimiter(10, () => 0);
    expect(limiter.take('a', 11).allowed).toBe(false);
    expect(limiter.take('a', 10).allowed).toBe(true);
  });
});

describe('isLoopbackAddress()', () => {
  it('accepts 127.0.0.0/8, ::1 and IPv4-mapped 127.x, and nothing else', () => {
    expect(['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1'].map(isLoopbackAddress)).toEqual([true, true, true, true]);
    expect(['10.0.0.1', '128.0.0.1', '::ffff:10.0.0.1', '::2', '', 'localhost'].map(isLoopbackAddress)).toEqual([false, false, false, false, false, false]);
  });
});
