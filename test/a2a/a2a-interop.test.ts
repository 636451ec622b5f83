import { type AgentCard, type Message, type Part, Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml } from '../http/api-harness.ts';
import { type A2aHarness, startA2a } from './a2a-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: A2aHarness;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-interop-');
  api = await startA2a(dir.path);
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

const text = (value: string): Part => ({ content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' });
function messageOf(parts: Part[]): Message {
  return { messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts, metadata: undefined, extensions: [], referenceTaskIds: [] };
}
const send = (parts: Part[]) => ({ tenant: '', message: messageOf(parts), configuration: undefined, metadata: undefined });

/** A client factory of the SDK, with or without its 0.3 compatibility. */
function factoryFor(transport: 'JSONRPC' | 'HTTP+JSON', options: { legacyCompat: boolean; cardResolver?: DefaultAgentCardResolver }): ClientFactory {
  const legacyCompat = { enabled: options.legacyCompat };
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ legacyCompat }), new RestTransportFactory({ legacyCompat })],
      preferredTransports: [transport],
      ...(options.cardResolver === undefined ? {} : { cardResolver: options.cardResolver }),
    }),
  );
}

/** A card resolver that sends no `A2A-Version` header (as many 1.0 clients and plain fetches do). */
const versionlessResolver = (): DefaultAgentCardResolver => new DefaultAgentCardResolver({ fetchImpl: (url: string | URL | Request) => fetch(url) });

/** A client of `agent` that read the card served without `A2A-Version`: a 1.0 client, or a 0.3 one (the SDK's 0.3 card parser). */
async function versionlessClient(agent: string, transport: 'JSONRPC' | 'HTTP+JSON', version: '1.0' | '0.3'): Promise<Client> {
  const cardUrl = `${api.url}/a2a/${agent}/.well-known/agent-card.json`;
  if (version === '1.0') return factoryFor(transport, { legacyCompat: false, cardResolver: versionlessResolver() }).createFromUrl(cardUrl, '');
  const card = parseLegacyAgentCard(await (await fetch(cardUrl)).json());
  expect(card.supportedInterfaces.find((entry) => entry.protocolBinding === transport)?.protocolVersion).toMatch(/^0\.3/);
  return factoryFor(transport, { legacyCompat: true }).createFromAgentCard(card);
}

function replyOf(result: unknown): string {
  const task = result as { artifacts: { parts: { content?: { $case: string; value: string } }[] }[] };
  return task.artifacts.flatMap((artifact) => artifact.parts.map((part) => part.content?.value ?? '')).join('');
}

const modes = [
  ['JSONRPC', '1.0'],
  ['HTTP+JSON', '1.0'],
  ['JSONRPC', '0.3'],
  ['HTTP+JSON', '0.3'],
] as const;

describe('the card served without A2A-Version', () => {
  it.each(modes)('a %s client of A2A %s that read it sends a task and gets the answer', async (transport, version) => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'Both revisions read this card.' }]);
    const client = await versionlessClient('echo', transport, version);
    const result = await client.sendMessage(send([text('Hi')]));
    expect('status' in result && result.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(replyOf(result)).toBe('Both revisions read this card.');
  });

  it("holds the 1.0 fields beside the 0.3 ones; a version asked for gets that version's card only", async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    const path = '/a2a/echo/.well-known/agent-card.json';
    const both = (await (await api.request(path)).json()) as Record<string, unknown>;
    expect(both).toMatchObject({
      name: 'echo',
      url: `${api.url}/a2a/echo`,
      protocolVersion: '0.3.0',
      preferredTransport: 'JSONRPC',
      capabilities: { streaming: true, stateTransitionHistory: true },
    });
    expect((both['supportedInterfaces'] as AgentCard['supportedInterfaces']).map((entry) => `${entry.protocolBinding} ${entry.protocolVersion}`)).toEqual([
      'JSONRPC 1.0',
      'HTTP+JSON 1.0',
      'JSONRPC 0.3',
      'HTTP+JSON 0.3',
    ]);
    const v03 = (await (await api.request(path, { headers: { 'A2A-Version': '0.3' } })).json()) as Record<string, unknown>;
    expect(v03).toMatchObject({ url: `${api.url}/a2a/echo`, protocolVersion: '0.3.0' });
    expect(v03).not.toHaveProperty('supportedInterfaces');
    const v10 = (await (await api.request(path, { headers: { 'A2A-Version': '1.0' } })).json()) as Record<string, unknown>;
    expect(v10).toHaveProperty('supportedInterfaces');
    expect(v10).not.toHaveProperty('url');
    expect(v10).not.toHaveProperty('protocolVersion');
    // The default card and the older well-known path follow the same rule.
    expect(await (await api.request('/.well-known/agent-card.json')).json()).toEqual(both);
    expect(await (await api.request('/.well-known/agent.json')).json()).toEqual(both);
  });
});

describe('card caching', () => {
  it('sends Cache-Control, ETag and Last-Modified, and answers 304 to If-None-Match and If-Modified-Since while the card is unchanged', async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url, 'description = "First"')));
    const path = '/a2a/echo/.well-known/agent-card.json';
    const first = await api.request(path);
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag') ?? '';
    const lastModified = first.headers.get('last-modified') ?? '';
    expect(first.headers.get('cache-control')).toBe('public, max-age=300');
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(new Date(lastModified).getTime()).toBe(Math.floor(api.host.clock.now() / 1000) * 1000);
    expect(first.headers.get('vary')).toBe('A2A-Version');

    const unchanged = await api.request(path, { headers: { 'If-None-Match': `"other", W/${etag}` } });
    expect(unchanged.status).toBe(304);
    expect(await unchanged.text()).toBe('');
    expect(unchanged.headers.get('etag')).toBe(etag);
    expect((await api.request(path, { headers: { 'If-Modified-Since': lastModified } })).status).toBe(304);
    // Each revision's card is its own representation.
    const v10 = await api.request(path, { headers: { 'A2A-Version': '1.0', 'If-None-Match': etag } });
    expect(v10.status).toBe(200);
    expect(v10.headers.get('etag')).not.toBe(etag);

    await api.host.clock.advance(5000);
    await api.host.kernel.update('echo', manifest(agentToml('echo', model.url, 'description = "Second"')));
    const changed = await api.request(path, { headers: { 'If-None-Match': etag, 'If-Modified-Since': lastModified } });
    expect(changed.status).toBe(200);
    expect(((await changed.json()) as { description: string }).description).toBe('Second');
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(new Date(changed.headers.get('last-modified') ?? '').getTime()).toBeGreaterThan(new Date(lastModified).getTime());
    expect((await api.request('/a2a/agents', { headers: { 'If-None-Match': (await api.request('/a2a/agents')).headers.get('etag') ?? '' } })).status).toBe(304);
  });
});

describe('trailing slashes', () => {
  it.each(['1.0', '0.3'] as const)('JSON-RPC (A2A %s) at the agent URL with a trailing slash', async (version) => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'Slash or not.' }]);
    const card = (await (await api.request('/a2a/echo/.well-known/agent-card.json', { headers: { 'A2A-Version': '1.0' } })).json()) as AgentCard;
    const slashed: AgentCard = {
      ...card,
      supportedInterfaces: card.supportedInterfaces
        .filter((entry) => entry.protocolBinding === 'JSONRPC' && entry.protocolVersion === version)
        .map((entry) => ({ ...entry, url: `${entry.url}/` })),
    };
    expect(slashed.supportedInterfaces).toEqual([expect.objectContaining({ url: `${api.url}/a2a/echo/` })]);
    const client = await factoryFor('JSONRPC', { legacyCompat: true }).createFromAgentCard(slashed);
    const result = await client.sendMessage(send([text('Hi')]));
    expect(replyOf(result)).toBe('Slash or not.');
    expect((await client.getTask({ tenant: '', id: (result as { id: string }).id, historyLength: undefined })).status?.state).toBe(
      TaskState.TASK_STATE_COMPLETED,
    );
  });

  it('cards, HTTP+JSON (1.0 and 0.3) and the legacy endpoints answer with a trailing slash', async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    for (const path of ['/a2a/echo/.well-known/agent-card.json/', '/.well-known/agent-card.json/', '/.well-known/agent.json/', '/a2a/agents/']) {
      expect((await api.request(path)).status, path).toBe(200);
    }
    model.script([{ text: 'one' }, { text: 'two' }, { text: 'three' }]);
    const json = { 'content-type': 'application/json' };
    const rest = await api.request('/a2a/echo/rest/message:send/', {
      method: 'POST',
      headers: { ...json, 'A2A-Version': '1.0' },
      body: JSON.stringify({ message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'Hi' }] } }),
    });
    expect(rest.status).toBe(200);
    const id = ((await rest.json()) as { task: { id: string } }).task.id;
    expect((await api.request(`/a2a/echo/rest/tasks/${id}/`, { headers: { 'A2A-Version': '1.0' } })).status).toBe(200);
    const v03 = await api.request('/a2a/echo/v1/message:send/', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ request: { messageId: 'm-2', role: 'ROLE_USER', content: [{ text: 'Hi' }] } }),
    });
    expect(v03.status).toBe(201);
    const legacy = await api.request('/a2a/tasks/send/', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/send', params: { message: { role: 'user', parts: [{ type: 'text', text: 'Hi' }] } } }),
    });
    expect(legacy.status).toBe(200);
    const legacyId = ((await legacy.json()) as { id: string }).id;
    expect((await api.request(`/a2a/tasks/${legacyId}/`)).status).toBe(200);
  });
});

describe.each(modes)('message parts over %s (A2A %s)', (transport, version) => {
  async function client(agent: string): Promise<Client> {
    const factory = factoryFor(transport, { legacyCompat: true });
    if (version === '1.0') return factory.createFromUrl(`${api.url}/a2a/${agent}/.well-known/agent-card.json`, '');
    return factory.createFromAgentCard(
      parseLegacyAgentCard(await (await api.request(`/a2a/${agent}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '0.3' } })).json()),
    );
  }

  it('a message whose only part is a file of an unsupported media type gets ContentTypeNotSupportedError (-32005), and no task starts', async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    const image: Part = { content: { $case: 'url', value: 'https://example.com/cat.png' }, metadata: undefined, filename: 'cat.png', mediaType: 'image/png' };
    const error: unknown = await (await client('echo')).sendMessage(send([image])).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ name: expect.stringMatching(/ContentTypeNotSupported/) as unknown });
    expect((error as Error).message).toContain('image/png');
    if (transport === 'JSONRPC') expect(error).toMatchObject({ envelopeCode: -32005 });
    expect(model.requests).toHaveLength(0);
    expect(await api.repository.count()).toBe(0);
  });

  it('a data part reaches the agent as JSON text', async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'Got the data.' }]);
    const data: Part = { content: { $case: 'data', value: { city: 'Paris', days: 3 } }, metadata: undefined, filename: '', mediaType: 'application/json' };
    const result = await (await client('echo')).sendMessage(send([data]));
    expect(replyOf(result)).toBe('Got the data.');
    expect(JSON.stringify(model.requests.at(-1)?.body)).toContain(JSON.stringify(JSON.stringify({ city: 'Paris', days: 3 })).slice(1, -1));
  });
});
