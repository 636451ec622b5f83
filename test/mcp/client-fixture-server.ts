/**
 * A tiny stdio MCP server for the MCP client tests: it reports its pid and environment, can hang
 * until cancelled, crash mid-call, add a tool (which sends `notifications/tools/list_changed`), and
 * offers `book`, whose input is a JSON Schema no zod conversion keeps (`$defs`, `$ref`, `oneOf`,
 * `if`/`then`, `additionalProperties: false`). `ask`, `roots` and `sample` ask the client during
 * the call: by `input_required` results on the 2026-07-28 era, by requests on the 2025 one.
 */
import { acceptedContent, fromJsonSchema, inputRequired, McpServer } from '@modelcontextprotocol/server';
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
server.registerTool(
  'hang',
  { description: 'Never answers; reports cancellation on stderr', inputSchema: z.object({}) },
  (_args, ctx) =>
    new Promise<never>((_resolve, reject) => {
      ctx.mcpReq.signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true });
    }),
);
server.registerTool('big', { description: 'Returns a text of 11 MB', inputSchema: z.object({}) }, () => text('x'.repeat(11 * 1024 * 1024)));
server.registerTool('add-tool', { description: 'Adds the tool "added"', inputSchema: z.object({}) }, () => {
  server.registerTool('added', { description: 'A tool added at run time', inputSchema: z.object({}) }, () => text('added here'));
  return text('ok');
});

server.registerTool('book', { description: 'Books a room', inputSchema: fromJsonSchema<{ room: string; day: string }>(BOOK_SCHEMA as never) }, (args) =>
  text(`booked ${args.room} on ${args.day}`),
);

const NAME_SCHEMA = { type: 'object' as const, properties: { name: { type: 'string' as const, minLength: 1 } }, required: ['name'] };
server.registerTool('ask', { description: 'Asks the person for their name', inputSchema: z.object({}) }, async (_args, ctx) => {
  const responses = ctx.mcpReq.inputResponses;
  if (responses !== undefined) {
    const content = acceptedContent(responses, 'name');
    return text(content === undefined ? 'no name' : `hello ${String(content['name'])}`);
  }
  try {
    const result = await ctx.mcpReq.elicitInput({ mode: 'form', message: 'What is your name?', requestedSchema: NAME_SCHEMA });
    return text(result.action === 'accept' ? `hello ${String(result.content?.['name'])}` : 'no name');
  } catch {
    return inputRequired({ inputRequests: { name: inputRequired.elicit({ message: 'What is your name?', requestedSchema: NAME_SCHEMA }) } });
  }
});
server.registerTool('roots', { description: "Lists the client's roots", inputSchema: z.object({}) }, async (_args, ctx) => {
  const listed = ctx.mcpReq.inputResponses?.['roots'] as { roots?: { uri: string }[] } | undefined;
  if (listed !== undefined) return text((listed.roots ?? []).map((root) => root.uri).join(','));
  try {
    const result = await ctx.mcpReq.send({ method: 'roots/list' });
    return text(result.roots.map((root) => root.uri).join(','));
  } catch {
    return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
  }
});
const SAMPLE = { messages: [{ role: 'user' as const, content: { type: 'text' as const, text: 'Say hi' } }], maxTokens: 50 };
server.registerTool('sample', { description: "Asks the client's model to say hi", inputSchema: z.object({}) }, async (_args, ctx) => {
  const sampled = ctx.mcpReq.inputResponses?.['hi'] as { content?: { text?: string } } | undefined;
  if (sampled !== undefined) return text(`the model said: ${sampled.content?.text ?? '(nothing)'}`);
  try {
    const result = await ctx.mcpReq.requestSampling(SAMPLE);
    const content = Array.isArray(result.content) ? result.content[0] : result.content;
    return text(`the model said: ${content?.type === 'text' ? content.text : '(nothing)'}`);
  } catch (error) {
    if (error instanceof Error && /capabilit/i.test(error.message)) return text(`no sampling: ${error.message}`);
    return inputRequired({ inputRequests: { hi: inputRequired.createMessage(SAMPLE) } });
  }
});

await server.connect(new StdioServerTransport());
