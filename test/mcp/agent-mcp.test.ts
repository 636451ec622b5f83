import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ApprovalRecord } from '../../src/contracts/index.ts';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { TEST_KEYS, openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { EVERYTHING_BIN, FIXTURE_SERVER, stdioEntry } from './client-helpers.ts';
import { BOOK_SCHEMA } from './book-schema.ts';
import { waitFor } from '../support/wait-for.ts';

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
  await waitFor(`MCP server "${name}" to connect`, () => host.mcp?.servers().find((entry) => entry.name === name)?.status === 'connected');
}

/** The one pending approval request, once there is one. */
async function pendingApproval(): Promise<ApprovalRecord> {
  return waitFor('a pending approval', async () => (await host.kernel.approvals.list('pending'))[0]);
}

async function toolResults(agentName: string, message: string): Promise<Extract<AgentEvent, { type: 'tool-result' }>[]> {
  const results: Extract<AgentEvent, { type: 'tool-result' }>[] = [];
  for await (const event of host.kernel.stream(agentName, message)) if (event.type === 'tool-result') results.push(event);
  return results;
}

describe("agents using MCP servers' tools in a host that connects them", () => {
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
    expect(denied[0]).toMatchObject({
      isError: true,
      text: 'agent "denied" may not call mcp_everything_echo: add "mcp_everything_echo" to [capabilities].tools',
    });
    expect(JSON.stringify(server.requests[2]?.body['tools'])).not.toContain('mcp_everything_echo');
  });

  it("offer the model an MCP tool's JSON Schema as the server wrote it, and check calls against it as written", async () => {
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
    const offered = (server.requests[0]?.body['tools'] as { function: { name: string; parameters: unknown } }[]).find(
      (tool) => tool.function.name === 'mcp_fixture_book',
    );
    expect(offered?.function.parameters).toEqual(BOOK_SCHEMA);
    expect(results.map((result) => [result.isError, result.text])).toEqual([
      [true, 'invalid input for mcp_fixture_book: (input) must have required property \'people\'; (input) must match "then" schema'],
      [true, 'invalid input for mcp_fixture_book: (input) must NOT have additional properties ("extra"); /day must match pattern "^\\d{4}-\\d{2}-\\d{2}$"'],
      [false, 'booked large on 2026-11-23'],
    ]);
  });

  it('ask a person through the approvals when a 2025-era server elicits during a call, and check the answer against its schema', async () => {
    host = await openTestHost(dir.path, { mcp_servers: [stdioEntry('everything', [EVERYTHING_BIN, 'stdio'])] }, TEST_KEYS, { connectMcpServers: true });
    await connected('everything');
    await host.kernel.spawn(manifest(agent('asker', '"mcp_everything_*"')));
    server.script([{ toolCalls: [{ name: 'mcp_everything_trigger_elicitation_request', input: {} }] }, { text: 'thanks' }]);
    const results = toolResults('asker', 'ask me');
    const question = await pendingApproval();
    expect(question).toMatchObject({
      tool: 'mcp_everything_elicitation',
      agentName: 'asker',
      input: { message: 'Please provide inputs for the following fields:', requestedSchema: { required: ['name'] } },
    });
    await expect(host.kernel.approvals.decide(question.id, { approved: true, by: 'local', reason: null })).rejects.toThrow(
      'it is a question: approve it with an answer',
    );
    await expect(host.kernel.approvals.decide(question.id, { approved: true, by: 'local', reason: null, answer: { name: 42 } })).rejects.toThrow(
      '/name must be string',
    );
    await host.kernel.approvals.decide(question.id, { approved: true, by: 'local', reason: null, answer: { name: 'Ada Lovelace', check: true } });
    const [result] = await results;
    expect(result?.isError).toBe(false);
    expect(result?.text).toContain('- Name: Ada Lovelace');
    expect(result?.text).toContain('- Agreed to terms: true');
  });

  it("take a declined question as declined, answer roots with the calling agent's workspace, and sample only where [[mcp_servers]] allows it", async () => {
    const entries = [stdioEntry('fixture', [FIXTURE_SERVER]), stdioEntry('sampler', [FIXTURE_SERVER], { sampling: true })];
    host = await openTestHost(dir.path, { mcp_servers: entries }, TEST_KEYS, { connectMcpServers: true });
    await connected('fixture');
    await connected('sampler');
    const asker = await host.kernel.spawn(manifest(agent('asker', '"mcp_fixture_*", "mcp_sampler_*"')));

    server.script([{ toolCalls: [{ name: 'mcp_fixture_ask', input: {} }] }, { text: 'ok' }]);
    const declined = toolResults('asker', 'ask me');
    const question = await pendingApproval();
    expect(question).toMatchObject({ tool: 'mcp_fixture_elicitation', input: { message: 'What is your name?' } });
    await host.kernel.approvals.decide(question.id, { approved: false, by: 'local', reason: 'not now' });
    expect((await declined).map((result) => result.text)).toEqual(['no name']);

    server.script([{ toolCalls: [{ name: 'mcp_fixture_roots', input: {} }] }, { text: 'ok' }]);
    expect((await toolResults('asker', 'roots?')).map((result) => result.text)).toEqual([pathToFileURL(join(host.home.workspacesDir, 'asker')).href]);
    expect(asker.name).toBe('asker');

    server.script([{ toolCalls: [{ name: 'mcp_fixture_sample', input: {} }] }, { text: 'ok' }]);
    // Not allowed: Loom does not offer sampling to that server, which tells the agent so.
    expect((await toolResults('asker', 'sample')).map((result) => result.text)).toEqual([
      expect.stringMatching(/sampling\/createMessage.*did not declare the required capability/),
    ]);
    server.script([{ toolCalls: [{ name: 'mcp_sampler_sample', input: {} }] }, { text: "hi from the agent's model" }, { text: 'done' }]);
    expect((await toolResults('asker', 'sample')).map((result) => result.text)).toEqual(["the model said: hi from the agent's model"]);
    // The sampling ran on the agent's own model, in its usage.
    expect(JSON.stringify(server.requests.at(-2)?.body['messages'])).toContain('user: Say hi');
  });

  it('give the agent an error result when the server crashes mid-call, and reconnect it', async () => {
    host = await openTestHost(dir.path, { mcp_servers: [stdioEntry('fixture', [FIXTURE_SERVER])] }, TEST_KEYS, { connectMcpServers: true });
    await connected('fixture');
    await host.kernel.spawn(manifest(agent('crasher', '"mcp_fixture_*"')));
    server.script([{ toolCalls: [{ name: 'mcp_fixture_crash', input: {} }] }, { text: 'it broke' }]);
    const results = await toolResults('crasher', 'crash it');
    expect(results[0]).toMatchObject({ toolName: 'mcp_fixture_crash', isError: true });
    // The manager retries on the host's (fake) clock.
    await waitFor('the crashed server to reconnect', async () => {
      await host.clock.advance(1_000);
      return host.mcp?.servers().find((entry) => entry.name === 'fixture')?.status === 'connected';
    });
    server.script([{ toolCalls: [{ name: 'mcp_fixture_pid', input: {} }] }, { text: 'alive' }]);
    expect((await toolResults('crasher', 'pid?'))[0]).toMatchObject({ toolName: 'mcp_fixture_pid', isError: false });
  });
});
