import { expect } from 'vitest';

/** The 2025 revision a raw MCP client speaks. */
export const MCP_REVISION_2025 = '2025-11-25';

/** The headers of a raw client's POST to its 2025-era session `sessionId` on `/mcp`. */
export const mcpSessionHeaders = (sessionId: string): Record<string, string> => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-session-id': sessionId,
  'mcp-protocol-version': MCP_REVISION_2025,
  host: '127.0.0.1',
});

/** Opens a 2025-era session at `url` (a server's base URL) by hand, not with the SDK (initialize, then initialized); returns its id. */
export async function openMcpSession(url: string): Promise<string> {
  const opened = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: MCP_REVISION_2025, capabilities: {}, clientInfo: { name: 'raw-client', version: '1.0.0' } },
    }),
  });
  expect(opened.status).toBe(200);
  await opened.text();
  const sessionId = opened.headers.get('mcp-session-id') ?? '';
  const initialized = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: mcpSessionHeaders(sessionId),
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  expect(initialized.status).toBe(202);
  return sessionId;
}
