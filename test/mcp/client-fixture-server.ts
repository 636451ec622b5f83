/**
 * A tiny stdio MCP server for the MCP client tests: it reports its pid and environment, can hang
 * until cancelled, crash mid-call, add a tool (which sends `notifications/tools/list_changed`), and
 * offers `book`, whose input is a JSON Schema no zod conversion keeps (`$defs`, `$ref`, `oneOf`,
 * `if`/`then`, `additionalProperties: false`).
 */
import { fromJsonSchema, McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { BOOK_SCHEMA } from './book-schema.ts';

const server = new McpServer({ name: 'loom-test-fixture', version: '1.0.0' });
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });

server.registerTool('pid', { description: 'Returns the server process id', inputSchema: z.object({}) }, () => text(String(process.pid)));
server.registerTool('env-names', { description: 'Returns the names of the environment variables', inputSchema: z.object({}) }, () =>
  text(Object.keys(process.env).sort().join(',')),
);
server.registerTool('crash', { description: 'Exits the server in the middle of the call', inputSchema: z.object({}) }, () => process.exit(3));
server.registerTool('hang', { description: 'Never answers; reports cancellation on stderr', inputSchema: z.object({}) }, (_args, ctx) =>
  new Promise<never>((_resolve, reject) => {
    ctx.mcpReq.signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true });
  }),
);
server.registerTool('big', { description: 'Returns a text of 11 MB', inputSchema: z.object({}) }, () => text('x'.repeat(11 * 1024 * 1024)));
server.registerTool('add-tool', { description: 'Adds the tool "added"', inputSchema: z.object({}) }, () => {
  server.registerTool('added', { description: 'A tool added at run time', inputSchema: z.object({}) }, () => text('added here'));
  return text('ok');
});

server.registerTool('book', { description: 'Books a room', inputSchema: fromJsonSchema<{ room: string; day: string }>(BOOK_SCHEMA as never) }, (args) => text(`booked ${args.room} on ${args.day}`));

await server.connect(new StdioServerTransport());
