/**
 * A stdio MCP server on the official SDK for the tests of schemas Loom refuses: `nest` takes the
 * input schema of issue 36 (a recursive `$ref` through an `anyOf` of identical branches), `report`
 * returns output under a schema whose branches meet again 2^12 times, `miscount` returns output its
 * own (ordinary) schema does not match, and `shout` is an ordinary tool beside them.
 */
import { fromJsonSchema, McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { doublingChain, RECURSIVE_ANY_OF } from '../support/hostile-schemas.ts';

const server = new McpServer({ name: 'loom-test-hostile-schema', version: '1.0.0' });
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });

server.registerTool('nest', { description: 'Takes a value nested under "a"', inputSchema: fromJsonSchema(RECURSIVE_ANY_OF as never) }, () => text('nested'));
server.registerTool('report', { description: 'Returns a report', inputSchema: z.object({}), outputSchema: fromJsonSchema(doublingChain(12) as never) }, () => ({
  ...text('{"s":"x"}'),
  structuredContent: { s: 'x' },
}));
// Published as written, never checked here: what the client makes of it is the test.
const unchecked = (schema: object) => ({
  '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }), jsonSchema: { input: () => schema, output: () => schema } },
});
server.registerTool(
  'miscount',
  {
    description: 'Returns a count that is not a number',
    inputSchema: z.object({}),
    outputSchema: unchecked({ type: 'object', properties: { n: { type: 'number' } } }) as never,
  },
  () => ({ ...text('{"n":"many"}'), structuredContent: { n: 'many' } }),
);
server.registerTool('shout', { description: 'Upper-cases a text', inputSchema: z.object({ text: z.string() }) }, ({ text: value }) =>
  text(value.toUpperCase()),
);

await server.connect(new StdioServerTransport());
