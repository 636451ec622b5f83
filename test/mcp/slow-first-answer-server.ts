/**
 * A 2026-07-28-capable stdio MCP server (the official server SDK) whose first answer takes a
 * while: `node slow-first-answer-server.ts <ms>` holds its first line on standard output for
 * `<ms>` milliseconds, then answers everything at once (a server busy starting up).
 */
import { Writable } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

const holdMs = Number(process.argv[2] ?? '0');
let first = true;
const output = new Writable({
  write(chunk: Buffer, _encoding, done) {
    if (!first) {
      process.stdout.write(chunk, () => done());
      return;
    }
    first = false;
    // The server's own slowness, which is what the test is about.
    setTimeout(() => process.stdout.write(chunk, () => done()), holdMs);
  },
});

// serveStdio answers in whichever era the client opens with (McpServer.connect alone serves the 2025 revisions).
serveStdio(
  () => {
    const server = new McpServer({ name: 'loom-slow-first-answer', version: '1.0.0' });
    server.registerTool('hello', { description: 'Says hello', inputSchema: z.object({}) }, () => ({
      content: [{ type: 'text' as const, text: 'hello, eventually' }],
    }));
    return server;
  },
  { transport: new StdioServerTransport(process.stdin, output) },
);
