import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MCP_PRINCIPAL_NAME } from '../../src/mcp/server/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { connectClient, firstText, type McpHttpServer, startMcpHttpServer } from './server-harness.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let served: McpHttpServer;
let client: Client | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-mcp-principal-');
});
afterEach(async () => {
  await client?.close().catch(() => undefined);
  client = undefined;
  await served.close();
  await dir.remove();
});

describe("the [mcp_server] principal's tools over MCP", () => {
  it('are listed besides the agents and run through the tool runner with its capabilities only', async () => {
    served = await startMcpHttpServer(dir.path, { config: { mcp_server: { capabilities: { tools: ['file_write', 'file_read'] } } } });
    client = await connectClient(served.url, 'modern');
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(['file_read', 'file_write']);

    const written = await client.callTool({ name: 'file_write', arguments: { path: 'from-mcp.txt', content: 'written over MCP' } });
    expect(written.isError ?? false).toBe(false);
    const file = join(served.host.home.workspacesDir, MCP_PRINCIPAL_NAME, 'from-mcp.txt');
    expect(await readFile(file, 'utf8')).toBe('written over MCP');

    // A tool outside its grants is not served: unknown, the protocol error.
    await expect(client.callTool({ name: 'shell_exec', arguments: { command: 'ls' } })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('Unknown tool: shell_exec') as unknown,
    });
    // A served tool's call outside its grants is refused by the runner, as for an agent.
    const outside = await client.callTool({ name: 'file_read', arguments: { path: '/etc/hostname' } });
    expect(outside.isError).toBe(true);
    expect(firstText(outside)).toContain('is not granted [capabilities].file_read "/etc/hostname"');
  });

  it("are served to owners only: a user key, whose reach the principal's grants do not follow, and a viewer get the agents alone", async () => {
    const keys = {
      auth: {
        keys: [
          { name: 'admin', role: 'owner', key_env: 'ADMIN_KEY' },
          { name: 'helper-bot', role: 'user', key_env: 'HELPER_KEY', agents: ['helper-*'] },
          { name: 'watcher', role: 'viewer', key_env: 'VIEWER_KEY' },
        ],
      },
    };
    served = await startMcpHttpServer(dir.path, {
      config: { ...keys, mcp_server: { capabilities: { tools: ['file_write', 'file_read'] } } },
      env: { ADMIN_KEY: 'admin-secret', HELPER_KEY: 'helper-secret', VIEWER_KEY: 'viewer-secret' },
    });
    client = await connectClient(served.url, 'modern', { apiKey: 'admin-secret' });
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['file_read', 'file_write']);
    await client.close();
    for (const apiKey of ['helper-secret', 'viewer-secret']) {
      client = await connectClient(served.url, 'modern', { apiKey });
      expect((await client.listTools()).tools).toEqual([]);
      await expect(client.callTool({ name: 'file_write', arguments: { path: 'x.txt', content: 'no' } })).rejects.toMatchObject({ code: -32602 });
      await client.close();
    }
    client = undefined;
    expect(existsSync(join(served.host.home.workspacesDir, MCP_PRINCIPAL_NAME, 'x.txt'))).toBe(false);
  });

  it('are not served at all by default: only the agents are', async () => {
    served = await startMcpHttpServer(dir.path);
    client = await connectClient(served.url, 'modern');
    expect((await client.listTools()).tools).toEqual([]);
    await expect(client.callTool({ name: 'file_write', arguments: { path: 'x.txt', content: 'no' } })).rejects.toMatchObject({ code: -32602 });
    expect(existsSync(join(served.host.home.workspacesDir, MCP_PRINCIPAL_NAME, 'x.txt'))).toBe(false);
  });
});
