import { type Client, ResourceNotFoundError } from '@modelcontextprotocol/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentSessionView, LastTurnView } from '../../src/mcp/server/index.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { OWNER_AND_HELPER_KEYS } from '../http/api-harness.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { agentManifest, type ClientKind, connectClient, type McpHttpServer, startMcpHttpServer, waitFor } from './server-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let served: McpHttpServer | undefined;
const clients: Client[] = [];

beforeEach(async () => {
  dir = await makeTempDir('loom-mcp-server-resources-');
});
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await served?.close();
  served = undefined;
  await dir.remove();
});

async function serve(options: Parameters<typeof startMcpHttpServer>[1] = {}): Promise<McpHttpServer> {
  served = await startMcpHttpServer(dir.path, options);
  return served;
}

async function connect(url: string, kind: ClientKind, options: Parameters<typeof connectClient>[2] = {}): Promise<Client> {
  const client = await connectClient(url, kind, options);
  clients.push(client);
  return client;
}

/** Reads a resource and parses its one JSON content. */
async function readJson<T>(client: Client, uri: string): Promise<T> {
  const { contents } = await client.readResource({ uri });
  expect(contents).toHaveLength(1);
  expect(contents[0]).toMatchObject({ uri, mimeType: 'application/json' });
  const text = (contents[0] as { text?: string }).text;
  expect(typeof text).toBe('string');
  return JSON.parse(text ?? '') as T;
}

/** What reading `uri` fails with: the error's code, data and message (the URI in it made generic). */
async function readFailure(client: Client, uri: string): Promise<{ isNotFound: boolean; code: unknown; data: unknown; message: string }> {
  const error: unknown = await client.readResource({ uri }).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error, `reading ${uri} should fail`).toBeInstanceOf(Error);
  const { code, data, message } = error as { code?: unknown; data?: unknown; message: string };
  return { isNotFound: error instanceof ResourceNotFoundError, code, data, message: message.replaceAll(uri, '<uri>') };
}

const writer = (name: string): ReturnType<typeof manifest> =>
  manifest(`name = "${name}"\n[capabilities]\ntools = ["file_write"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`);

describe.each<ClientKind>(['modern', 'legacy-streamable', 'legacy-sse'])('agent resources with a %s client', (kind) => {
  it("advertises resources, lists each agent's session and last turn and the two templates", async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('code-reviewer', model.url, 'Reviews code changes'));
    await host.kernel.spawn(agentManifest('helper', model.url));
    const client = await connect(url, kind);
    expect(client.getServerCapabilities()?.resources).toMatchObject({ listChanged: true });
    const { resources } = await client.listResources();
    expect(resources.map((resource) => resource.uri)).toEqual([
      'loom://agents/code-reviewer/session',
      'loom://agents/code-reviewer/turns/last',
      'loom://agents/helper/session',
      'loom://agents/helper/turns/last',
    ]);
    expect(resources[0]).toMatchObject({
      name: 'code-reviewer/session',
      mimeType: 'application/json',
      description: expect.stringContaining('code-reviewer') as unknown,
    });
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.map((template) => template.uriTemplate)).toEqual(['loom://agents/{name}/session', 'loom://agents/{name}/turns/last']);
  });

  it("reads the caller's session of an agent and its last turn after a turn the client asked for", async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('helper', model.url));
    const client = await connect(url, kind);
    model.script([{ text: 'Oslo.' }]);
    await client.callTool({ name: 'loom_agent_helper', arguments: { message: 'Capital of Norway?' } });

    const session = await readJson<AgentSessionView>(client, 'loom://agents/helper/session');
    expect(session).toMatchObject({ agent: 'helper', running: null });
    // A stateless request is the owner's own: the agent's main session; a 2025-era session or an SSE stream has one of its own.
    expect(session.session_id === host.kernel.get('helper').session_id).toBe(kind === 'modern');
    expect(session.messages).toMatchObject([
      { role: 'user', content: 'Capital of Norway?' },
      { role: 'assistant', content: [{ type: 'text', text: 'Oslo.' }] },
    ]);

    const last = await readJson<LastTurnView>(client, 'loom://agents/helper/turns/last');
    expect(last).toMatchObject({
      agent: 'helper',
      running: null,
      turn: { message: 'Capital of Norway?', text: 'Oslo.', status: 'finished', reason: null, model: 'openai/gpt-4o', tool_calls: [] },
    });
  });
});

describe('the last-turn resource', () => {
  it('gives the last turn only: its message, reply, tool calls with input, output and duration, outcome, usage and trace', async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(writer('scribe'));
    model.script([
      { text: 'First answer.' },
      { toolCalls: [{ name: 'file_write', input: { path: 'note.txt', content: 'remember this' } }], usage: { inputTokens: 40, outputTokens: 7 } },
      { text: 'Saved it.', usage: { inputTokens: 60, outputTokens: 3 } },
    ]);
    await host.kernel.send('scribe', 'Say something');
    await host.kernel.send('scribe', 'Write a note');
    const client = await connect(url, 'modern');

    const { turn } = await readJson<LastTurnView>(client, 'loom://agents/scribe/turns/last');
    expect(turn).toMatchObject({
      message: 'Write a note',
      text: 'Saved it.',
      status: 'finished',
      note: null,
      model: 'openai/gpt-4o',
      usage: { input_tokens: 100, output_tokens: 10 },
    });
    expect(turn?.run_id).toEqual(expect.any(String));
    expect(turn?.tool_calls).toEqual([
      {
        id: expect.any(String) as unknown,
        name: 'file_write',
        input: { path: 'note.txt', content: 'remember this' },
        output: expect.any(String) as unknown,
        is_error: false,
        duration_ms: expect.any(Number) as unknown,
        approval: null,
      },
    ]);
    expect(turn?.trace.map((step) => step.kind)).toEqual(['model', 'tool', 'model']);
    expect(turn?.messages[0]).toMatchObject({ role: 'user', content: 'Write a note' });
    expect(JSON.stringify(turn?.messages)).not.toContain('First answer.');
  });

  it("gives as the reply all the turn said, before its tool call and after, as the agent's tool answered it", async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(writer('scribe'));
    model.script([
      { text: 'I will write it down. ', toolCalls: [{ name: 'file_write', input: { path: 'note.txt', content: 'remember this' } }] },
      { text: 'Saved it.' },
    ]);
    const client = await connect(url, 'modern');
    const answer = await client.callTool({ name: 'loom_agent_scribe', arguments: { message: 'Write a note' } });
    expect(answer.content).toEqual([{ type: 'text', text: 'I will write it down. Saved it.' }]);

    const { turn } = await readJson<LastTurnView>(client, 'loom://agents/scribe/turns/last');
    expect(turn).toMatchObject({ message: 'Write a note', text: 'I will write it down. Saved it.', note: null });
    expect(turn?.tool_calls.map((call) => call.name)).toEqual(['file_write']);
  });

  it('is null before the first turn, and a cancelled turn reads as cancelled with its reason and note', async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('teller', model.url));
    const client = await connect(url, 'modern');
    expect(await readJson<LastTurnView>(client, 'loom://agents/teller/turns/last')).toEqual({
      agent: 'teller',
      session_id: host.kernel.get('teller').session_id,
      turn: null,
      running: null,
    });

    let release: () => void = () => undefined;
    model.script([{ text: 'Once upon a', stall: new Promise<void>((resolve) => (release = resolve)) }]);
    try {
      const events = host.kernel.stream('teller', 'Tell a story')[Symbol.asyncIterator]();
      for (let next = await events.next(); !(next.done === true || next.value.type === 'text-delta'); next = await events.next());
      // While it runs, the turn is not in the session yet: the resource says it runs.
      const during = await readJson<LastTurnView>(client, 'loom://agents/teller/turns/last');
      expect(during).toMatchObject({ turn: null, running: { message: 'Tell a story', state: 'running' } });
      await host.kernel.cancelTurn('teller', { by: 'the test' });
    } finally {
      release();
    }
    const { turn } = await readJson<LastTurnView>(client, 'loom://agents/teller/turns/last');
    expect(turn).toMatchObject({
      message: 'Tell a story',
      status: 'cancelled',
      reason: expect.stringContaining('the test') as unknown,
      text: 'Once upon a',
      note: expect.stringContaining('cut short') as unknown,
    });
  });
});

describe('agent resources and API keys', () => {
  it('lists and reads only the agents a key may reach, and answers an agent outside its reach exactly as an unknown one', async () => {
    const { url, host } = await serve(OWNER_AND_HELPER_KEYS);
    await host.kernel.spawn(agentManifest('helper-one', model.url));
    await host.kernel.spawn(agentManifest('private', model.url));
    model.script([{ text: 'Secret plans.' }]);
    await host.kernel.send('private', 'What are the plans?');

    const admin = await connect(url, 'modern', { apiKey: 'admin-secret' });
    expect((await admin.listResources()).resources.map((resource) => resource.uri)).toContain('loom://agents/private/session');
    expect((await readJson<LastTurnView>(admin, 'loom://agents/private/turns/last')).turn?.text).toBe('Secret plans.');

    const helperBot = await connect(url, 'modern', { apiKey: 'helper-secret' });
    expect((await helperBot.listResources()).resources.map((resource) => resource.uri)).toEqual([
      'loom://agents/helper-one/session',
      'loom://agents/helper-one/turns/last',
    ]);
    expect((await readJson<AgentSessionView>(helperBot, 'loom://agents/helper-one/session')).messages).toEqual([]);

    for (const path of ['session', 'turns/last']) {
      const refused = await readFailure(helperBot, `loom://agents/private/${path}`);
      const unknown = await readFailure(helperBot, `loom://agents/nobody/${path}`);
      expect(refused).toMatchObject({ isNotFound: true, code: -32602, data: { uri: `loom://agents/private/${path}` } });
      expect(refused.message).not.toContain('Secret');
      // The same answer, bar the URI it echoes: a key cannot tell an agent it may not reach from none.
      expect({ ...refused, data: undefined }).toEqual({ ...unknown, data: undefined });
    }
  });

  it('answers a URI that is no agent resource as not found, for an owner too', async () => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('helper', model.url));
    const client = await connect(url, 'legacy-streamable');
    for (const uri of ['loom://agents/nobody/session', 'loom://agents/helper/turns/first', 'loom://agents/helper', 'test://static-text']) {
      expect(await readFailure(client, uri)).toMatchObject({ isNotFound: true, code: -32602, data: { uri } });
    }
  });
});

describe('agent resources, resources/list_changed', () => {
  it.each<ClientKind>(['modern', 'legacy-sse'])('tells a %s client when an agent is spawned and when one is killed', async (kind) => {
    const { url, host } = await serve();
    await host.kernel.spawn(agentManifest('first', model.url));
    let waiter: ReturnType<typeof waitFor<string[]>> | undefined;
    const client = await connect(url, kind, {
      clientOptions: {
        listChanged: { resources: { debounceMs: 0, onChanged: (_error, resources) => waiter?.push((resources ?? []).map((resource) => resource.uri)) } },
      },
    });
    expect((await client.listResources()).resources).toHaveLength(2);

    waiter = waitFor((uris) => uris.includes('loom://agents/second/session'));
    await host.kernel.spawn(agentManifest('second', model.url));
    expect(await waiter.done).toEqual([
      'loom://agents/first/session',
      'loom://agents/first/turns/last',
      'loom://agents/second/session',
      'loom://agents/second/turns/last',
    ]);

    waiter = waitFor((uris) => !uris.includes('loom://agents/first/session'));
    await host.kernel.kill('first');
    expect(await waiter.done).toEqual(['loom://agents/second/session', 'loom://agents/second/turns/last']);
  });
});
