import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOOM_VERSION } from '../../src/cli/index.ts';
import { openApiDocument } from '../../src/http/openapi-routes.ts';
import { API, apiClient, type ApiClient, type ApiRoute, pathOf } from '../../src/wire/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { type Api, startApi } from './api-harness.ts';

/** A client of `api` whose refusals read `<status> <code>: <message>`, as the daemon answered them. */
function clientOf(api: Api): ApiClient {
  return apiClient({
    fetch: (path, init) => fetch(`${api.url}${path}`, init),
    error: async (response) => {
      const body = (await response.json()) as { error: { code: string; message: string } };
      return new Error(`${response.status} ${body.error.code}: ${body.error.message}`);
    },
  });
}

describe('the route table', () => {
  it('is what the OpenAPI document lists: each route once, and no operation besides', () => {
    const document = openApiDocument({ version: LOOM_VERSION });
    const listed = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
    const routes = (Object.values(API) as ApiRoute[]).map((route) => `${route.method.toUpperCase()} ${route.path}`);
    expect(new Set(routes).size).toBe(routes.length);
    expect(listed.sort()).toEqual([...routes].sort());
    // A body the route validates with a src/wire schema is listed as that schema, as a client writes it.
    expect(document.paths['/api/tools/forged/{id}/demote']?.['post']?.['requestBody']).toEqual({
      required: false,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/DemoteBody' } } },
    });
    expect(document.components.schemas['DemoteBody']).toEqual({
      type: 'object',
      properties: { reason: { type: 'string', minLength: 1 } },
      additionalProperties: false,
    });
  });

  it("describes each route's query by the schema the route validates it with: every parameter it takes, typed as it reads them", async () => {
    for (const route of Object.values(API) as ApiRoute[]) {
      if (route.query?.schema === undefined) continue;
      expect(Object.keys(route.query.params).sort(), `${route.method} ${route.path}`).toEqual(Object.keys(route.query.schema.shape).sort());
    }
    const document = openApiDocument({ version: LOOM_VERSION });
    const parameters = document.paths['/api/usage']?.['get']?.['parameters'];
    // `since` is epoch milliseconds, as the route reads it (the hand-kept document offered ISO 8601, which the route refuses).
    expect(parameters).toContainEqual({
      name: 'since',
      in: 'query',
      required: false,
      description: 'from this time (epoch ms)',
      schema: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    });
    const dir = await makeTempDir('loom-api-client-query-');
    const api = await startApi(dir.path);
    try {
      const client = clientOf(api);
      await expect(client.call(API.usage, { query: { since: '2026-01-01' } })).rejects.toThrow(/^400 INVALID_REQUEST: invalid query: since/);
      expect(await client.call(API.usage, { query: { since: 0 } })).toEqual([]);
    } finally {
      await api.close();
      await dir.remove();
    }
  });

  it('gives the path of a call: its parameters URL-encoded, its query without the entries left out; a missing parameter is named', () => {
    expect(pathOf(API.runBinding, { slug: '@org/agents/a b', binding: 'daily' })).toBe('/api/packages/%40org%2Fagents%2Fa%20b/bindings/daily/run');
    expect(pathOf(API.packageRuns, {}, { package: 'news', limit: 5 })).toBe('/api/packages/runs?package=news&limit=5');
    expect(pathOf(API.usage, {}, { agent: undefined })).toBe('/api/usage');
    expect(() => pathOf(API.getAgent, {})).toThrow('cannot call /api/agents/{agent}: the path parameter "agent" is missing');
  });
});

describe('the client typed by the route table, against a real daemon', () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let api: Api;
  beforeEach(async () => {
    dir = await makeTempDir('loom-api-client-');
    api = await startApi(dir.path);
  });
  afterEach(async () => {
    await api.close();
    await dir.remove();
  });

  it('spawns, shows, lists, empties a session and reads the metrics, each answer as the route gives it', async () => {
    const client = clientOf(api);
    const spawned = await client.call(API.spawnAgent, { body: { name: 'helper', model: { provider: 'openai', model: 'gpt-4o-mini' } } });
    expect(spawned).toMatchObject({ name: 'helper', state: 'running', warnings: [] });
    // A second agent served over MCP as the same tool: the spawn says so, as the route's shared check does.
    const clash = await client.call(API.spawnAgent, {
      query: { parent: 'helper' },
      body: { name: 'Helper', model: { provider: 'openai', model: 'gpt-4o-mini' } },
    });
    expect(clash.parent).toBe(spawned.id);
    expect(clash.warnings).toEqual([expect.stringContaining('is served over MCP as the tool loom_agent_helper, as agent "helper" is')]);
    const shown = await client.call(API.getAgent, { params: { agent: 'helper' } });
    expect(shown.manifest['name']).toBe('helper');
    expect((await client.call(API.listAgents)).map((agent) => agent.name).sort()).toEqual(['Helper', 'helper']);
    // 204: nothing to read.
    await expect(client.call(API.resetSession, { params: { agent: 'helper' } })).resolves.toBeUndefined();
    // A text answer is the text.
    expect(await client.call(API.metrics)).toContain('# TYPE');
  });

  it("sends a body already written as it is, with its media type: a manifest in TOML, as the dashboard's editor sends it", async () => {
    const client = clientOf(api);
    const manifest = 'name = "noter"\n\n[model]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n';
    expect(await client.call(API.validateManifest, { text: { content: manifest, type: 'application/toml' } })).toMatchObject({ valid: true, format: 'toml' });
    expect(await client.call(API.spawnAgent, { text: { content: manifest, type: 'application/toml' } })).toMatchObject({ name: 'noter', state: 'running' });
  });

  it('answers the MCP servers and the external agents as objects, as the document now says (it listed arrays)', async () => {
    const client = clientOf(api);
    expect(await client.call(API.mcpServers)).toEqual({ configured: [], connected: [], total_configured: 0, total_connected: 0 });
    expect(await client.call(API.externalAgents)).toEqual({ agents: [], total: 0 });
    const document = openApiDocument({ version: LOOM_VERSION });
    const schemaOf = (path: string): unknown =>
      (document.paths[path]?.['get']?.['responses'] as Record<string, { content: Record<string, { schema: unknown }> }>)['200']?.content['application/json']
        ?.schema;
    expect(schemaOf('/api/mcp/servers')).toMatchObject({ type: 'object', properties: { configured: { type: 'array' }, connected: { type: 'array' } } });
    expect(schemaOf('/api/a2a/external')).toMatchObject({ type: 'object', properties: { agents: { type: 'array' }, total: { type: 'integer' } } });
  });

  it("turns a refusal into the transport's error, with the daemon's code and message", async () => {
    const client = clientOf(api);
    await expect(client.call(API.getAgent, { params: { agent: 'nobody' } })).rejects.toThrow(/^404 AGENT_NOT_FOUND: .*nobody/);
    await client.call(API.spawnAgent, { body: { name: 'helper', model: { provider: 'openai', model: 'gpt-4o-mini' } } });
    // The route validates with the table's schema: an empty message is refused, naming the field.
    await expect(client.call(API.sendMessage, { params: { agent: 'helper' }, body: { message: '' } })).rejects.toThrow(
      /^400 INVALID_REQUEST: invalid request body: message: expected a non-empty string/,
    );
  });
});
