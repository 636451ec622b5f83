import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpClientManager } from '../../src/mcp/client/index.ts';
import { mcpServersView } from '../../src/http/index.ts';
import { MAX_SCHEMA_REPEATS } from '../../src/validation/index.ts';
import { RECURSIVE_ANY_OF_POINTER } from '../support/hostile-schemas.ts';
import { createRecordingLogger } from '../support/recording-logger.ts';
import { callTool, EVERYTHING_BIN, FILESYSTEM_BIN, makeManager, stdioEntry, toolNamed, waitForStatus } from './client-helpers.ts';

const HOSTILE_SERVER = fileURLToPath(new URL('./hostile-schema-server.ts', import.meta.url));

let manager: McpClientManager | undefined;
afterEach(async () => {
  await manager?.stop();
  manager = undefined;
});

describe('MCP tools whose schemas Loom refuses', () => {
  it("leaves out a tool whose inputSchema is the recursive anyOf of issue 36 (and one whose outputSchema doubles), with the reason logged and in the server's status; the server's other tool works", async () => {
    const logger = createRecordingLogger();
    ({ manager } = makeManager([stdioEntry('hostile', [HOSTILE_SERVER])], process.env, logger));
    manager.start();
    await waitForStatus(manager, 'hostile', 'connected');

    expect(manager.tools().map((tool) => tool.name)).toEqual(['mcp_hostile_miscount', 'mcp_hostile_shout']);
    const [status] = manager.servers();
    expect(status?.tools.map((tool) => tool.name)).toEqual(['mcp_hostile_miscount', 'mcp_hostile_shout']);
    const refused = status?.refusedTools ?? [];
    expect(refused.map((tool) => tool.name)).toEqual(['mcp_hostile_nest', 'mcp_hostile_report']);
    expect(refused[0]?.reason).toMatch(
      new RegExp(
        `^inputSchema at "${RECURSIVE_ANY_OF_POINTER.replaceAll('$', '\\$')}": "\\$ref" cycle through "anyOf": .*; Loom refuses schemas whose checks of one value against one subschema exceed ${MAX_SCHEMA_REPEATS}$`,
      ),
    );
    expect(refused[1]?.reason).toMatch(/^outputSchema at "\/\$defs\/d0\/anyOf\/0\/\$ref": "anyOf\/0" and "anyOf\/1" of "\/\$defs\/d0" both lead to /);
    const warnings = logger.entries.filter((entry) => entry.message === 'MCP tool left out: Loom refuses its schema');
    expect(warnings.map((entry) => entry.bindings['tool'])).toEqual(['nest', 'report']);
    expect(warnings[0]?.bindings['reason']).toBe(status?.refusedTools?.[0]?.reason);

    // Where a person looks: GET /api/mcp/servers and `loom mcp servers` show them.
    const config = { mcp_servers: [stdioEntry('hostile', [HOSTILE_SERVER])] } as unknown as Parameters<typeof mcpServersView>[0];
    expect(mcpServersView(config, manager).configured[0]?.refused_tools?.map((tool) => tool.name)).toEqual(['mcp_hostile_nest', 'mcp_hostile_report']);

    expect((await callTool(toolNamed(manager, 'mcp_hostile_shout'), { text: 'hello' })).text).toBe('HELLO');
    // The SDK checks a structured result against the tool's outputSchema with Loom's bounded validator.
    const miscounted = await callTool(toolNamed(manager, 'mcp_hostile_miscount'), {});
    expect(miscounted.isError).toBe(true);
    expect(miscounted.text).toContain('/n must be number');
    expect(miscounted.text).not.toContain('data/n');
  });

  it("leaves out none of the official servers' tools: server-everything's and server-filesystem's schemas all pass", async () => {
    ({ manager } = makeManager([stdioEntry('everything', [EVERYTHING_BIN]), stdioEntry('fs', [FILESYSTEM_BIN, fileURLToPath(new URL('.', import.meta.url))])]));
    manager.start();
    await waitForStatus(manager, 'everything', 'connected');
    await waitForStatus(manager, 'fs', 'connected');
    for (const server of manager.servers()) {
      expect(server.refusedTools, server.name).toBeUndefined();
      expect(server.tools.length, server.name).toBeGreaterThan(10);
    }
    // One with an outputSchema: its structured result is checked by Loom's validator in the SDK.
    const result = await callTool(toolNamed(manager, 'mcp_everything_get_structured_content'), { location: 'New York' });
    expect(result.isError).toBeUndefined();
    expect(typeof result.structured?.['temperature']).toBe('number');
  });
});
