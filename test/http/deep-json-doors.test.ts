/**
 * A body nested past MAX_JSON_DEPTH is refused at every door, also where an SDK parses the body
 * itself (MCP's /mcp, A2A's JSON-RPC, REST and legacy endpoints, under any listen path): 400 with a
 * JSON-RPC error naming the limit, before anything walks it, and the daemon answers the next request.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { agentToml, type Api, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

beforeEach(async () => {
  dir = await makeTempDir('loom-deep-json-');
  api = await startApi(dir.path, { config: { a2a: { enabled: true } } });
  const spawned = await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('helper', model.url) });
  expect(spawned.status).toBe(201);
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

/** A JSON-RPC request whose params hold `depth` nested arrays. */
const deepRequest = (method: string, depth: number): string =>
  `{"jsonrpc":"2.0","id":1,"method":"${method}","params":{"deep":${'['.repeat(depth)}${']'.repeat(depth)}}}`;

const post = (path: string, body: string): Promise<Response> =>
  api.request(path, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body });

/** Expects the answer to a body nested too deep, and that `served` answers the next request. */
async function expectRefused(refused: Response, served: Api = api): Promise<void> {
  expect(refused.status).toBe(400);
  expect(await refused.json()).toEqual({
    jsonrpc: '2.0',
    id: null,
    error: { code: -32600, message: "cannot read the request body: it is nested deeper than 512 levels, Loom's limit for JSON (MAX_JSON_DEPTH)" },
  });
  expect((await served.request('/api/health')).status).toBe(200);
}

describe('a body nested past 512 levels', () => {
  it.each([
    ['MCP', '/mcp', 'tools/call'],
    ['A2A JSON-RPC', '/a2a/helper', 'message/send'],
    ['A2A REST', '/a2a/helper/v1/message:send', 'message/send'],
    ['A2A HTTP+JSON 1.0', '/a2a/helper/rest/message:send', 'message/send'],
    ['A2A legacy', '/a2a/tasks/send', 'tasks/send'],
  ])('is refused at %s (%s) with a JSON-RPC error naming the limit, and the daemon answers the next request', async (_door, path, method) => {
    await expectRefused(await post(path, deepRequest(method, 100_000)));
  });

  it('is refused at A2A listening at "/" as well', async () => {
    const rooted = await startApi(`${dir.path}/rooted`, { config: { a2a: { enabled: true, listen_path: '/' } } });
    try {
      const spawned = await rooted.request('/api/agents', {
        method: 'POST',
        headers: { 'content-type': 'application/toml' },
        body: agentToml('helper', model.url),
      });
      expect(spawned.status).toBe(201);
      for (const path of ['/helper', '/helper/rest/message:send', '/tasks/send']) {
        const refused = await rooted.request(path, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: deepRequest('message/send', 100_000),
        });
        await expectRefused(refused, rooted);
      }
    } finally {
      await rooted.close();
    }
  });

  it('is let through at 500 levels, to the SDK that reads it', async () => {
    const answered = await post('/mcp', deepRequest('tools/list', 500));
    expect(answered.status).not.toBe(400);
  });
});
