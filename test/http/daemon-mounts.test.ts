import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { type Api, startApi } from './api-harness.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

beforeEach(async () => {
  dir = await makeTempDir('loom-mounts-');
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

const withKeys = {
  config: {
    auth: { keys: [{ name: 'ci', role: 'owner', key_env: 'CI_KEY' }] },
    mcp_servers: [{ name: 'files', transport: { type: 'stdio', command: 'mcp-files' } }],
  },
  env: { CI_KEY: 'secret' },
};

describe('what the daemon serves besides /api', () => {
  it('serves the cards of [a2a].public_agents without a key, and everything else only with a key', async () => {
    api = await startApi(dir.path, { ...withKeys, config: { ...withKeys.config, a2a: { public_agents: ['carded'] } } });
    await api.host.kernel.spawn(manifest('name = "carded"\ndescription = "Has a card"'));
    const card = await api.request('/.well-known/agent-card.json');
    expect(card.status).toBe(200);
    expect(((await card.json()) as { name: string }).name).toBe('carded');
    expect((await api.request('/a2a/carded/.well-known/agent-card.json')).status).toBe(200);
    expect((await api.request('/a2a/agents')).status).toBe(200);
    expect((await api.request('/a2a/tasks/unknown')).status).toBe(401);
    expect((await api.request('/api/a2a/external')).status).toBe(401);
    const external = await api.request('/api/a2a/external', { headers: { authorization: 'Bearer secret' } });
    expect(await external.json()).toMatchObject({ agents: [], total: 0 });
  });

  it('lists the configured MCP servers, not started outside the daemon', async () => {
    api = await startApi(dir.path, withKeys);
    const response = await api.request('/api/mcp/servers', { headers: { authorization: 'Bearer secret' } });
    expect(await response.json()).toEqual({
      configured: [{ name: 'files', transport: 'stdio', status: 'not started', tools: [] }],
      connected: [],
      total_configured: 1,
      total_connected: 0,
    });
  });

  it('refuses /mcp without a key when keys are configured', async () => {
    api = await startApi(dir.path, withKeys);
    const response = await api.request('/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });
    expect(response.status).toBe(401);
  });
});
