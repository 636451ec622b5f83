import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webSearchTool } from '../../src/tools/builtin/web-search-tool.ts';
import { grantLoopback, startTestServer, webToolContext, type TestServer } from './web-tool-context.ts';

let server: TestServer;

const TAVILY_RESPONSE = {
  query: 'loom agents',
  answer: null,
  images: [],
  results: [
    { title: 'Loom docs', url: 'https://loom.example/docs', content: 'Loom is an   agent operating system.', score: 0.91, raw_content: null },
    { title: 'Loom repo', url: 'https://code.example/loom', content: 'Source code.', score: 0.8, raw_content: null },
  ],
  response_time: 0.52,
};

const SEARXNG_RESPONSE = {
  query: 'loom agents',
  number_of_results: 1,
  results: [{ url: 'https://searx-hit.example/', title: 'A SearXNG hit', content: 'From the meta search.', engine: 'duckduckgo', score: 1 }],
  answers: [],
  suggestions: [],
};

const BRAVE_RESPONSE = {
  type: 'search',
  query: { original: 'loom agents' },
  web: { type: 'search', results: [{ title: 'Brave <strong>hit</strong>', url: 'https://brave-hit.example/', description: 'About <strong>loom</strong>.' }] },
};

beforeAll(async () => {
  server = await startTestServer((request, response) => {
    const url = new URL(request.url, 'http://test');
    if (request.method === 'POST' && url.pathname === '/search') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(TAVILY_RESPONSE));
    } else if (request.method === 'GET' && url.pathname === '/sx/search') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(SEARXNG_RESPONSE));
    } else if (request.method === 'GET' && url.pathname === '/res/v1/web/search') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(BRAVE_RESPONSE));
    } else if (url.pathname === '/broken/search') {
      response.writeHead(401, { 'content-type': 'application/json' }).end('{"detail":{"error":"Unauthorized: missing or invalid API key."}}');
    } else {
      response.writeHead(404).end();
    }
  });
});

afterAll(async () => {
  await server.close();
});

function lastRequest(): { method: string; url: string; headers: Record<string, unknown>; body: string } {
  const request = server.received.at(-1);
  if (request === undefined) throw new Error('the server received nothing');
  return request;
}

describe('web_search', () => {
  it('asks Tavily with its API key and returns the results as a numbered list', async () => {
    const context = webToolContext({
      capabilities: grantLoopback(server),
      env: { TAVILY_API_KEY: 'tvly-test-key' },
      settings: { base_url: server.origin, max_results: 2 },
    });
    const result = await webSearchTool.execute({ query: 'loom agents' }, context);
    expect(result.isError).toBeUndefined();
    expect(result.text).toBe(
      '1. Loom docs\n   https://loom.example/docs\n   Loom is an agent operating system.\n\n2. Loom repo\n   https://code.example/loom\n   Source code.',
    );
    const request = lastRequest();
    expect(request.headers['authorization']).toBe('Bearer tvly-test-key');
    expect(JSON.parse(request.body)).toMatchObject({ query: 'loom agents', max_results: 2 });
  });

  it('cuts the list at max_results, default 5, even when the provider returns more', async () => {
    const context = webToolContext({
      capabilities: grantLoopback(server),
      env: { TAVILY_API_KEY: 'tvly-test-key' },
      settings: { base_url: server.origin, max_results: 1 },
    });
    const result = await webSearchTool.execute({ query: 'loom agents' }, context);
    expect(result.text).toContain('1. Loom docs');
    expect(result.text).not.toContain('2. Loom repo');
  });

  it('asks a SearXNG instance at base_url for JSON when no API key is set', async () => {
    const context = webToolContext({ capabilities: grantLoopback(server), settings: { base_url: `${server.origin}/sx` } });
    const result = await webSearchTool.execute({ query: 'loom agents' }, context);
    expect(result.text).toBe('1. A SearXNG hit\n   https://searx-hit.example/\n   From the meta search.');
    const url = new URL(lastRequest().url, 'http://test');
    expect(url.searchParams.get('q')).toBe('loom agents');
    expect(url.searchParams.get('format')).toBe('json');
  });

  it('asks Brave with its subscription token when BRAVE_API_KEY is the only key, stripping HTML from results', async () => {
    const context = webToolContext({ capabilities: grantLoopback(server), env: { BRAVE_API_KEY: 'brave-key' }, settings: { base_url: server.origin } });
    const result = await webSearchTool.execute({ query: 'loom agents' }, context);
    expect(result.text).toBe('1. Brave hit\n   https://brave-hit.example/\n   About loom.');
    expect(lastRequest().headers['x-subscription-token']).toBe('brave-key');
    expect(new URL(lastRequest().url, 'http://test').searchParams.get('count')).toBe('5');
  });

  it('uses settings.provider over the keys present', async () => {
    const context = webToolContext({
      capabilities: grantLoopback(server),
      env: { TAVILY_API_KEY: 'tvly-test-key' },
      settings: { provider: 'searxng', base_url: `${server.origin}/sx` },
    });
    const result = await webSearchTool.execute({ query: 'loom agents' }, context);
    expect(result.text).toContain('A SearXNG hit');
  });

  it('requires() asks for net_connect to the provider host: the default Tavily API or the base_url override', () => {
    expect(webSearchTool.requires({ query: 'x' }, webToolContext({ env: { TAVILY_API_KEY: 'k' } }))).toEqual([
      { kind: 'net_connect', pattern: 'api.tavily.com:443' },
    ]);
    expect(webSearchTool.requires({ query: 'x' }, webToolContext({ env: { BRAVE_API_KEY: 'k' } }))).toEqual([
      { kind: 'net_connect', pattern: 'api.search.brave.com:443' },
    ]);
    expect(webSearchTool.requires({ query: 'x' }, webToolContext({ settings: { base_url: `${server.origin}/sx` } }))).toEqual([
      { kind: 'net_connect', pattern: `127.0.0.1:${server.port}` },
    ]);
  });

  it('returns an error naming the keys and settings it looked for when no provider is configured', async () => {
    const context = webToolContext({ env: { TAVILY_API_KEY: '' } });
    expect(webSearchTool.requires({ query: 'x' }, context)).toEqual([]);
    const result = await webSearchTool.execute({ query: 'loom agents' }, context);
    expect(result.isError).toBe(true);
    expect(result.text).toContain('TAVILY_API_KEY');
    expect(result.text).toContain('BRAVE_API_KEY');
    expect(result.text).toContain('[tools.web_search] base_url');
  });

  it('returns an error when the chosen provider has no key', async () => {
    const result = await webSearchTool.execute({ query: 'q' }, webToolContext({ settings: { provider: 'brave' } }));
    expect(result.isError).toBe(true);
    expect(result.text).toContain('provider is "brave" but BRAVE_API_KEY is not set');
  });

  it('returns the provider HTTP error as an error result', async () => {
    const context = webToolContext({ capabilities: grantLoopback(server), env: { TAVILY_API_KEY: 'bad' }, settings: { base_url: `${server.origin}/broken` } });
    const result = await webSearchTool.execute({ query: 'q' }, context);
    expect(result.isError).toBe(true);
    expect(result.text).toContain('tavily answered HTTP 401');
  });

  it('refuses a loopback provider without an explicit grant', async () => {
    const context = webToolContext({ capabilities: [{ kind: 'net_connect', pattern: '*' }], settings: { base_url: `${server.origin}/sx` } });
    const result = await webSearchTool.execute({ query: 'q' }, context);
    expect(result.isError).toBe(true);
    expect(result.text).toContain('loopback addresses are refused');
  });
});
