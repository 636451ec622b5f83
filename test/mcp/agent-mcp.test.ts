import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { TEST_KEYS, openTestHost, type TestHost } from '../helpers/test-host.ts';
import { makeTempDir, manifest } from '../helpers/test-kernel.ts';
import { EVERYTHING_BIN, FIXTURE_SERVER, stdioEntry } from './client-helpers.ts';
import { BOOK_SCHEMA } from './book-schema.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-agent-mcp-');
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const agent = (name: string, tools: string): string =>
  `name = "${name}"\n[capabilities]\ntools = [${tools}]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;

async function connected(name: string): Promise<void> {
  await vi.waitFor(() => {
    expect(host.mcp?.servers().find((entry) => entry.name === name)?.status).toBe('connected');
  }, { timeout: 20_000, interval: 50 });
}

async function toolResults(agentName: string, message: string): Promise<Extract<AgentEvent, { type: 'tool-result' }>[]> {
  const results: Extract<AgentEvent, { type: 'tool-result' }>[] = [];
  for await (const event of host.kernel.stream(agentName, message)) if (event.type === 'tool-result') results.push(event);
  return results;
}

describe('agents using MCP servers\' tools in a host that connects them', () => {
  it('call a granted MCP tool and get its result, and never call one they are not granted', async () => {
    host = await openTestHost(dir.path, { mcp_servers: [stdioEntry('everything', [EVERYTHING_BIN, 'stdio'])] }, TEST_KEYS, { connectMcpServers: true });
    await connected('everything');
    await host.kernel.spawn(manifest(agent('granted', '"mcp_everything_echo"')));
    await host.kernel.spawn(manifest(agent('denied', '"file_read"')));

    server.script([{ toolCalls: [{ name: 'mcp_everything_echo', input: { message: 'hello over MCP' } }] }, { text: 'echoed' }]);
    const granted = await toolResults('granted', 'echo it');
    expect(granted).toMatchObject([{ toolName: 'mcp_everything_echo', isError: false }]);
    expect(granted[0]?.text).toContain('hello over MCP');
    // The model was shown the MCP tool.
    expect(JSON.stringify(server.requests[0]?.body['tools'])).toContain('mcp_everything_echo');

    server.script([{ toolCalls: [{ name: 'mcp_everything_echo', input: { message: 'sneaky' } }] }, { text: 'refused' }]);
    const denied = await toolResults('denied', 'echo it');
    expect(denied[0]).toMatchObject({ isError: true, text: 'agent "denied" may not call mcp_everything_echo: add "mcp_everything_echo" to [capabilities].tools' });
    expect(JSON.stringify(server.requests[2]?.body['tools'])).not.toContain('mcp_everything_echo');
  });

  it('offer the model an MCP tool\'s JSON Schema as the server wrote it, and check calls against it as written', async () => {
    host = await openTestHost(dir.path, { mcp_servers: [stdioEntry('fixture', [FIXTURE_SERVER])] }, TEST_KEYS, { connectMcpServers: true });
    await connected('fixture');
    await host.kernel.spawn(manifest(agent('booker', '"mcp_fixture_book"')));
    server.script([
      { toolCalls: [{ name: 'mcp_fixture_book', input: { room: 'large', day: '2026-11-23' } }] },
      { toolCalls: [{ name: 'mcp_fixture_book', input: { room: 'small', day: 'Monday', extra: true } }] },
      { toolCalls: [{ name: 'mcp_fixture_book', input: { room: 'large', day: '2026-11-23', people: 8 } }] },
      { text: 'booked' },
    ]);
    const results = await toolResults('booker', 'book the large room');
    const offered = (server.requests[0]?.body['tools'] as { function: { name: string; parameters: unknown } }[]).find((tool) => tool.function.name === 'mcp_fixture_book');
    expect(offered?.function.parameters).toEqual(BOOK_SCHEMA);
    expect(results.map((result) => [result.isError, result.text])).toEqual([
      [true, 'invalid input for mcp_fixture_book: (input) must have required property \'people\'; (input) must match "then" schema'],
      [true, 'invalid input for mcp_fixture_book: (input) must NOT have additional properties ("extra"); /day must match pattern "^\\d{4}-\\d{2}-\\d{2}$"'],
      [false, 'booked large on 2026-11-23'],
    ]);
  });

  it('give the agent an error result when the server crashes mid-call, and reconnect it', async () => {
    host = await openTestHost(dir.path, { mcp_servers: [stdioEntry('fixture', [FIXTURE_SERVER])] }, TEST_KEYS, { connectMcpServers: true });
    await connected('fixture');
    await host.kernel.spawn(manifest(agent('crasher', '"mcp_fixture_*"')));
    server.script([{ toolCalls: [{ name: 'mcp_fixture_crash', input: {} }] }, { text: 'it broke' }]);
    const results = await toolResults('crasher', 'crash it');
    expect(results[0]).toMatchObject({ toolName: 'mcp_fixture_crash', isError: true });
    // The manager retries on the host's (fake) clock.
    await vi.waitFor(async () => {
      await host.clock.advance(1_000);
      expect(host.mcp?.servers().find((entry) => entry.name === 'fixture')?.status).toBe('connected');
    }, { timeout: 20_000, interval: 50 });
    server.script([{ toolCalls: [{ name: 'mcp_fixture_pid', input: {} }] }, { text: 'alive' }]);
    expect((await toolResults('crasher', 'pid?'))[0]).toMatchObject({ toolName: 'mcp_fixture_pid', isError: false });
  });
});
