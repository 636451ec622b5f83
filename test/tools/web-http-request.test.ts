import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequestTool } from '../../src/tools/builtin/web-http-request-tool.ts';
import { grantLoopback, startTestServer, webToolContext, type TestServer } from './web-tool-context.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer((request, response) => {
    if (request.url === '/echo') {
      response
        .writeHead(201, { 'content-type': 'application/json', etag: '"v1"', 'x-internal': 'hidden' })
        .end(JSON.stringify({ method: request.method, token: request.headers['x-token'] ?? null, body: request.body }));
    } else if (request.url === '/see-other') {
      response.writeHead(303, { location: '/echo' }).end();
    } else if (request.url === '/temporary') {
      response.writeHead(307, { location: '/echo' }).end();
    } else if (request.url === '/fail') {
      response.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '120' }).end('busy');
    } else if (request.url === '/big') {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('b'.repeat(1000));
    } else {
      response.writeHead(404).end();
    }
  });
});

afterAll(async () => {
  await server.close();
});

describe('http_request', () => {
  it('requires() asks for net_connect to the URL host and port', () => {
    expect(httpRequestTool.requires({ url: 'https://api.example.com/v1/items', method: 'POST', headers: {} }, webToolContext())).toEqual([
      { kind: 'net_connect', pattern: 'api.example.com:443' },
    ]);
  });

  it('sends the method, headers and body and returns the status, selected headers and body', async () => {
    const result = await httpRequestTool.execute(
      { url: `${server.origin}/echo`, method: 'post', headers: { 'x-token': 'secret-1', 'content-type': 'text/plain' }, body: 'hello loom' },
      webToolContext({ capabilities: grantLoopback(server) }),
    );
    expect(result.isError).toBeUndefined();
    const lines = result.text.split('\n');
    expect(lines[0]).toBe('HTTP 201 Created');
    expect(lines[1]).toBe(`URL: ${server.origin}/echo`);
    expect(lines).toContain('content-type: application/json');
    expect(lines).toContain('etag: "v1"');
    expect(result.text).not.toContain('x-internal');
    expect(JSON.parse(lines.at(-1) ?? '')).toEqual({ method: 'POST', token: 'secret-1', body: 'hello loom' });
  });

  it.each(['PUT', 'PATCH', 'DELETE'])('sends a %s request with its body', async (method) => {
    const result = await httpRequestTool.execute(
      { url: `${server.origin}/echo`, method, headers: {}, body: `${method} body` },
      webToolContext({ capabilities: grantLoopback(server) }),
    );
    expect(result.structured).toMatchObject({ status: 201, body: JSON.stringify({ method, token: null, body: `${method} body` }) });
  });

  it('turns a POST into a GET without a body on a 303 redirect', async () => {
    const result = await httpRequestTool.execute(
      { url: `${server.origin}/see-other`, method: 'POST', headers: {}, body: 'dropped' },
      webToolContext({ capabilities: grantLoopback(server) }),
    );
    expect(result.structured).toMatchObject({ url: `${server.origin}/echo`, body: JSON.stringify({ method: 'GET', token: null, body: '' }) });
  });

  it('keeps the method and body on a 307 redirect', async () => {
    const result = await httpRequestTool.execute(
      { url: `${server.origin}/temporary`, method: 'PUT', headers: {}, body: 'kept' },
      webToolContext({ capabilities: grantLoopback(server) }),
    );
    expect(result.structured).toMatchObject({ body: JSON.stringify({ method: 'PUT', token: null, body: 'kept' }) });
  });

  it('returns an HTTP 503 as data, not as an error result', async () => {
    const result = await httpRequestTool.execute(
      { url: `${server.origin}/fail`, method: 'GET', headers: {} },
      webToolContext({ capabilities: grantLoopback(server) }),
    );
    expect(result.isError).toBeUndefined();
    expect(result.text).toBe(`HTTP 503 Service Unavailable\nURL: ${server.origin}/fail\ncontent-type: text/plain\nretry-after: 120\n\nbusy`);
  });

  it('cuts the body at [tools.http_request] max_content_bytes', async () => {
    const result = await httpRequestTool.execute(
      { url: `${server.origin}/big`, method: 'GET', headers: {} },
      webToolContext({ capabilities: grantLoopback(server), settings: { max_content_bytes: 10 } }),
    );
    expect(result.structured).toMatchObject({ body: 'b'.repeat(10), truncated: true });
    expect(result.text).toContain('Note: the body was cut at 10 bytes (max_content_bytes).');
  });

  it('refuses loopback without an explicit grant and sends nothing', async () => {
    const before = server.received.length;
    const result = await httpRequestTool.execute(
      { url: `${server.origin}/echo`, method: 'DELETE', headers: {} },
      webToolContext({ capabilities: [{ kind: 'net_connect', pattern: '*' }] }),
    );
    expect(result.isError).toBe(true);
    expect(result.text).toContain('loopback addresses are refused');
    expect(server.received.length).toBe(before);
  });

  it('rejects a method that is not an HTTP token at the input schema', () => {
    expect(httpRequestTool.inputSchema.safeParse({ url: 'http://example.com', method: 'GET /x' }).success).toBe(false);
  });
});
