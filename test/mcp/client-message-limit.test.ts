import { createServer, type Server } from 'node:http';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { McpClientManager, McpServerEntry } from '../../src/mcp/client/index.ts';
import { callTool, FIXTURE_SERVER, makeManager, stdioEntry, toolNamed, waitForStatus } from './client-helpers.ts';

/** What an agent is told when a server's reply is over spec/05's 10 MB (the fixture's `big` is 11 MB of text, about 11.5 MB as JSON). */
const OVER_THE_LIMIT = /^MCP tool "mcp_\w+_big" failed: MCP message of 11,5\d\d,\d{3} bytes is over the 10 MB limit \(10,485,760 bytes\)$/;

let manager: McpClientManager | undefined;
let httpServer: { close(): Promise<void> } | undefined;

afterEach(async () => {
  await manager?.stop();
  manager = undefined;
  await httpServer?.close();
  httpServer = undefined;
});

describe('an MCP reply over the message limit', () => {
  it('over stdio fails only its call: the connection stays up and the call beside it is answered by the same process', async () => {
    ({ manager } = makeManager([stdioEntry('fixture', [FIXTURE_SERVER])]));
    manager.start();
    await waitForStatus(manager, 'fixture', 'connected');
    const pid = (await callTool(toolNamed(manager, 'mcp_fixture_pid'), {})).text;

    const [big, beside] = await Promise.all([callTool(toolNamed(manager, 'mcp_fixture_big'), {}), callTool(toolNamed(manager, 'mcp_fixture_pid'), {})]);
    expect(big.isError).toBe(true);
    expect(big.text).toMatch(OVER_THE_LIMIT);
    expect(beside).toEqual({ text: pid });
    expect(manager.servers()[0]).toMatchObject({ status: 'connected' });
    expect(await callTool(toolNamed(manager, 'mcp_fixture_pid'), {})).toEqual({ text: pid });
  }, 30_000);

  describe.each(['json', 'sse'] as const)('over HTTP as %s', (responseMode) => {
    it('fails only its call: the next call on the connection is answered', async () => {
      const mcp = createMcpHandler(
        () => {
          const server = new McpServer({ name: 'limits', version: '1.0.0' });
          server.registerTool('big', { description: 'Returns a text of 11 MB', inputSchema: z.object({}) }, () => ({
            content: [{ type: 'text', text: 'x'.repeat(11 * 1024 * 1024) }],
          }));
          server.registerTool('small', { description: 'Returns a short text', inputSchema: z.object({}) }, () => ({
            content: [{ type: 'text', text: 'small' }],
          }));
          return server;
        },
        { responseMode },
      );
      const handle = toNodeHandler(mcp);
      const server: Server = createServer((request, response) => void handle(request as Parameters<typeof handle>[0], response));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      httpServer = {
        close: async () => {
          server.closeAllConnections();
          await new Promise((resolve) => server.close(resolve));
          await mcp.close();
        },
      };
      const address = server.address();
      const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/mcp`;
      const entry: McpServerEntry = { name: 'limits', timeout_secs: 30, env: [], allow_private_network: true, transport: { type: 'http', url, headers: {} } };
      ({ manager } = makeManager([entry]));
      manager.start();
      await waitForStatus(manager, 'limits', 'connected');

      const big = await callTool(toolNamed(manager, 'mcp_limits_big'), {});
      expect(big.isError).toBe(true);
      expect(big.text).toMatch(
        responseMode === 'sse'
          ? OVER_THE_LIMIT
          : /^MCP tool "mcp_limits_big" failed: MCP message of (11,5\d\d,\d{3}|more than 10,485,760) bytes is over the 10 MB limit \(10,485,760 bytes\)$/,
      );
      expect(manager.servers()[0]).toMatchObject({ status: 'connected' });
      expect(await callTool(toolNamed(manager, 'mcp_limits_small'), {})).toEqual({ text: 'small' });
    }, 30_000);
  });
});
