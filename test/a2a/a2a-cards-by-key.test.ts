import { randomUUID } from 'node:crypto';
import { AgentCard, type Message, Role, TaskState } from '@a2a-js/sdk';
import { type Client, ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createA2aServer, InMemoryA2aTaskRepository } from '../../src/a2a/index.ts';
import { ConfigSchema } from '../../src/config/index.ts';
import { startHttpServer } from '../../src/http/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost } from '../support/test-host.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { agentToml, type Api, OWNER_AND_HELPER_KEYS, startApi } from '../http/api-harness.ts';

/**
 * With API keys configured, an agent card is shown only to a caller whose key reaches the agent
 * (or to anyone when `[a2a].public_agents` names it); a card the caller may not see answers 404
 * as an unknown agent does. Cards declare the key schemes they require, in A2A 1.0 and 0.3.
 */

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api | undefined;

/** The owner `admin-secret`, the user `helper-secret` (agents `helper-*`), and a viewer `viewer-secret`. */
const KEYS = {
  config: { auth: { keys: [...OWNER_AND_HELPER_KEYS.config.auth.keys, { name: 'watcher', role: 'viewer', key_env: 'VIEWER_KEY' }] } },
  env: { ...OWNER_AND_HELPER_KEYS.env, VIEWER_KEY: 'viewer-secret' },
};

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-cards-by-key-');
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await dir.remove();
});

/** A daemon with `KEYS` (and `a2a` config) serving the agents "private" (spawned first: the default agent), "helper-one" and "helper-two". */
async function startKeyed(a2a: Record<string, unknown> = {}): Promise<Api> {
  api = await startApi(dir.path, { config: { ...KEYS.config, a2a }, env: KEYS.env });
  for (const name of ['private', 'helper-one', 'helper-two'])
    await api.host.kernel.spawn(manifest(agentToml(name, model.url, `description = "The ${name} agent"`)));
  return api;
}

const withKey = (key: string | undefined, headers: Record<string, string> = {}): RequestInit => ({
  headers: key === undefined ? headers : { ...headers, authorization: `Bearer ${key}` },
});

async function listed(daemon: Api, key: string | undefined): Promise<string[]> {
  const response = await daemon.request('/a2a/agents', withKey(key));
  expect(response.status).toBe(200);
  const body = (await response.json()) as { agents: { name: string }[]; total: number };
  expect(body.total).toBe(body.agents.length);
  return body.agents.map((agent) => agent.name).sort();
}

/** Every path that serves `agent`'s card (the per-agent path, in each revision and with a trailing slash). */
const cardPaths = (agent: string): [string, Record<string, string>][] => [
  [`/a2a/${agent}/.well-known/agent-card.json`, {}],
  [`/a2a/${agent}/.well-known/agent-card.json/`, {}],
  [`/a2a/${agent}/.well-known/agent-card.json`, { 'A2A-Version': '1.0' }],
  [`/a2a/${agent}/.well-known/agent-card.json`, { 'A2A-Version': '0.3' }],
];

/** Expects `response` to be the 404 an unknown agent gets, naming nothing but `asked`. */
async function expectUnknown(response: Response, asked: string, hidden: string[]): Promise<void> {
  expect(response.status).toBe(404);
  const text = await response.text();
  expect(JSON.parse(text)).toEqual({ error: { code: 'AGENT_NOT_FOUND', message: `no agent named "${asked}"` } });
  for (const name of hidden) expect(text).not.toContain(name);
}

describe('A2A cards with API keys', () => {
  it('anonymous callers see no card: /a2a/agents lists none, and every card path answers 404 as for an unknown agent', async () => {
    const daemon = await startKeyed();
    expect(await listed(daemon, undefined)).toEqual([]);
    for (const agent of ['private', 'helper-one']) {
      for (const [path, headers] of cardPaths(agent)) await expectUnknown(await daemon.request(path, { headers }), agent, []);
    }
    const unknown = await daemon.request('/a2a/nobody/.well-known/agent-card.json');
    await expectUnknown(unknown, 'nobody', []);
    // The default card paths name no agent either.
    for (const path of ['/.well-known/agent-card.json', '/.well-known/agent.json', '/.well-known/agent-card.json/']) {
      const response = await daemon.request(path);
      expect(response.status).toBe(404);
      const text = await response.text();
      expect((JSON.parse(text) as { error: { code: string } }).error.code).toBe('AGENT_NOT_FOUND');
      for (const name of ['private', 'helper']) expect(text).not.toContain(name);
    }
    // What a caller sees depends on its key: no cache may keep one caller's answer for another.
    const list = await daemon.request('/a2a/agents');
    expect(list.headers.get('cache-control')).toBe('private, max-age=300');
    expect(list.headers.get('vary')).toMatch(/Authorization/);
    expect(list.headers.get('vary')).toMatch(/X-API-Key/);
  });

  it('a public agent ([a2a].public_agents) is shown without a key; the others stay hidden', async () => {
    const daemon = await startKeyed({ public_agents: ['helper-one'] });
    expect(await listed(daemon, undefined)).toEqual(['helper-one']);
    for (const [path, headers] of cardPaths('helper-one')) expect((await daemon.request(path, { headers })).status).toBe(200);
    await expectUnknown(await daemon.request('/a2a/private/.well-known/agent-card.json'), 'private', []);
    await expectUnknown(await daemon.request('/a2a/helper-two/.well-known/agent-card.json'), 'helper-two', []);
    // Calling it still needs a key.
    const call = await daemon.request('/a2a/helper-one', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: {} }),
    });
    expect(call.status).toBe(401);
  });

  it("a user key limited to helper-* lists only its agents, and gets 404 for another agent's card and endpoints, as for an unknown agent", async () => {
    const daemon = await startKeyed();
    expect(await listed(daemon, 'helper-secret')).toEqual(['helper-one', 'helper-two']);
    for (const [path, headers] of cardPaths('helper-one')) expect((await daemon.request(path, withKey('helper-secret', headers))).status).toBe(200);
    for (const [path, headers] of cardPaths('private')) await expectUnknown(await daemon.request(path, withKey('helper-secret', headers)), 'private', []);
    // The card the SDK's 0.3 router serves, and the agent's endpoints, are as unknown too.
    await expectUnknown(await daemon.request('/a2a/private/v1/card', withKey('helper-secret')), 'private', []);
    await expectUnknown(await daemon.request('/a2a/private/rest/tasks', withKey('helper-secret', { 'A2A-Version': '1.0' })), 'private', []);
    const rpc = {
      method: 'POST',
      headers: { authorization: 'Bearer helper-secret', 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'agent/getAuthenticatedExtendedCard', params: {} }),
    };
    await expectUnknown(await daemon.request('/a2a/private', rpc), 'private', []);
    // The default agent ("private") is not its: the default card paths name nothing.
    for (const path of ['/.well-known/agent-card.json', '/.well-known/agent.json']) {
      const response = await daemon.request(path, withKey('helper-secret'));
      expect(response.status).toBe(404);
      expect(await response.text()).not.toContain('private');
    }
    // The X-API-Key header is read the same way.
    expect(await (await daemon.request('/a2a/agents', { headers: { 'x-api-key': 'helper-secret' } })).json()).toMatchObject({ total: 2 });
  });

  it('an owner and a viewer see every card, the default one included', async () => {
    const daemon = await startKeyed();
    for (const key of ['admin-secret', 'viewer-secret']) {
      expect(await listed(daemon, key)).toEqual(['helper-one', 'helper-two', 'private']);
      const card = await daemon.request('/.well-known/agent-card.json', withKey(key));
      expect(((await card.json()) as { name: string }).name).toBe('private');
      expect((await daemon.request('/a2a/private/.well-known/agent-card.json', withKey(key))).status).toBe(200);
    }
  });

  it('cards declare the bearer and X-API-Key schemes and require one, in A2A 1.0, 0.3, and the card both read', async () => {
    const daemon = await startKeyed();
    const path = '/a2a/helper-one/.well-known/agent-card.json';
    const v1 = (await (await daemon.request(path, withKey('admin-secret', { 'A2A-Version': '1.0' }))).json()) as Record<string, unknown>;
    expect(v1['securitySchemes']).toEqual({
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'A Loom API key: "Authorization: Bearer <key>"' } },
      apiKey: { apiKeySecurityScheme: { location: 'header', name: 'X-API-Key', description: 'A Loom API key: "X-API-Key: <key>"' } },
    });
    expect(v1['securityRequirements']).toEqual([{ schemes: { bearer: { list: [] } } }, { schemes: { apiKey: { list: [] } } }]);
    // The SDK's reading of the 1.0 card.
    const parsed = AgentCard.fromJSON(v1);
    expect(parsed.securitySchemes['bearer']?.scheme).toEqual({
      $case: 'httpAuthSecurityScheme',
      value: { scheme: 'Bearer', bearerFormat: '', description: 'A Loom API key: "Authorization: Bearer <key>"' },
    });
    expect(parsed.securitySchemes['apiKey']?.scheme?.$case).toBe('apiKeySecurityScheme');

    const legacySchemes = {
      bearer: { type: 'http', scheme: 'Bearer', description: 'A Loom API key: "Authorization: Bearer <key>"' },
      apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'A Loom API key: "X-API-Key: <key>"' },
    };
    const legacySecurity = [{ bearer: [] }, { apiKey: [] }];
    const v03 = (await (await daemon.request(path, withKey('admin-secret', { 'A2A-Version': '0.3' }))).json()) as Record<string, unknown>;
    expect(v03['securitySchemes']).toEqual(legacySchemes);
    expect(v03['security']).toEqual(legacySecurity);
    expect(parseLegacyAgentCard(v03 as never).securityRequirements).toEqual(parsed.securityRequirements);
    // The card served without A2A-Version: each scheme in both shapes, and both revisions' requirements.
    const dual = (await (await daemon.request(path, withKey('admin-secret'))).json()) as Record<string, unknown>;
    expect(dual['security']).toEqual(legacySecurity);
    expect(dual['securityRequirements']).toEqual(v1['securityRequirements']);
    expect(dual['securitySchemes']).toEqual({
      bearer: { ...legacySchemes.bearer, ...(v1['securitySchemes'] as { bearer: object }).bearer },
      apiKey: { ...legacySchemes.apiKey, ...(v1['securitySchemes'] as { apiKey: object }).apiKey },
    });
    // The listing's cards are the card both read.
    const list = (await (await daemon.request('/a2a/agents', withKey('admin-secret'))).json()) as { agents: Record<string, unknown>[] };
    expect(list.agents[0]?.['security']).toEqual(legacySecurity);
  });

  it("the SDK's client reads the card with a key and calls the agent with it (1.0 JSON-RPC and HTTP+JSON, and a 0.3 client)", async () => {
    const daemon = await startKeyed();
    for (const [transport, version, header] of [
      ['JSONRPC', '1.0', 'authorization'],
      ['HTTP+JSON', '1.0', 'x-api-key'],
      ['JSONRPC', '0.3', 'authorization'],
    ] as const) {
      const keyOf = header === 'authorization' ? 'Bearer helper-secret' : 'helper-secret';
      const fetchImpl: typeof fetch = (input, init) =>
        fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers).entries()), [header]: keyOf } });
      const legacyCompat = { enabled: version === '0.3' };
      // The resolver asks for the card in the client's revision (the 0.3 card for a 0.3 client), with the key.
      const cardFetch: typeof fetch = (input, init) =>
        fetchImpl(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers).entries()), 'a2a-version': version } });
      const factory = new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat }), new RestTransportFactory({ fetchImpl, legacyCompat })],
          preferredTransports: [transport],
          cardResolver: new DefaultAgentCardResolver({ fetchImpl: cardFetch, legacyCompat }),
        }),
      );
      const client: Client = await factory.createFromUrl(`${daemon.url}/a2a/helper-one/.well-known/agent-card.json`, '');
      const card = await client.getAgentCard();
      expect(card.securitySchemes['bearer']?.scheme?.$case).toBe('httpAuthSecurityScheme');
      expect(card.securityRequirements.map((requirement) => Object.keys(requirement.schemes))).toEqual([['bearer'], ['apiKey']]);
      model.script([{ text: `hello over ${transport} ${version}` }]);
      const result = await client.sendMessage(send('hello'));
      if (!('status' in result)) throw new Error('expected a task');
      expect({ transport, version, state: result.status?.state, text: JSON.stringify(result.status?.message) }).toMatchObject({
        state: TaskState.TASK_STATE_COMPLETED,
      });
      expect(JSON.stringify(result.artifacts)).toContain(`hello over ${transport} ${version}`);
    }
  });
});

describe('A2A cards without API keys', () => {
  it('are as before for the loopback owner: every card listed, public caching, and no scheme declared', async () => {
    api = await startApi(dir.path);
    for (const name of ['private', 'helper-one']) await api.host.kernel.spawn(manifest(agentToml(name, model.url)));
    expect(await listed(api, undefined)).toEqual(['helper-one', 'private']);
    const response = await api.request('/a2a/private/.well-known/agent-card.json');
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    const dual = (await response.json()) as Record<string, unknown>;
    expect(dual['securitySchemes']).toEqual({});
    expect(dual['security']).toEqual([]);
    expect(dual['securityRequirements']).toEqual([]);
    const v03 = (await (await api.request('/a2a/private/.well-known/agent-card.json', { headers: { 'A2A-Version': '0.3' } })).json()) as Record<
      string,
      unknown
    >;
    expect(v03).not.toHaveProperty('securitySchemes');
    expect(v03).not.toHaveProperty('security');
  });
});

describe('createA2aServer({ keyed })', () => {
  it('says whether nobody authenticated is anonymous behind keys (public agents only) or a client of a daemon without keys (every card)', async () => {
    const host = await openTestHost(dir.path, {});
    try {
      for (const name of ['private', 'helper-one']) await host.kernel.spawn(manifest(agentToml(name, model.url)));
      for (const keyed of [true, false]) {
        const a2a = createA2aServer({
          kernel: host.kernel,
          config: ConfigSchema.parse({ a2a: { public_agents: ['helper-*'] } }),
          repository: new InMemoryA2aTaskRepository(),
          logger: createSilentLogger(),
          callerOf: () => undefined,
          keyed,
        });
        const app = new Hono();
        app.route('/', a2a.publicRoutes);
        const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
        try {
          const list = (await (await fetch(`${server.url}/a2a/agents`)).json()) as { agents: { name: string; securitySchemes: object }[] };
          expect(list.agents.map((agent) => agent.name).sort()).toEqual(keyed ? ['helper-one'] : ['helper-one', 'private']);
          expect(Object.keys(list.agents[0]?.securitySchemes ?? {})).toEqual(keyed ? ['bearer', 'apiKey'] : []);
        } finally {
          a2a.close();
          await server.close();
        }
      }
    } finally {
      await host.close();
    }
  });
});

function send(text: string): { tenant: string; message: Message; configuration: undefined; metadata: undefined } {
  return {
    tenant: '',
    message: {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}
