import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import {
  expandHeaders,
  extractMcpServer,
  formatMcpToolName,
  isMcpTool,
  type McpClientManager,
  type McpServerEntry,
  parseMcpToolName,
  sizeLimitedFetch,
  stdioEnvironment,
  vetMcpUrl,
} from '../../src/mcp/client/index.ts';
import { McpMessageTooLargeError } from '../../src/mcp/mcp-message-too-large-error.ts';
import { makeManager, waitForStatus } from './client-helpers.ts';

let manager: McpClientManager | undefined;
let httpServer: Server | undefined;

afterEach(async () => {
  await manager?.stop();
  manager = undefined;
  await new Promise<void>((resolve) => (httpServer === undefined ? resolve() : httpServer.close(() => resolve())));
  httpServer = undefined;
});

function httpEntry(name: string, url: string, extra: Partial<McpServerEntry> = {}): McpServerEntry {
  return { name, timeout_secs: 30, env: [], allow_private_network: false, transport: { type: 'http', url, headers: {} }, ...extra };
}

/** Starts a server answering every request with `body` as `type`; resolves with its base URL. */
async function serve(type: string, body: string): Promise<string> {
  httpServer = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': type });
    response.end(body);
  });
  await new Promise<void>((resolve) => httpServer?.listen(0, '127.0.0.1', resolve));
  const address = httpServer.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  return `http://127.0.0.1:${address.port}/`;
}

describe('MCP tool names', () => {
  it('formats mcp_{server}_{tool} in lower case with "-" turned into "_"', () => {
    expect(formatMcpToolName('github', 'create_issue')).toBe('mcp_github_create_issue');
    expect(formatMcpToolName('my-server', 'do-Thing')).toBe('mcp_my_server_do_thing');
  });

  it('recognizes and parses namespaced names, preferring the longest configured server name', () => {
    expect(isMcpTool('mcp_github_create_issue')).toBe(true);
    expect(isMcpTool('file_read')).toBe(false);
    expect(parseMcpToolName('mcp_github_create_issue')).toEqual({ server: 'github', tool: 'create_issue' });
    expect(parseMcpToolName('mcp_my_server_do_thing', ['my', 'my-server'])).toEqual({ server: 'my-server', tool: 'do_thing' });
    expect(parseMcpToolName('mcp_other_tool', ['github'])).toBeUndefined();
    expect(parseMcpToolName('shell_exec')).toBeUndefined();
    expect(extractMcpServer('mcp_github_create_issue')).toBe('github');
  });
});

describe('MCP client security', () => {
  it('gives a stdio child PATH plus the listed variables only', () => {
    expect(stdioEnvironment({ env: ['TOKEN', 'UNSET'] }, { PATH: '/bin', TOKEN: 't', SECRET: 's', HOME: '/root' })).toEqual({ PATH: '/bin', TOKEN: 't' });
  });

  it('refuses a stdio command containing ".." at start, and does not retry it', async () => {
    let clock;
    ({ manager, clock } = makeManager([
      { name: 'evil', timeout_secs: 30, env: [], allow_private_network: false, transport: { type: 'stdio', command: '../../bin/server', args: [] } },
    ]));
    manager.start();
    await waitForStatus(manager, 'evil', 'failed');
    expect(manager.servers()[0]?.error).toMatch(/contains "\.\."/);
    expect(clock.pending()).toBe(0);
  });

  it('refuses cloud-metadata URLs even with allow_private_network', async () => {
    ({ manager } = makeManager([
      httpEntry('aws', 'http://169.254.169.254/latest/mcp', { allow_private_network: true }),
      httpEntry('gcp', 'http://metadata.google.internal/mcp', { allow_private_network: true }),
      { name: 'sse-meta', timeout_secs: 30, env: [], allow_private_network: true, transport: { type: 'sse', url: 'http://[::ffff:169.254.169.254]/sse' } },
    ]));
    manager.start();
    for (const name of ['aws', 'gcp', 'sse-meta']) {
      await waitForStatus(manager, name, 'failed');
      expect(manager.servers().find((server) => server.name === name)?.error).toMatch(/cloud metadata/);
    }
  });

  it('refuses loopback and private URLs unless allow_private_network is set', async () => {
    await expect(vetMcpUrl('local', 'http://127.0.0.1:9/mcp', false)).rejects.toThrow(/loopback addresses are refused unless allow_private_network/);
    await expect(vetMcpUrl('lan', 'http://10.1.2.3/mcp', false)).rejects.toThrow(/private addresses/);
    await expect(vetMcpUrl('local', 'http://127.0.0.1:9/mcp', true)).resolves.toEqual({
      url: new URL('http://127.0.0.1:9/mcp'),
      addresses: [{ address: '127.0.0.1', family: 4 }],
    });
    ({ manager } = makeManager([httpEntry('local', 'http://127.0.0.1:9/mcp')]));
    manager.start();
    await waitForStatus(manager, 'local', 'failed');
    expect(manager.servers()[0]?.error).toMatch(/loopback/);
  });

  it('expands ${NAME} in http header values from the environment and refuses an unset one', async () => {
    expect(expandHeaders('api', { authorization: 'Bearer ${TOKEN}', plain: 'x' }, { TOKEN: 'abc' })).toEqual({ authorization: 'Bearer abc', plain: 'x' });
    expect(() => expandHeaders('api', { authorization: 'Bearer ${MISSING}' }, {})).toThrow(/MISSING, which is not set/);
    ({ manager } = makeManager(
      [httpEntry('api', 'https://mcp.example.com/mcp', { transport: { type: 'http', url: 'https://mcp.example.com/mcp', headers: { a: '${NOPE}' } } })],
      {},
    ));
    manager.start();
    await waitForStatus(manager, 'api', 'failed');
    expect(manager.servers()[0]?.error).toMatch(/NOPE/);
  });

  it('refuses an HTTP response body over the message limit with an error naming the limit and its size', async () => {
    const body = JSON.stringify({ data: 'x'.repeat(200) });
    httpServer = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      response.end(body);
    });
    await new Promise<void>((resolve) => httpServer?.listen(0, '127.0.0.1', resolve));
    const address = httpServer.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/`;
    await expect(sizeLimitedFetch(100)(url)).rejects.toThrow(new McpMessageTooLargeError({ size: 211, limit: 100 }));
    await expect(sizeLimitedFetch(100)(url)).rejects.toThrow('MCP message of 211 bytes is over the limit of 100 bytes');
    // Without a Content-Length (chunked), the body fails where it passes the limit.
    await new Promise<void>((resolve) => httpServer?.close(() => resolve()));
    const chunkedUrl = await serve('application/json', body);
    await expect((await sizeLimitedFetch(100)(chunkedUrl)).json()).rejects.toThrow('MCP message of more than 100 bytes is over the limit of 100 bytes');
  });

  it('limits an event stream per event: many small events pass, and one large event becomes the error response to its id while the stream carries on', async () => {
    const small = Array.from({ length: 20 }, (_, index) => `data: event ${index}\n\n`).join('');
    const smallUrl = await serve('text/event-stream', small);
    expect(await (await sizeLimitedFetch(100)(smallUrl)).text()).toBe(small);
    await new Promise<void>((resolve) => httpServer?.close(() => resolve()));

    // The SDK writes a response's id last; an event with no id it can find answers the POST's request.
    const large = `event: message\nid: e1\ndata: {"result":{"text":"${'y'.repeat(200)}"},"jsonrpc":"2.0","id":7}\n\ndata: ${'z'.repeat(200)}\n\ndata: after\n\n`;
    const largeUrl = await serve('text/event-stream', large);
    const text = await (
      await sizeLimitedFetch(100)(largeUrl, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call' }) })
    ).text();
    const error = (id: number, size: number): string =>
      JSON.stringify({
        jsonrpc: '2.0',
        id,
        error: { code: -32600, message: `MCP message of ${size} bytes is over the limit of 100 bytes`, data: { size, limit: 100 } },
      });
    expect(text).toBe(`event: message\nid: e1\ndata: ${error(7, 275)}\n\nevent: message\ndata: ${error(9, 208)}\n\ndata: after\n\n`);
  });
});
