/**
 * A daemon stopped while an MCP client holds a session open: the stop completes, and the client's
 * streams end with it.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema, resolveLoomHome } from '../../src/config/index.ts';
import { type RunningDaemon, startDaemon } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let daemon: RunningDaemon;

beforeEach(async () => {
  dir = await makeTempDir('loom-stop-mcp-');
  const home = resolveLoomHome({ LOOM_HOME: join(dir.path, 'home') }, dir.path);
  daemon = await startDaemon({ home, config: ConfigSchema.parse({}), env: {}, logger: createSilentLogger(), version: 'test', host: '127.0.0.1', port: 0 });
});
afterEach(async () => {
  await daemon.stop();
  await dir.remove();
});

const REVISION = '2025-11-25';

/** How `response`'s body ends: `ended` when read to its end, else the error it was cut with. */
async function howItEnds(response: Response): Promise<string> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  try {
    while (!(await reader.read()).done);
    return 'ended';
  } catch (error) {
    return `cut: ${String(error)}`;
  }
}

describe('a daemon stopped while an MCP client holds a session', () => {
  it("stops, and the session's stream ends", async () => {
    const { url } = daemon.info;
    const opened = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: REVISION, capabilities: {}, clientInfo: { name: 'stop', version: '1' } },
      }),
    });
    expect(opened.status).toBe(200);
    await opened.text();
    const session = opened.headers.get('mcp-session-id') ?? '';
    const stream = await fetch(`${url}/mcp`, { headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': REVISION } });
    expect(stream.status).toBe(200);
    const legacy = await fetch(`${url}/mcp/sse`, { headers: { accept: 'text/event-stream' } });
    expect(legacy.status).toBe(200);
    const ends = Promise.all([howItEnds(stream), howItEnds(legacy)]);
    await daemon.stop();
    expect(await ends).toEqual(['ended', 'ended']);
  });
});
