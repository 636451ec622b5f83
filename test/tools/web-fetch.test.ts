import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webFetchTool } from '../../src/tools/builtin/web-fetch-tool.ts';
import { grantLoopback, startTestServer, webToolContext, type TestServer } from './web-tool-context.ts';

const PAGE = `<!doctype html><html><head><title>Loom  Test Page</title><style>p { color: red }</style>
<script>window.secret = "script text";</script></head>
<body><nav><a href="/home">Navigation link</a></nav>
<main><h1>Main heading</h1><p>First paragraph with <a href="/docs/intro">the intro</a>.</p>
<ul><li>one</li><li>two</li></ul></main>
<footer>Footer text</footer></body></html>`;

let server: TestServer;
let onHang: () => void = () => undefined;

beforeAll(async () => {
  server = await startTestServer((request, response) => {
    const path = request.url;
    if (path === '/page') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    } else if (path === '/data.json') {
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"name":"loom","items":[1,2,3]}');
    } else if (path === '/missing') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('no such page');
    } else if (path === '/image.png') {
      response.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]));
    } else if (path === '/gzipped') {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }).end(gzipSync('unzipped text'));
    } else if (path === '/big') {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('a'.repeat(5000));
    } else if (path === '/redirect-ok') {
      response.writeHead(302, { location: '/data.json' }).end();
    } else if (path === '/redirect-away') {
      response.writeHead(302, { location: 'http://example.invalid/landing' }).end();
    } else if (path === '/redirect-other-port') {
      response.writeHead(301, { location: `http://127.0.0.1:${server.port === 1 ? 2 : 1}/` }).end();
    } else if (path === '/redirect-metadata') {
      response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
    } else if (path === '/redirect-file') {
      response.writeHead(302, { location: 'file:///etc/passwd' }).end();
    } else if (path?.startsWith('/loop/')) {
      const hop = Number(path.slice('/loop/'.length));
      response.writeHead(302, { location: `/loop/${hop + 1}` }).end();
    } else if (path === '/hang') {
      onHang();
      // Never answers: the request ends only through the caller's abort signal.
    } else {
      response.writeHead(500).end();
    }
  });
});

afterAll(async () => {
  await server.close();
});

function requestsTo(path: string): number {
  return server.received.filter((request) => request.url === path).length;
}

describe('web_fetch requires()', () => {
  it('asks for net_connect host:port with the port the URL names or its scheme default', () => {
    const context = webToolContext();
    expect(webFetchTool.requires({ url: 'https://example.com/a?b=c' }, context)).toEqual([{ kind: 'net_connect', pattern: 'example.com:443' }]);
    expect(webFetchTool.requires({ url: 'http://example.com/' }, context)).toEqual([{ kind: 'net_connect', pattern: 'example.com:80' }]);
    expect(webFetchTool.requires({ url: 'http://[::1]:8080/' }, context)).toEqual([{ kind: 'net_connect', pattern: '[::1]:8080' }]);
  });

  it('refuses a URL that is not http or https', () => {
    expect(() => webFetchTool.requires({ url: 'file:///etc/passwd' }, webToolContext())).toThrow(/only http and https/);
    expect(() => webFetchTool.requires({ url: 'not a url' }, webToolContext())).toThrow(/not an absolute URL/);
  });
});

describe('web_fetch execute()', () => {
  it('reduces an HTML page to its title and main text, with links as text and URL', async () => {
    const result = await webFetchTool.execute({ url: `${server.origin}/page` }, webToolContext({ capabilities: grantLoopback(server) }));
    expect(result.isError).toBeUndefined();
    expect(result.text.split('\n').slice(0, 3)).toEqual([`URL: ${server.origin}/page`, 'Status: 200 OK', 'Title: Loom Test Page']);
    expect(result.text).toContain('# Main heading');
    expect(result.text).toContain(`First paragraph with the intro (${server.origin}/docs/intro).`);
    expect(result.text).toContain('- one');
    expect(result.text).not.toContain('script text');
    expect(result.text).not.toContain('color: red');
    expect(result.text).not.toContain('Navigation link');
    expect(result.text).not.toContain('Footer text');
  });

  it('returns a JSON body as it is', async () => {
    const result = await webFetchTool.execute({ url: `${server.origin}/data.json` }, webToolContext({ capabilities: grantLoopback(server) }));
    expect(result.isError).toBeUndefined();
    expect(result.text).toBe(`URL: ${server.origin}/data.json\nStatus: 200 OK\n\n{"name":"loom","items":[1,2,3]}`);
    expect(result.structured).toMatchObject({ status: 200, contentType: 'application/json', truncated: false });
  });

  it('describes binary content instead of returning it', async () => {
    const result = await webFetchTool.execute({ url: `${server.origin}/image.png` }, webToolContext({ capabilities: grantLoopback(server) }));
    expect(result.text).toContain('[image/png content, 8 bytes, not shown]');
  });

  it('returns an HTTP 404 as an error result that still shows the status and body', async () => {
    const result = await webFetchTool.execute({ url: `${server.origin}/missing` }, webToolContext({ capabilities: grantLoopback(server) }));
    expect(result.isError).toBe(true);
    expect(result.text).toContain('Status: 404 Not Found');
    expect(result.text).toContain('no such page');
  });

  it('reaches loopback when a grant names 127.0.0.1 without a port', async () => {
    const result = await webFetchTool.execute(
      { url: `${server.origin}/data.json` },
      webToolContext({ capabilities: [{ kind: 'net_connect', pattern: '127.0.0.1' }] }),
    );
    expect(result.isError).toBeUndefined();
    expect(result.text).toContain('"name":"loom"');
  });

  it.each(['*', '127.0.0.*', '*:PORT', '*.0.0.1'])('refuses loopback when it is granted only through the wildcard %s', async (pattern) => {
    const before = server.received.length;
    const result = await webFetchTool.execute(
      { url: `${server.origin}/data.json` },
      webToolContext({ capabilities: [{ kind: 'net_connect', pattern: pattern.replace('PORT', String(server.port)) }] }),
    );
    expect(result.isError).toBe(true);
    expect(result.text).toContain('loopback addresses are refused');
    expect(result.text).toContain(`grant net_connect "127.0.0.1:${server.port}" explicitly`);
    expect(server.received.length).toBe(before);
  });

  it('refuses a name that resolves to loopback unless the name is granted exactly', async () => {
    const wildcard = await webFetchTool.execute(
      { url: `http://localhost:${server.port}/data.json` },
      webToolContext({ capabilities: [{ kind: 'net_connect', pattern: '*' }] }),
    );
    expect(wildcard.isError).toBe(true);
    expect(wildcard.text).toMatch(/cannot connect to "localhost" \(it resolves to (127\.0\.0\.1|::1)\): loopback/);
  });

  it.each([
    ['http://169.254.169.254/latest/meta-data/', 'cloud metadata'],
    ['http://metadata.google.internal/computeMetadata/v1/', 'cloud metadata host'],
    ['http://[fd00:ec2::254]/latest/meta-data/', 'cloud metadata'],
    ['http://10.0.0.1/', 'private'],
    ['http://169.254.10.10/', 'link-local'],
    ['http://0.0.0.0/', 'unspecified'],
    ['http://[::ffff:127.0.0.1]/', 'loopback'],
  ])('refuses %s even with a * grant (%s)', async (url, reason) => {
    const result = await webFetchTool.execute({ url }, webToolContext({ capabilities: [{ kind: 'net_connect', pattern: '*' }] }));
    expect(result.isError).toBe(true);
    expect(result.text).toContain(reason);
  });

  it('reaches a name that resolves to loopback when a grant names it exactly', async () => {
    const result = await webFetchTool.execute(
      { url: `http://localhost:${server.port}/data.json` },
      webToolContext({ capabilities: [{ kind: 'net_connect', pattern: `localhost:${server.port}` }] }),
    );
    expect(result.isError).toBeUndefined();
    expect(result.text).toContain('"name":"loom"');
  });

  it('decodes a gzip-encoded body', async () => {
    const result = await webFetchTool.execute({ url: `${server.origin}/gzipped` }, webToolContext({ capabilities: grantLoopback(server) }));
    expect(result.text.endsWith('\n\nunzipped text')).toBe(true);
  });

  it('follows a redirect on a granted host and reports the final URL', async () => {
    const result = await webFetchTool.execute({ url: `${server.origin}/redirect-ok` }, webToolContext({ capabilities: grantLoopback(server) }));
    expect(result.isError).toBeUndefined();
    expect(result.text.split('\n').slice(0, 3)).toEqual([`URL: ${server.origin}/data.json`, 'Status: 200 OK', `Redirected from: ${server.origin}/redirect-ok`]);
  });

  it('refuses a redirect to a host the agent is not granted, naming the host', async () => {
    const result = await webFetchTool.execute({ url: `${server.origin}/redirect-away` }, webToolContext({ capabilities: grantLoopback(server) }));
    expect(result.isError).toBe(true);
    expect(result.text).toContain('cannot follow the redirect to "http://example.invalid/landing"');
    expect(result.text).toContain('no net_connect for "example.invalid:80"');
  });

  it('refuses a redirect to another port of a host granted on one port only', async () => {
    const result = await webFetchTool.execute({ url: `${server.origin}/redirect-other-port` }, webToolContext({ capabilities: grantLoopback(server) }));
    expect(result.isError).toBe(true);
    expect(result.text).toContain('no net_connect for "127.0.0.1:');
  });

  it('re-checks the address of every hop: a redirect to the metadata address is refused under a * grant', async () => {
    const result = await webFetchTool.execute(
      { url: `${server.origin}/redirect-metadata` },
      webToolContext({ capabilities: [...grantLoopback(server), { kind: 'net_connect', pattern: '*' }] }),
    );
    expect(result.isError).toBe(true);
    expect(result.text).toContain('cannot connect to "169.254.169.254": cloud metadata addresses are refused');
  });

  it('refuses a redirect to a non-http URL', async () => {
    const result = await webFetchTool.execute({ url: `${server.origin}/redirect-file` }, webToolContext({ capabilities: grantLoopback(server) }));
    expect(result.isError).toBe(true);
    expect(result.text).toContain('only http and https');
  });

  it('stops after 5 redirects with an error naming the limit', async () => {
    const result = await webFetchTool.execute({ url: `${server.origin}/loop/0` }, webToolContext({ capabilities: grantLoopback(server) }));
    expect(result.isError).toBe(true);
    expect(result.text).toContain('more than 5 redirects');
    expect(requestsTo('/loop/5')).toBe(1);
    expect(requestsTo('/loop/6')).toBe(0);
  });

  it('cuts the content at max_content_bytes and says so', async () => {
    const result = await webFetchTool.execute(
      { url: `${server.origin}/big` },
      webToolContext({ capabilities: grantLoopback(server), settings: { max_content_bytes: 100 } }),
    );
    expect(result.isError).toBeUndefined();
    expect(result.text).toContain('Note: the content was cut at 100 bytes (max_content_bytes).');
    expect(result.text.endsWith(`\n\n${'a'.repeat(100)}`)).toBe(true);
    expect(result.structured).toMatchObject({ truncated: true });
  });

  it('rejects a max_content_bytes setting that is not a positive integer', async () => {
    const result = await webFetchTool.execute(
      { url: `${server.origin}/big` },
      webToolContext({ capabilities: grantLoopback(server), settings: { max_content_bytes: -1 } }),
    );
    expect(result.isError).toBe(true);
    expect(result.text).toContain('[tools.web_fetch]: max_content_bytes');
  });

  it('ends a request to a server that never answers when the call is aborted', async () => {
    const controller = new AbortController();
    onHang = () => controller.abort();
    try {
      const result = await webFetchTool.execute(
        { url: `${server.origin}/hang` },
        webToolContext({ capabilities: grantLoopback(server), signal: controller.signal }),
      );
      expect(result.isError).toBe(true);
      expect(result.text).toBe(`cannot fetch "${server.origin}/hang": the call was aborted`);
      expect(requestsTo('/hang')).toBeGreaterThan(0);
    } finally {
      onHang = () => undefined;
    }
  });
});
