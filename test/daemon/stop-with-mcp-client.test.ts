/**
 * A daemon stopped while an MCP client holds a session open: the stop completes, and the client's
 * streams end with it.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { RunningDaemon } from '../../src/daemon/index.ts';
import { useDaemonFolder } from '../support/daemon-folder.ts';
import { MCP_REVISION_2025, openMcpSession } from '../support/open-mcp-session.ts';

const daemons = useDaemonFolder('loom-stop-mcp-');
let daemon: RunningDaemon;

beforeEach(async () => {
  daemon = await daemons.start();
});

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
    const session = await openMcpSession(url);
    const stream = await fetch(`${url}/mcp`, {
      headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': MCP_REVISION_2025 },
    });
    expect(stream.status).toBe(200);
    const legacy = await fetch(`${url}/mcp/sse`, { headers: { accept: 'text/event-stream' } });
    expect(legacy.status).toBe(200);
    const ends = Promise.all([howItEnds(stream), howItEnds(legacy)]);
    await daemon.stop();
    expect(await ends).toEqual(['ended', 'ended']);
  });
});
