/**
 * A stdio MCP server that exits on any first message but `initialize`, as servers built on SDKs
 * that take nothing before `initialize` do: `node exit-on-probe-server.ts <log-file>` appends the
 * method of the first message it reads to `<log-file>`, then serves the 2025 revisions (the
 * official server SDK's stdio transport, on the rest of standard input).
 */
import { appendFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

const log = process.argv[2];
if (log === undefined) throw new Error('usage: exit-on-probe-server.ts <log-file>');

const input = new PassThrough();
let pending = '';
let decided = false;

process.stdin.on('data', (chunk: Buffer) => {
  if (decided) {
    input.write(chunk);
    return;
  }
  pending += chunk.toString('utf8');
  const end = pending.indexOf('\n');
  if (end < 0) return;
  decided = true;
  const first = JSON.parse(pending.slice(0, end)) as { method?: string };
  appendFileSync(log, `${first.method ?? '(none)'}\n`);
  if (first.method !== 'initialize') process.exit(1);
  input.write(pending);
});
process.stdin.once('end', () => input.end());

const server = new McpServer({ name: 'loom-exit-on-probe', version: '1.0.0' });
server.registerTool('hello', { description: 'Says hello', inputSchema: z.object({}) }, () => ({
  content: [{ type: 'text' as const, text: 'hello from 2025' }],
}));
await server.connect(new StdioServerTransport(input, process.stdout));
