import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/run-cli.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { agentToml, type Api, OWNER_AND_HELPER_KEYS, startApi } from '../http/api-harness.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { type ClientKind, connectClient, firstText, MODERN_REVISION } from './server-harness.ts';

// Each MCP client session (a 2025-era Streamable HTTP session, a 2024-era SSE stream, a stdio
// connection) talks to an agent in a conversation of its own, `…/mcp:<session id>`, within its key's.

const ENTRY = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'loom.js');
const HELPER_KEY = OWNER_AND_HELPER_KEYS.env.HELPER_KEY;
const ADMIN_KEY = OWNER_AND_HELPER_KEYS.env.ADMIN_KEY;

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;
const clients: Client[] = [];

beforeAll(async () => {
  dir = await makeTempDir('loom-mcp-client-sessions-');
  api = await startApi(dir.path, OWNER_AND_HELPER_KEYS);
  const response = await api.request('/api/agents', {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/toml' },
    body: agentToml('helper-one', model.url),
  });
  expect(response.status).toBe(201);
});
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  model.reset();
});
afterAll(async () => {
  await api.close();
  await dir.remove();
});

/** The session resource as the client reads it: the session's id and the text of its messages. */
async function sessionOf(client: Client): Promise<{ id: string; text: string }> {
  const read = await client.readResource({ uri: 'loom://agents/helper-one/session' });
  const content = read.contents[0];
  const body = JSON.parse(content !== undefined && 'text' in content ? content.text : '{}') as { session_id: string; messages: unknown[] };
  return { id: body.session_id, text: JSON.stringify(body.messages) };
}

/** Sends `message` to the agent through `client`, the model answering `reply`. */
async function ask(client: Client, message: string, reply: string): Promise<void> {
  model.script([{ text: reply }]);
  const result = await client.callTool({ name: 'loom_agent_helper_one', arguments: { message } });
  expect(result.isError).not.toBe(true);
  expect(firstText(result)).toBe(reply);
}

/** What the model was sent in its last request, as text. */
const lastModelRequest = (): string => JSON.stringify(model.requests.at(-1)?.body ?? null);

/** The sessions of the agent the owner lists, by conversation. */
async function conversations(): Promise<(string | null)[]> {
  const response = await api.request('/api/agents/helper-one/sessions', { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  return ((await response.json()) as { conversation: string | null }[]).map((session) => session.conversation);
}

/** Two client sessions of one key, `connect` making each, do not see each other's turns. */
async function twoSessionsApart(connect: () => Promise<Client>): Promise<void> {
  const first = await connect();
  clients.push(first);
  const second = await connect();
  clients.push(second);
  await ask(first, 'the first client asks', 'answer to the first');
  await ask(second, 'the second client asks', 'answer to the second');
  // The second turn's model request carried nothing of the first session.
  expect(lastModelRequest()).toContain('the second client asks');
  expect(lastModelRequest()).not.toContain('the first client asks');

  const firstSession = await sessionOf(first);
  const secondSession = await sessionOf(second);
  expect(firstSession.id).not.toBe(secondSession.id);
  expect(firstSession.text).toContain('answer to the first');
  expect(firstSession.text).not.toContain('the second client asks');
  expect(secondSession.text).toContain('answer to the second');
  expect(secondSession.text).not.toContain('the first client asks');
}

describe.each(['legacy-streamable', 'legacy-sse'] as ClientKind[])('over HTTP, a %s client', (kind) => {
  it("has a session of the agent of its own: two client sessions of one key do not see each other's turns", async () => {
    await twoSessionsApart(() => connectClient(api.url, kind, { apiKey: HELPER_KEY }));
    // Both are threads of the key's own conversation, named for their MCP session.
    const mcpThreads = (await conversations()).filter((conversation) => conversation?.includes('/mcp:') === true);
    expect(mcpThreads.length).toBeGreaterThanOrEqual(2);
    expect(mcpThreads.every((conversation) => conversation?.startsWith('principal:') === true)).toBe(true);
  }, 30_000);
});

describe('over HTTP, a modern (stateless) client', () => {
  it("has no client session: its turns go into the key's own session, which the sessionful clients do not see", async () => {
    const stateless = await connectClient(api.url, 'modern', { apiKey: HELPER_KEY });
    clients.push(stateless);
    const sessionful = await connectClient(api.url, 'legacy-streamable', { apiKey: HELPER_KEY });
    clients.push(sessionful);
    await ask(stateless, 'asked without a session', 'stateless answer');
    const own = await api.request('/api/agents/helper-one/session', { headers: { authorization: `Bearer ${HELPER_KEY}` } });
    const ownSession = (await own.json()) as { id: string };
    expect((await sessionOf(stateless)).id).toBe(ownSession.id);
    expect((await sessionOf(sessionful)).text).not.toContain('asked without a session');
  }, 30_000);
});

describe('over stdio', () => {
  /** `loom mcp` on `home` (against the daemon when `env` names it), with the official client. */
  async function stdio(home: string, env: Record<string, string>): Promise<Client> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [ENTRY, 'mcp'],
      env: { PATH: process.env['PATH'] ?? '', LOOM_HOME: home, HOME: dir.path, ...env },
    });
    const client = new Client({ name: 'client-sessions', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN_REVISION } } });
    await client.connect(transport);
    return client;
  }

  it('against a daemon, each loom mcp process is a client session of its own for one key', async () => {
    await twoSessionsApart(() => stdio(join(dir.path, 'stdio-home'), { LOOM_URL: api.url, LOOM_API_KEY: HELPER_KEY }));
  }, 60_000);

  it("in process (no daemon), the owner's next loom mcp starts a session of its own, not the main session", async () => {
    const home = join(dir.path, 'in-process-home');
    await writeFile(join(dir.path, 'helper-one.toml'), agentToml('helper-one', model.url));
    expect((await runCli(home, ['agent', 'spawn', join(dir.path, 'helper-one.toml')], { env: TEST_KEYS })).code).toBe(0);
    const first = await stdio(home, TEST_KEYS);
    await ask(first, 'asked over the first connection', 'first connection answer');
    const firstSession = await sessionOf(first);
    expect(firstSession.text).toContain('first connection answer');
    await first.close();
    const second = await stdio(home, TEST_KEYS);
    clients.push(second);
    const secondSession = await sessionOf(second);
    expect(secondSession.id).not.toBe(firstSession.id);
    expect(secondSession.text).not.toContain('asked over the first connection');
  }, 60_000);
});
