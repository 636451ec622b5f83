/**
 * The doors whose SDKs parse the body (MCP's /mcp and /mcp/messages, A2A's bindings) are handed
 * the body the API read once: a body each cannot take is answered as it always was, by the door's
 * own error (malformed JSON, the MCP SDK's 4 MiB bound), in each MCP leg and each A2A binding.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { agentToml, type Api, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

beforeEach(async () => {
  dir = await makeTempDir('loom-door-bodies-');
  // Past the MCP SDK's own bound, so that the SDK's is the one a large body meets.
  api = await startApi(dir.path, { config: { a2a: { enabled: true }, daemon: { body_limit_bytes: 8 * 1024 * 1024 } } });
  const spawned = await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('helper', model.url) });
  expect(spawned.status).toBe(201);
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const MALFORMED = '{"jsonrpc":"2.0","id":1,"method":';
/** A JSON-RPC request 5 MiB long: past the MCP SDK's bound (4 MiB), within the daemon's here. */
const LARGE = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"padding":"${'a'.repeat(5 * 1024 * 1024)}"}}`;

const post = (path: string, body: string, headers: Record<string, string> = {}): Promise<Response> =>
  api.request(path, { method: 'POST', headers: { ...JSON_HEADERS, ...headers }, body });

/** The headers of a request in a new 2025-era MCP session (`initialize` answered). */
async function mcpSession(): Promise<Record<string, string>> {
  const initialize = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'door-bodies', version: '1.0.0' } };
  const opened = await post('/mcp', JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: initialize }));
  expect(opened.status).toBe(200);
  await opened.body?.cancel();
  const session = opened.headers.get('mcp-session-id');
  expect(session).toEqual(expect.any(String));
  return { 'mcp-session-id': session ?? '', 'mcp-protocol-version': '2025-11-25' };
}

/** The message endpoint of a new 2024-11-05 HTTP+SSE stream, and a function to close the stream. */
async function sseEndpoint(): Promise<{ endpoint: string; close: () => Promise<void> }> {
  const stream = await api.request('/mcp/sse', { headers: { accept: 'text/event-stream' } });
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!/data: \S+\n/.test(text)) {
    const chunk = await reader.read();
    if (chunk.done) throw new Error(`the SSE stream ended before its endpoint event: ${text}`);
    text += decoder.decode(chunk.value, { stream: true });
  }
  return { endpoint: /data: (\S+)\n/.exec(text)?.[1] ?? '', close: () => reader.cancel() };
}

describe('a malformed JSON body', () => {
  it('is answered by MCP as its SDK answers it: outside a session, in a session, and on an SSE stream', async () => {
    const parseError = { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: Invalid JSON' }, id: null };
    for (const headers of [{}, { 'mcp-protocol-version': '2026-07-28' }, await mcpSession()]) {
      const answer = await post('/mcp', MALFORMED, headers);
      expect({ headers, status: answer.status, body: await answer.json() }).toEqual({ headers, status: 400, body: parseError });
    }
    const empty = await post('/mcp', '');
    expect({ status: empty.status, body: await empty.json() }).toEqual({ status: 400, body: parseError });
    const sse = await sseEndpoint();
    try {
      const answer = await post(sse.endpoint, MALFORMED);
      expect({ status: answer.status, body: await answer.text() }).toEqual({ status: 400, body: 'the body is not a JSON-RPC message' });
      const listed = await post(sse.endpoint, '{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
      expect(listed.status).toBe(202);
    } finally {
      await sse.close();
    }
  });

  it('is answered by A2A in each binding’s own error', async () => {
    const invalidJson = { code: -32700, message: 'Invalid JSON payload.' };
    const answers = [
      ['JSON-RPC', '/a2a/helper', 200, { jsonrpc: '2.0', id: null, error: invalidJson }],
      ['HTTP+JSON 1.0', '/a2a/helper/rest/message:send', 400, { error: { code: 400, status: 'INVALID_ARGUMENT', message: 'Invalid JSON payload.' } }],
      ['HTTP+JSON 0.3', '/a2a/helper/v1/message:send', 400, invalidJson],
      ['legacy', '/a2a/tasks/send', 400, { jsonrpc: '2.0', id: null, error: invalidJson }],
    ] as const;
    for (const [binding, path, status, body] of answers) {
      const answer = await post(path, MALFORMED);
      expect({ binding, status: answer.status, body: await answer.json() }).toMatchObject({ binding, status, body });
    }
    expect(model.requests).toHaveLength(0);
  });
});

describe("a body past the MCP SDK's 4 MiB bound, within [daemon].body_limit_bytes", () => {
  it('is answered 413 by the SDK, outside a session and in one', async () => {
    const tooLarge = { jsonrpc: '2.0', error: { code: -32000, message: 'Payload Too Large: Request body must not exceed 4194304 bytes' }, id: null };
    for (const headers of [{}, await mcpSession()]) {
      const answer = await post('/mcp', LARGE, headers);
      expect({ headers, status: answer.status, body: await answer.json() }).toEqual({ headers, status: 413, body: tooLarge });
    }
  });
});
