import type { Client, Tool } from '@modelcontextprotocol/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/test-kernel.ts';
import { OWNER_AND_HELPER_KEYS } from '../http/api-harness.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import {
  agentManifest,
  type ClientKind,
  MODERN_REVISION,
  connectClient,
  firstText,
  type McpHttpServer,
  startMcpHttpServer,
  waitFor,
} from './server-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let served: McpHttpServer | undefined;
const clients: Client[] = [];

beforeEach(async () => {
  dir = await makeTempDir('loom-mcp-server-http-');
});
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await served?.close();
  served = undefined;
  await dir.remove();
});

async function serve(options: Parameters<typeof startMcpHttpServer>[1] = {}): Promise<McpHttpServer> {
  served = await startMcpHttpServer(dir.path, options);
  return served;
}

async function connect(url: string, kind: ClientKind, options: Parameters<typeof connectClient>[2] = {}): Promise<Client> {
  const client = await connectClient(url, kind, options);
  clients.push(client);
  return client;
}

const KEYS = OWNER_AND_HELPER_KEYS;

describe.each<ClientKind>(['modern', 'legacy-streamable', 'legacy-sse'])('the MCP endpoint with a %s client', (kind) => {
  it('lists each live agent as loom_agent_<name> with one message parameter and its description', async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('code-reviewer', model.url, 'Reviews code changes'));
    await host.kernel.spawn(agentManifest('Helper-Two', model.url));
    const client = await connect(url, kind);
    expect(client.getProtocolEra()).toBe(kind === 'modern' ? 'modern' : 'legacy');
    if (kind === 'modern') expect(client.getNegotiatedProtocolVersion()).toBe(MODERN_REVISION);
    if (kind === 'legacy-sse') expect(client.getNegotiatedProtocolVersion()).toMatch(/^2025-|^2024-/);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['loom_agent_code_reviewer', 'loom_agent_helper_two']);
    const reviewer = tools[0] as Tool;
    expect(reviewer.description).toContain('Reviews code changes');
    expect(reviewer.inputSchema).toMatchObject({ type: 'object', properties: { message: { type: 'string' } }, required: ['message'] });
  });

  it('calls an agent tool: the message reaches the agent and its scripted reply comes back', async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('helper', model.url));
    model.script([{ text: 'Oslo.' }]);
    const client = await connect(url, kind);
    const result = await client.callTool({ name: 'loom_agent_helper', arguments: { message: 'Capital of Norway?' } });
    expect(result.isError).not.toBe(true);
    expect(firstText(result)).toBe('Oslo.');
    expect(JSON.stringify(model.requests[0]?.body)).toContain('Capital of Norway?');
  });
});

describe('the MCP endpoint with a client that speaks only 2024-11-05', () => {
  it('negotiates 2024-11-05 over HTTP+SSE, lists the agents and calls one', async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('helper', model.url));
    model.script([{ text: 'Old but fine.' }]);
    const client = await connect(url, 'legacy-sse', { clientOptions: { supportedProtocolVersions: ['2024-11-05'] } });
    expect(client.getNegotiatedProtocolVersion()).toBe('2024-11-05');
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['loom_agent_helper']);
    expect(firstText(await client.callTool({ name: 'loom_agent_helper', arguments: { message: 'hi' } }))).toBe('Old but fine.');
  });
});

describe('the MCP endpoint, tool errors', () => {
  it('answers a failed turn and a missing message as tool errors carrying the reason, an unknown tool as the protocol error', async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('helper', model.url));
    model.script([{ status: 400 }]);
    const client = await connect(url, 'modern');
    const failed = await client.callTool({ name: 'loom_agent_helper', arguments: { message: 'hi' } });
    expect(failed.isError).toBe(true);
    expect(firstText(failed)).toContain('openai/gpt-4o');
    await expect(client.callTool({ name: 'loom_agent_nobody', arguments: { message: 'hi' } })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('Unknown tool: loom_agent_nobody') as unknown,
    });
    const empty = await client.callTool({ name: 'loom_agent_helper', arguments: {} });
    expect(empty).toMatchObject({ isError: true });
    expect(firstText(empty)).toContain('message');
  });
});

describe('the MCP endpoint, tools/list_changed', () => {
  it.each<ClientKind>(['modern', 'legacy-streamable', 'legacy-sse'])('tells a %s client when an agent is spawned and when one is killed', async (kind) => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('first', model.url));
    const lists: string[][] = [];
    let waiter: ReturnType<typeof waitFor<string[]>> | undefined;
    const client = await connect(url, kind, {
      clientOptions: {
        listChanged: {
          tools: {
            debounceMs: 0,
            onChanged: (_error, tools) => {
              const names = (tools ?? []).map((tool) => tool.name);
              lists.push(names);
              waiter?.push(names);
            },
          },
        },
      },
    });
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['loom_agent_first']);

    waiter = waitFor((names) => names.includes('loom_agent_second'));
    await host.kernel.spawn(agentManifest('second', model.url));
    expect(await waiter.done).toEqual(['loom_agent_first', 'loom_agent_second']);

    waiter = waitFor((names) => !names.includes('loom_agent_first'));
    await host.kernel.kill('first');
    expect(await waiter.done).toEqual(['loom_agent_second']);
  });
});

describe('the MCP endpoint, authentication', () => {
  it('refuses a call without an API key with 401 when keys are configured', async () => {
    const { url, host } = await serve(KEYS);
    await host.kernel.spawn(agentManifest('helper', model.url));
    const response = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
    expect((await fetch(`${url}/mcp/sse`)).status).toBe(401);
    await expect(connectClient(url, 'modern')).rejects.toThrow();
    await expect(connectClient(url, 'legacy-streamable', { apiKey: 'wrong-key' })).rejects.toThrow();
  });

  it.each<ClientKind>(['modern', 'legacy-streamable', 'legacy-sse'])("serves a %s client with a valid key, as that key's principal", async (kind) => {
    const { url, host } = await serve(KEYS);
    await host.kernel.spawn(agentManifest('helper-one', model.url));
    await host.kernel.spawn(agentManifest('private', model.url));
    model.script([{ text: 'Done.' }]);

    const admin = await connect(url, kind, { apiKey: 'admin-secret' });
    expect((await admin.listTools()).tools.map((tool) => tool.name)).toEqual(['loom_agent_helper_one', 'loom_agent_private']);

    const helperBot = await connect(url, kind, { apiKey: 'helper-secret' });
    expect((await helperBot.listTools()).tools.map((tool) => tool.name)).toEqual(['loom_agent_helper_one']);
    expect(firstText(await helperBot.callTool({ name: 'loom_agent_helper_one', arguments: { message: 'go' } }))).toBe('Done.');
    // An agent the key may not reach is no tool of its: unknown, as if it did not exist.
    await expect(helperBot.callTool({ name: 'loom_agent_private', arguments: { message: 'go' } })).rejects.toMatchObject({ code: -32602 });
  });

  it('charges protocol messages like reads and a call that runs a turn like a message, and leaves the local user unlimited', async () => {
    // 100 units a minute: a connect (initialize and tools/list here, 5 each) and two turns (30 each) fit; a third turn does not.
    const { url, host } = await serve({ ...KEYS, config: { ...KEYS.config, rate_limit: { per_minute: 100 } } });
    await host.kernel.spawn(agentManifest('helper-one', model.url));
    model.script([{ text: 'one' }, { text: 'two' }, { text: 'three' }]);
    const client = await connect(url, 'legacy-streamable', { apiKey: 'helper-secret' });
    for (let index = 0; index < 4; index += 1) expect((await client.listTools()).tools).toHaveLength(1);
    expect(firstText(await client.callTool({ name: 'loom_agent_helper_one', arguments: { message: '1' } }))).toBe('one');
    expect(firstText(await client.callTool({ name: 'loom_agent_helper_one', arguments: { message: '2' } }))).toBe('two');
    const throttled = await client.callTool({ name: 'loom_agent_helper_one', arguments: { message: '3' } }).catch((error: unknown) => error);
    expect(JSON.stringify(throttled)).toMatch(/too many requests|429/);
    await served?.close();

    // No keys: the local user's IDE starting up is never throttled.
    served = await startMcpHttpServer(dir.path, { config: { rate_limit: { per_minute: 10 } } });
    const local = await connect(served.url, 'modern');
    for (let index = 0; index < 20; index += 1) expect((await local.listTools()).tools).toHaveLength(1);
  });

  it('refuses a client that is not on loopback when no key is configured', async () => {
    const { url } = await serve({ clientAddress: '203.0.113.7' });
    const response = await fetch(`${url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).toBe(403);
  });
});
