/**
 * A request body nested thousands of levels deep is a 400 naming the limit, measured on its text
 * before anything recursive (zod's checks of a forge request) walks it. Before, a forge whose test
 * input was 10 arrays nested 3,500 deep overflowed zod's stack: a 500 `INTERNAL`.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/validation/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { agentToml, type Api, OWNER_AND_HELPER_KEYS, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-http-deep-');
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await dir.remove();
});

const OWNER = { authorization: 'Bearer admin-secret', 'content-type': 'application/json' };
const TOO_DEEP = `cannot read the request body: it is nested deeper than ${MAX_JSON_DEPTH} levels, Loom's limit for JSON (MAX_JSON_DEPTH)`;

/** `depth` arrays nested, as JSON text. */
const arraysText = (depth: number): string => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

async function open(): Promise<Api> {
  api = await startApi(dir.path, {
    config: { ...OWNER_AND_HELPER_KEYS.config, default_model: { provider: 'openai', model: 'gpt-4o', base_url: model.url } },
    env: OWNER_AND_HELPER_KEYS.env,
  });
  const spawned = await api.request('/api/agents', {
    method: 'POST',
    headers: { ...OWNER, 'content-type': 'application/toml' },
    body: agentToml('smith', model.url, '[capabilities]\ntools = ["forge_tool"]\n[emergent]\n'),
  });
  expect(spawned.status).toBe(201);
  return api;
}

describe('a JSON request body nested deeper than MAX_JSON_DEPTH', () => {
  it('POST /api/tools/forged with a test input of 10 arrays nested 3,500 deep is a 400 naming the limit, and no judge is asked', async () => {
    const server = await open();
    const input = `{${Array.from({ length: 10 }, (_, index) => `"k${index}":${arraysText(3500)}`).join(',')}}`;
    const request = `{"name":"deep_input","description":"A probe","inputSchema":{"type":"object"},"implementation":{"mode":"sandbox","code":"function execute() { return {}; }","allowlist":[]},"testCases":[{"input":${input}}]}`;
    const response = await server.request('/api/tools/forged', { method: 'POST', headers: OWNER, body: `{"agent":"smith","request":${request}}` });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'INVALID_REQUEST', message: TOO_DEEP } });
    expect(model.requests).toEqual([]);
  });

  it(`is a 400 on any route that reads JSON, at ${MAX_JSON_DEPTH + 1} levels, where ${MAX_JSON_DEPTH} pass on to the route's own checks`, async () => {
    const server = await open();
    const past = await server.request('/api/tools/forged', { method: 'POST', headers: OWNER, body: `{"agent":${arraysText(MAX_JSON_DEPTH)}}` });
    expect(past.status).toBe(400);
    expect(await past.json()).toMatchObject({ error: { message: TOO_DEEP } });
    const within = await server.request('/api/tools/forged', { method: 'POST', headers: OWNER, body: `{"agent":${arraysText(MAX_JSON_DEPTH - 1)}}` });
    expect(within.status).toBe(400);
    expect(((await within.json()) as { error: { message: string } }).error.message).toMatch(/^invalid request body: /);
  });
});
