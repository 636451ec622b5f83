import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../helpers/test-kernel.ts';
import { runCli } from '../helpers/run-cli.ts';
import { TEST_KEYS } from '../helpers/test-host.ts';
import { agentToml, type Api, startApi } from '../http/api-harness.ts';
import { connectClient, firstText, MODERN_REVISION } from '../mcp/server-harness.ts';
import { a2aClient, textMessage } from '../a2a/a2a-sdk-client.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

/**
 * One authority: every role against every operation through every door, judged against one
 * table. A door that checked on its own (or forgot to) shows here as a cell that differs.
 */

type Role = 'owner' | 'user on the agent' | 'user on another agent' | 'viewer';
const ROLES: readonly Role[] = ['owner', 'user on the agent', 'user on another agent', 'viewer'];

type Operation =
  | 'see the agent'
  | 'read the agent'
  | 'send a message'
  | 'read its session'
  | 'reset its session'
  | 'cancel its turn'
  | 'spawn an agent'
  | 'suspend an agent'
  | 'kill an agent'
  | 'read its audit log'
  | 'read its usage'
  | 'decide an approval'
  | 'forge a tool'
  | 'install a package'
  | 'list the MCP servers'
  | 'read the metrics';

const EVERYONE_WHO_REACHES: readonly Role[] = ['owner', 'user on the agent', 'viewer'];

/** The table, written once: who may do what to the agent "helper-one". */
const ALLOWED: Record<Operation, readonly Role[]> = {
  'see the agent': EVERYONE_WHO_REACHES,
  'read the agent': EVERYONE_WHO_REACHES,
  'send a message': ['owner', 'user on the agent'],
  'read its session': EVERYONE_WHO_REACHES,
  'reset its session': ['owner'],
  'cancel its turn': ['owner', 'user on the agent'],
  'spawn an agent': ['owner'],
  'suspend an agent': ['owner'],
  'kill an agent': ['owner'],
  'read its audit log': EVERYONE_WHO_REACHES,
  'read its usage': EVERYONE_WHO_REACHES,
  'decide an approval': ['owner'],
  'forge a tool': ['owner'],
  'install a package': ['owner'],
  'list the MCP servers': ['owner', 'viewer'],
  'read the metrics': ['owner'],
};

const KEYS: Record<Role, string> = {
  owner: 'owner-secret',
  'user on the agent': 'helper-secret',
  'user on another agent': 'other-secret',
  viewer: 'viewer-secret',
};

const CONFIG = {
  // Every case is a request or a few: the rate limit is not what is tried here.
  rate_limit: { per_minute: 1_000_000 },
  auth: {
    keys: [
      { name: 'admin', role: 'owner', key_env: 'OWNER_KEY' },
      { name: 'helper-bot', role: 'user', key_env: 'HELPER_KEY', agents: ['helper-*'] },
      { name: 'other-bot', role: 'user', key_env: 'OTHER_KEY', agents: ['other-*'] },
      { name: 'watcher', role: 'viewer', key_env: 'VIEWER_KEY' },
    ],
  },
};
const ENV = { OWNER_KEY: KEYS.owner, HELPER_KEY: KEYS['user on the agent'], OTHER_KEY: KEYS['user on another agent'], VIEWER_KEY: KEYS.viewer };

/** What a door did: the operation ran (or was judged and went on to its own answer), was refused, or something else happened. */
type Outcome = 'allowed' | 'denied' | `unexpected: ${string}`;

/** A door's way of doing an operation as a role. */
type Door = Partial<Record<Operation, (role: Role) => Promise<Outcome>>>;

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;
let spawned = 0;

beforeAll(async () => {
  dir = await makeTempDir('loom-one-authority-');
  api = await startApi(dir.path, { config: CONFIG, env: ENV });
  const response = await owner('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('helper-one', model.url, 'description = "the agent every role is tried on"') });
  expect(response.status).toBe(201);
});
afterAll(async () => {
  await api.close();
  await dir.remove();
});
beforeEach(() => {
  model.reset();
});

const as = (role: Role, init: RequestInit = {}): RequestInit => ({ ...init, headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${KEYS[role]}` } });
const owner = (path: string, init: RequestInit = {}): Promise<Response> => api.request(path, as('owner', init));

/** Reads a response as an outcome: a refusal is 403, `allowed` the status the operation answers when it may run. */
async function judged(response: Response, allowed: number): Promise<Outcome> {
  if (response.status === 403) {
    await response.body?.cancel();
    return 'denied';
  }
  if (response.status === allowed) {
    await response.body?.cancel();
    return 'allowed';
  }
  return `unexpected: ${response.status} ${await response.text()}`;
}

/** A fresh agent the owner spawns, named within the reach of the user on the agent: the roles are judged, not the reach. */
async function freshAgent(): Promise<string> {
  spawned += 1;
  const name = `helper-fresh-${spawned}`;
  const response = await owner('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml(name, model.url) });
  expect(response.status).toBe(201);
  return name;
}

const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

const HTTP: Door = {
  'see the agent': async (role) => {
    const response = await api.request('/api/agents', as(role));
    if (response.status !== 200) return `unexpected: ${response.status}`;
    return ((await response.json()) as { name: string }[]).some((agent) => agent.name === 'helper-one') ? 'allowed' : 'denied';
  },
  'read the agent': async (role) => judged(await api.request('/api/agents/helper-one', as(role)), 200),
  'send a message': async (role) => {
    model.script([{ text: 'hello back' }]);
    return judged(await api.request('/api/agents/helper-one/messages', as(role, json({ message: 'hello' }))), 200);
  },
  'read its session': async (role) => judged(await api.request('/api/agents/helper-one/session', as(role)), 200),
  'reset its session': async (role) => judged(await api.request('/api/agents/helper-one/session', as(role, { method: 'DELETE' })), 204),
  // No turn runs: one who may cancel is told so (409); one who may not is refused first.
  'cancel its turn': async (role) => judged(await api.request('/api/agents/helper-one/turn/cancel', as(role, { method: 'POST' })), 409),
  'spawn an agent': async (role) => {
    spawned += 1;
    return judged(await api.request('/api/agents', as(role, { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml(`helper-spawned-${spawned}`, model.url) })), 201);
  },
  'suspend an agent': async (role) => judged(await api.request(`/api/agents/${await freshAgent()}/suspend`, as(role, { method: 'POST' })), 200),
  'kill an agent': async (role) => judged(await api.request(`/api/agents/${await freshAgent()}`, as(role, { method: 'DELETE' })), 200),
  'read its audit log': async (role) => judged(await api.request('/api/audit?agent=helper-one', as(role)), 200),
  'read its usage': async (role) => judged(await api.request('/api/usage?agent=helper-one', as(role)), 200),
  // No such request: one who may decide is told so (404); one who may not is refused first.
  'decide an approval': async (role) => judged(await api.request('/api/approvals/no-such-request/approve', as(role, { method: 'POST' })), 404),
  // An empty request: one who may forge is told what is missing (400); one who may not is refused first.
  'forge a tool': async (role) => judged(await api.request('/api/tools/forged', as(role, json({}))), 400),
  'install a package': async (role) => judged(await api.request('/api/packages', as(role, json({}))), 400),
  'list the MCP servers': async (role) => judged(await api.request('/api/mcp/servers', as(role)), 200),
  'read the metrics': async (role) => judged(await api.request('/metrics', as(role)), 200),
};

const OPENAI: Door = {
  'see the agent': async (role) => {
    const response = await api.request('/v1/models', as(role));
    if (response.status !== 200) return `unexpected: ${response.status}`;
    return ((await response.json()) as { data: { id: string }[] }).data.some((entry) => entry.id === 'helper-one') ? 'allowed' : 'denied';
  },
  'send a message': async (role) => {
    model.script([{ text: 'hello back' }]);
    return judged(await api.request('/v1/chat/completions', as(role, json({ model: 'helper-one', messages: [{ role: 'user', content: 'hello' }] }))), 200);
  },
};

/** One MCP client per role over the daemon's `/mcp`, connected when first used. */
const mcpClients = new Map<Role, Client>();
async function mcpAs(role: Role): Promise<Client> {
  let client = mcpClients.get(role);
  if (client === undefined) {
    client = await connectClient(api.url, 'modern', { apiKey: KEYS[role] });
    mcpClients.set(role, client);
  }
  return client;
}
afterAll(async () => {
  for (const client of mcpClients.values()) await client.close();
});

/** `loom mcp` over stdio, one process per role, pointed at the daemon (LOOM_URL) with the role's key. */
const stdioClients = new Map<Role, Client>();
const ENTRY = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'loom.js');
async function stdioAs(role: Role): Promise<Client> {
  let client = stdioClients.get(role);
  if (client === undefined) {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [ENTRY, 'mcp'],
      env: { PATH: process.env['PATH'] ?? '', LOOM_HOME: join(dir.path, 'stdio-home'), HOME: dir.path, LOOM_URL: api.url, LOOM_API_KEY: KEYS[role] },
    });
    client = new Client({ name: 'one-authority', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN_REVISION } } });
    await client.connect(transport);
    stdioClients.set(role, client);
  }
  return client;
}
afterAll(async () => {
  for (const client of stdioClients.values()) await client.close();
});

/** The MCP door's operations over a client of `connect`'s. */
function mcpDoor(connect: (role: Role) => Promise<Client>): Door {
  return {
    'see the agent': async (role) => ((await (await connect(role)).listTools()).tools.some((tool) => tool.name === 'loom_agent_helper_one') ? 'allowed' : 'denied'),
    'send a message': async (role) => {
      model.script([{ text: 'hello back' }]);
      try {
        const result = await (await connect(role)).callTool({ name: 'loom_agent_helper_one', arguments: { message: 'hello' } });
        if (result.isError !== true) return firstText(result) === 'hello back' ? 'allowed' : `unexpected: ${firstText(result)}`;
        return /may not/.test(firstText(result)) ? 'denied' : `unexpected: ${firstText(result)}`;
      } catch (error) {
        // A tool the caller is not served is unknown to it.
        return /Unknown tool/.test(String(error)) ? 'denied' : `unexpected: ${String(error)}`;
      }
    },
    'read its session': async (role) => {
      try {
        await (await connect(role)).readResource({ uri: 'loom://agents/helper-one/session' });
        return 'allowed';
      } catch (error) {
        return /not found|-32602/i.test(String(error)) ? 'denied' : `unexpected: ${String(error)}`;
      }
    },
  };
}

const MCP = mcpDoor(mcpAs);
const MCP_STDIO = mcpDoor(stdioAs);

/** Sends through A2A with the SDK's client over `transport`: a card out of reach is 404, as an unknown agent; a refusal fails the task or the call. */
async function a2aSend(role: Role, transport: 'JSONRPC' | 'HTTP+JSON'): Promise<Outcome> {
  let client;
  try {
    client = await a2aClient(api.url, 'helper-one', KEYS[role], transport);
  } catch (error) {
    return /404/.test(String(error)) ? 'denied' : `unexpected: ${String(error)}`;
  }
  model.script([{ text: 'hello back' }]);
  try {
    const result = await client.sendMessage(textMessage('hello'));
    const text = JSON.stringify(result);
    if (text.includes('hello back')) return 'allowed';
    return /may not/.test(text) ? 'denied' : `unexpected: ${text}`;
  } catch (error) {
    return /may not/.test(String(error)) ? 'denied' : `unexpected: ${String(error)}`;
  }
}

const A2A: Door = {
  'see the agent': async (role) => {
    const response = await api.request('/a2a/agents', as(role));
    if (response.status !== 200) return `unexpected: ${response.status}`;
    return JSON.stringify(await response.json()).includes('"helper-one"') ? 'allowed' : 'denied';
  },
  'send a message': (role) => a2aSend(role, 'JSONRPC'),
};

const A2A_REST: Door = {
  'send a message': (role) => a2aSend(role, 'HTTP+JSON'),
};

/** `loom <args>` against the daemon at its URL with the role's key, as a person at another machine runs it. */
async function cliAs(role: Role, args: readonly string[]): Promise<Outcome> {
  const result = await runCli(`${dir.path}/cli-home`, args, { env: { LOOM_URL: api.url, LOOM_API_KEY: KEYS[role] } });
  if (result.code === 0) return 'allowed';
  return /may not/.test(result.stderr) ? 'denied' : `unexpected: exit ${result.code}: ${result.stderr}`;
}

const CLI: Door = {
  'see the agent': async (role) => {
    const result = await runCli(`${dir.path}/cli-home`, ['agent', 'list', '--json'], { env: { LOOM_URL: api.url, LOOM_API_KEY: KEYS[role] } });
    if (result.code !== 0) return `unexpected: exit ${result.code}: ${result.stderr}`;
    return (JSON.parse(result.stdout) as { name: string }[]).some((agent) => agent.name === 'helper-one') ? 'allowed' : 'denied';
  },
  'read the agent': (role) => cliAs(role, ['agent', 'show', 'helper-one']),
  'send a message': async (role) => {
    model.script([{ text: 'hello back' }]);
    return cliAs(role, ['send', 'helper-one', 'hello']);
  },
  'suspend an agent': async (role) => cliAs(role, ['agent', 'suspend', await freshAgent()]),
  'kill an agent': async (role) => cliAs(role, ['agent', 'kill', await freshAgent()]),
  'read its usage': (role) => cliAs(role, ['usage', '--agent', 'helper-one']),
};

/**
 * The CLI with no daemon: the person at the terminal is the owner of the home (`local`), so only
 * the owner's column applies; the kernel judges them by the same table.
 */
describe('through the CLI in process (no daemon)', () => {
  const home = (): string => `${dir.path}/in-process-home`;
  const loom = (args: readonly string[]): ReturnType<typeof runCli> => runCli(home(), args, { env: TEST_KEYS });
  beforeAll(async () => {
    await writeFile(`${dir.path}/helper-one.toml`, agentToml('helper-one', model.url));
    expect((await loom(['agent', 'spawn', `${dir.path}/helper-one.toml`])).code).toBe(0);
  });
  const operations: Partial<Record<Operation, () => Promise<boolean>>> = {
    'see the agent': async () => (JSON.parse((await loom(['agent', 'list', '--json'])).stdout) as { name: string }[]).some((agent) => agent.name === 'helper-one'),
    'read the agent': async () => (await loom(['agent', 'show', 'helper-one'])).code === 0,
    'send a message': async () => {
      model.script([{ text: 'hello back' }]);
      return (await loom(['send', 'helper-one', 'hello'])).stdout.includes('hello back');
    },
    'read its usage': async () => (await loom(['usage', '--agent', 'helper-one'])).code === 0,
    'suspend an agent': async () => (await loom(['agent', 'suspend', 'helper-one'])).code === 0 && (await loom(['agent', 'resume', 'helper-one'])).code === 0,
  };
  for (const [operation, run] of Object.entries(operations) as [Operation, () => Promise<boolean>][]) {
    it(`owner: ${operation} is ${ALLOWED[operation].includes('owner') ? 'allowed' : 'denied'}`, async () => {
      expect(await run()).toBe(ALLOWED[operation].includes('owner'));
    });
  }
});

/** What the agent's model was told its `agent_message` call gave (the tool's result in its last request). */
function lastToolResult(): string {
  const last = model.requests.at(-1)?.body as { messages?: { role: string; content: unknown }[] } | undefined;
  const tool = last?.messages?.findLast((message) => message.role === 'tool');
  return typeof tool?.content === 'string' ? tool.content : JSON.stringify(tool?.content ?? null);
}

/** Agents asking through `agent_message`: one granted it for `helper-*`, one granted it only for `other-*`. */
describe('an agent through agent_message', () => {
  const askers = { 'an agent granted agent_message for it': 'asker-granted', 'an agent granted agent_message for others only': 'asker-elsewhere' } as const;
  beforeAll(async () => {
    for (const [name, pattern] of [['asker-granted', 'helper-*'], ['asker-elsewhere', 'other-*']] as const) {
      const body = agentToml(name, model.url, `[capabilities]\ntools = ["agent_message"]\nagent_message = ["${pattern}"]`);
      expect((await owner('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body })).status).toBe(201);
    }
  });
  for (const [who, asker] of Object.entries(askers)) {
    const expected: Outcome = asker === 'asker-granted' ? 'allowed' : 'denied';
    it(`${who}: send a message is ${expected}`, async () => {
      model.script([{ toolCalls: [{ name: 'agent_message', input: { target_agent_name: 'helper-one', message: 'hello' } }] }, { text: 'hello back' }, { text: 'done' }]);
      const response = await owner(`/api/agents/${asker}/messages`, json({ message: 'ask helper-one' }));
      expect(response.status).toBe(200);
      const result = lastToolResult();
      const outcome: Outcome = result.includes('hello back') ? 'allowed' : result.includes('agent_message') ? 'denied' : `unexpected: ${result}`;
      expect(outcome).toBe(expected);
    });
  }
});

const DOORS: Record<string, Door> = { 'the HTTP API': HTTP, '/v1 (OpenAI-compatible)': OPENAI, 'MCP over HTTP': MCP, 'MCP over stdio (loom mcp against the daemon)': MCP_STDIO, 'A2A JSON-RPC': A2A, 'A2A HTTP+JSON': A2A_REST, 'the CLI against a daemon': CLI };

for (const [doorName, door] of Object.entries(DOORS)) {
  describe(`through ${doorName}`, () => {
    for (const [operation, run] of Object.entries(door) as [Operation, (role: Role) => Promise<Outcome>][]) {
      for (const role of ROLES) {
        const expected: Outcome = ALLOWED[operation].includes(role) ? 'allowed' : 'denied';
        it(`${role}: ${operation} is ${expected}`, async () => {
          expect(await run(role)).toBe(expected);
        });
      }
    }
  });
}
