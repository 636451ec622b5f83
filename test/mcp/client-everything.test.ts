import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { checkToolInput, toolJsonSchema } from '../../src/runtime/index.ts';
import type { McpClientManager } from '../../src/mcp/client/index.ts';
import { callTool, EVERYTHING_BIN, makeManager, startEverythingServer, stdioEntry, toolNamed, waitForStatus } from './client-helpers.ts';

let manager: McpClientManager | undefined;
let peer: ChildProcess | undefined;

afterEach(async () => {
  await manager?.stop();
  manager = undefined;
  peer?.kill();
  peer = undefined;
});

describe('MCP client against server-everything', () => {
  it('over stdio, lists the namespaced tools and calls echo, getting its text back', async () => {
    ({ manager } = makeManager([stdioEntry('every-thing', [EVERYTHING_BIN, 'stdio'])]));
    manager.start();
    expect(manager.servers()[0]?.status).toBe('connecting');
    await waitForStatus(manager, 'every-thing', 'connected');

    const names = manager.tools().map((tool) => tool.name);
    expect(names).toContain('mcp_every_thing_echo');
    expect(names).toContain('mcp_every_thing_get_sum');
    const echo = toolNamed(manager, 'mcp_every_thing_echo');
    expect(echo.mcpServer).toBe('every-thing');
    expect(echo.description).toMatch(/^\[MCP:every-thing\] /);
    // The server's JSON Schema reaches the model and the runner's validation.
    expect(toolJsonSchema(echo)).toMatchObject({ properties: { message: { type: 'string' } }, required: ['message'] });
    expect(checkToolInput(echo, {})).toEqual({ ok: false, problems: "(input) must have required property 'message'" });
    expect(await callTool(echo, { message: 'hello' })).toEqual({ text: 'Echo: hello' });

    const server = manager.servers()[0];
    expect(server).toMatchObject({ name: 'every-thing', transport: 'stdio', status: 'connected' });
    expect(server?.tools).toContainEqual({ name: 'mcp_every_thing_echo', description: echo.description });
  });

  it('over stdio, passes structuredContent through as structured', async () => {
    ({ manager } = makeManager([stdioEntry('everything', [EVERYTHING_BIN, 'stdio'])]));
    manager.start();
    await waitForStatus(manager, 'everything', 'connected');
    const result = await callTool(toolNamed(manager, 'mcp_everything_get_structured_content'), { location: 'Chicago' });
    expect(result.isError).toBeUndefined();
    expect(typeof result.structured?.['temperature']).toBe('number');
    expect(typeof result.structured?.['conditions']).toBe('string');
  });

  it('over stdio, an aborted signal cancels a long-running call at once with an error result', async () => {
    ({ manager } = makeManager([stdioEntry('everything', [EVERYTHING_BIN, 'stdio'])]));
    manager.start();
    await waitForStatus(manager, 'everything', 'connected');
    const controller = new AbortController();
    const pending = callTool(toolNamed(manager, 'mcp_everything_trigger_long_running_operation'), { duration: 600, steps: 600 }, controller.signal);
    controller.abort(new Error('cancelled by the test'));
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(result.text).toMatch(/cancelled/);
    // The connection survives the cancellation.
    expect(await callTool(toolNamed(manager, 'mcp_everything_echo'), { message: 'still here' })).toEqual({ text: 'Echo: still here' });
  });

  it('over stdio, the child sees PATH and the listed variables only, not the rest of the environment', async () => {
    const env = { PATH: process.env['PATH'], LOOM_TEST_LISTED: 'listed-value', LOOM_TEST_SECRET: 'secret-value' };
    ({ manager } = makeManager([stdioEntry('everything', [EVERYTHING_BIN, 'stdio'], { env: ['LOOM_TEST_LISTED'] })], env));
    manager.start();
    await waitForStatus(manager, 'everything', 'connected');
    const result = await callTool(toolNamed(manager, 'mcp_everything_get_env'), {});
    const childEnv = JSON.parse(result.text) as Record<string, string>;
    expect(childEnv['LOOM_TEST_LISTED']).toBe('listed-value');
    expect(childEnv['PATH']).toBe(process.env['PATH']);
    expect(childEnv).not.toHaveProperty('LOOM_TEST_SECRET');
    expect(childEnv).not.toHaveProperty('HOME');
  });

  it('over legacy SSE on 127.0.0.1 with allow_private_network, lists tools and calls echo', async () => {
    const started = await startEverythingServer('sse');
    peer = started.child;
    ({ manager } = makeManager([
      { name: 'sse', timeout_secs: 30, env: [], allow_private_network: true, transport: { type: 'sse', url: `http://127.0.0.1:${started.port}/sse` } },
    ]));
    manager.start();
    await waitForStatus(manager, 'sse', 'connected');
    expect(manager.servers()[0]?.transport).toBe('sse');
    expect(await callTool(toolNamed(manager, 'mcp_sse_echo'), { message: 'over sse' })).toEqual({ text: 'Echo: over sse' });
  });

  it('over Streamable HTTP on 127.0.0.1 with allow_private_network and an env header, lists tools and calls echo', async () => {
    const started = await startEverythingServer('streamableHttp');
    peer = started.child;
    ({ manager } = makeManager(
      [
        {
          name: 'web',
          timeout_secs: 30,
          env: [],
          allow_private_network: true,
          transport: { type: 'http', url: `http://127.0.0.1:${started.port}/mcp`, headers: { 'x-api-key': 'Bearer ${LOOM_TEST_TOKEN}' } },
        },
      ],
      { LOOM_TEST_TOKEN: 'token' },
    ));
    manager.start();
    await waitForStatus(manager, 'web', 'connected');
    expect(await callTool(toolNamed(manager, 'mcp_web_echo'), { message: 'over http' })).toEqual({ text: 'Echo: over http' });
    const sum = await callTool(toolNamed(manager, 'mcp_web_get_sum'), { a: 2, b: 3 });
    expect(sum.text).toMatch(/5/);
  });
});
