import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { signWebhook, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from '../../src/channels/webhook-channel.ts';
import { channelPrincipal } from '../../src/channels/index.ts';
import { ConfigSchema } from '../../src/config/index.ts';
import { kernelAs } from '../../src/kernel/index.ts';
import { type RunningHttpServer } from '../../src/http/index.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, serveHostApi, TEST_KEYS, type TestHost } from '../support/test-host.ts';
import { type ReplyReceiver, startReplyReceiver } from '../support/reply-receiver.ts';
import { waitFor } from '../support/wait-for.ts';
import { runCli } from '../support/run-cli.ts';
import { agentToml, type Api, startApi } from '../http/api-harness.ts';
import { connectClient, firstText, MODERN_REVISION } from '../mcp/server-harness.ts';
import { a2aClient, textMessage } from '../a2a/a2a-sdk-client.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

/**
 * One authority: every role against every operation through every door, judged against one
 * table. A door that checked on its own (or forgot to) shows here as a cell that differs.
 */

/** Who holds an API key (every door but a channel), and who writes on a channel (its door only). */
type KeyRole = 'owner' | 'user on the agent' | 'user on another agent' | 'viewer';
type ChannelRole = 'a paired channel person' | 'an unpaired channel person' | "a channel's approver";
type Role = KeyRole | ChannelRole;
const ROLES: readonly KeyRole[] = ['owner', 'user on the agent', 'user on another agent', 'viewer'];
const CHANNEL_ROLES: readonly ChannelRole[] = ['a paired channel person', 'an unpaired channel person', "a channel's approver"];

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
  | 'read its schedule runs'
  | 'force a wake-up'
  | 'decide an approval'
  | 'forge a tool'
  | 'install a package'
  | 'list the MCP servers'
  | 'read the metrics';

const EVERYONE_WHO_REACHES: readonly Role[] = ['owner', 'user on the agent', 'viewer'];
/** A channel person the channel's policy admits (paired, or on its allow_users) speaks to its agent. */
const ADMITTED_CHANNEL_PEOPLE: readonly Role[] = ['a paired channel person', "a channel's approver"];

/** The table, written once: who may do what to the agent "helper-one". */
const ALLOWED: Record<Operation, readonly Role[]> = {
  'see the agent': EVERYONE_WHO_REACHES,
  'read the agent': EVERYONE_WHO_REACHES,
  'send a message': ['owner', 'user on the agent', ...ADMITTED_CHANNEL_PEOPLE],
  'read its session': EVERYONE_WHO_REACHES,
  'reset its session': ['owner'],
  'cancel its turn': ['owner', 'user on the agent'],
  'spawn an agent': ['owner'],
  'suspend an agent': ['owner'],
  'kill an agent': ['owner'],
  'read its audit log': EVERYONE_WHO_REACHES,
  'read its usage': EVERYONE_WHO_REACHES,
  'read its schedule runs': EVERYONE_WHO_REACHES,
  'force a wake-up': ['owner', 'user on the agent'],
  'decide an approval': ['owner', "a channel's approver"],
  'forge a tool': ['owner'],
  'install a package': ['owner'],
  'list the MCP servers': ['owner', 'viewer'],
  'read the metrics': ['owner'],
};

const KEYS: Record<KeyRole, string> = {
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
type Door = Partial<Record<Operation, (role: KeyRole) => Promise<Outcome>>>;

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;
let spawned = 0;

beforeAll(async () => {
  dir = await makeTempDir('loom-one-authority-');
  api = await startApi(dir.path, { config: CONFIG, env: ENV });
  const response = await owner('/api/agents', {
    method: 'POST',
    headers: { 'content-type': 'application/toml' },
    body: agentToml('helper-one', model.url, 'description = "the agent every role is tried on"'),
  });
  expect(response.status).toBe(201);
});
afterAll(async () => {
  await api.close();
  await dir.remove();
});
beforeEach(() => {
  model.reset();
});

const as = (role: KeyRole, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${KEYS[role]}` },
});
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
    return judged(
      await api.request(
        '/api/agents',
        as(role, { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml(`helper-spawned-${spawned}`, model.url) }),
      ),
      201,
    );
  },
  'suspend an agent': async (role) => judged(await api.request(`/api/agents/${await freshAgent()}/suspend`, as(role, { method: 'POST' })), 200),
  'kill an agent': async (role) => judged(await api.request(`/api/agents/${await freshAgent()}`, as(role, { method: 'DELETE' })), 200),
  'read its audit log': async (role) => judged(await api.request('/api/audit?agent=helper-one', as(role)), 200),
  'read its usage': async (role) => judged(await api.request('/api/usage?agent=helper-one', as(role)), 200),
  'read its schedule runs': async (role) => judged(await api.request('/api/agents/helper-one/runs', as(role)), 200),
  // helper-one is reactive: one who may force a wake-up is told it has none to force (409); one who may not is refused first.
  'force a wake-up': async (role) => judged(await api.request('/api/agents/helper-one/runs', as(role, { method: 'POST' })), 409),
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
const mcpClients = new Map<KeyRole, Client>();
async function mcpAs(role: KeyRole): Promise<Client> {
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
const stdioClients = new Map<KeyRole, Client>();
const ENTRY = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'loom.js');
async function stdioAs(role: KeyRole): Promise<Client> {
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
function mcpDoor(connect: (role: KeyRole) => Promise<Client>): Door {
  return {
    'see the agent': async (role) =>
      (await (await connect(role)).listTools()).tools.some((tool) => tool.name === 'loom_agent_helper_one') ? 'allowed' : 'denied',
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
async function a2aSend(role: KeyRole, transport: 'JSONRPC' | 'HTTP+JSON'): Promise<Outcome> {
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
async function cliAs(role: KeyRole, args: readonly string[]): Promise<Outcome> {
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
  'read its schedule runs': (role) => cliAs(role, ['agent', 'runs', 'helper-one']),
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
    'see the agent': async () =>
      (JSON.parse((await loom(['agent', 'list', '--json'])).stdout) as { name: string }[]).some((agent) => agent.name === 'helper-one'),
    'read the agent': async () => (await loom(['agent', 'show', 'helper-one'])).code === 0,
    'send a message': async () => {
      model.script([{ text: 'hello back' }]);
      return (await loom(['send', 'helper-one', 'hello'])).stdout.includes('hello back');
    },
    'read its usage': async () => (await loom(['usage', '--agent', 'helper-one'])).code === 0,
    'read its schedule runs': async () => (await loom(['agent', 'runs', 'helper-one'])).code === 0,
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
    for (const [name, pattern] of [
      ['asker-granted', 'helper-*'],
      ['asker-elsewhere', 'other-*'],
    ] as const) {
      const body = agentToml(name, model.url, `[capabilities]\ntools = ["agent_message"]\nagent_message = ["${pattern}"]`);
      expect((await owner('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body })).status).toBe(201);
    }
  });
  for (const [who, asker] of Object.entries(askers)) {
    const expected: Outcome = asker === 'asker-granted' ? 'allowed' : 'denied';
    it(`${who}: send a message is ${expected}`, async () => {
      model.script([
        { toolCalls: [{ name: 'agent_message', input: { target_agent_name: 'helper-one', message: 'hello' } }] },
        { text: 'hello back' },
        { text: 'done' },
      ]);
      const response = await owner(`/api/agents/${asker}/messages`, json({ message: 'ask helper-one' }));
      expect(response.status).toBe(200);
      const result = lastToolResult();
      const outcome: Outcome = result.includes('hello back') ? 'allowed' : result.includes('agent_message') ? 'denied' : `unexpected: ${result}`;
      expect(outcome).toBe(expected);
    });
  }
});

/**
 * A channel (a webhook, over real HTTP): its people have no key; the channel's policy admits them
 * (paired, or on allow_users) and says who they are, and the kernel judges them by the same table.
 */
describe('through a channel (webhook)', () => {
  const SECRET = 'whsec-one-authority';
  const USERS: Record<ChannelRole, string> = {
    'a paired channel person': 'u-paired',
    'an unpaired channel person': 'u-stranger',
    "a channel's approver": 'u-approver',
  };
  let host: TestHost;
  let server: RunningHttpServer;
  let receiver: ReplyReceiver;
  let sent = 0;

  /** Posts `text` from the role's person, signed, and waits until it is settled; the channel's last reply. */
  async function write(role: ChannelRole, text: string): Promise<string> {
    sent += 1;
    const body = JSON.stringify({ id: `m-${sent}`, user: { id: USERS[role] }, conversation: { id: `c-${USERS[role]}` }, text });
    const timestamp = String(Math.floor(host.clock.now() / 1000));
    const { replies } = receiver;
    const before = replies.length;
    const response = await fetch(`${server.url}/hooks/hooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [WEBHOOK_TIMESTAMP_HEADER]: timestamp, [WEBHOOK_SIGNATURE_HEADER]: signWebhook(SECRET, timestamp, body) },
      body,
    });
    expect(response.status).toBe(202);
    await host.channels.idle();
    return replies.length > before ? (replies.at(-1) ?? '') : '(no reply)';
  }

  beforeAll(async () => {
    receiver = await startReplyReceiver();
    const config = {
      channels: [
        {
          name: 'hooks',
          kind: 'webhook',
          agent: 'helper-one',
          secret_env: 'HOOK_SECRET',
          reply_url: receiver.url,
          policy: { direct: 'pairing', allow_users: ['u-approver'], approvers: ['u-approver'] },
        },
      ],
    };
    host = await openTestHost(`${dir.path}/channel`, config, { ...TEST_KEYS, HOOK_SECRET: SECRET });
    await host.kernel.spawn(
      manifest(`${agentToml('helper-one', model.url)}[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]\n`),
    );
    await host.channels.start();
    server = await serveHostApi(host, config);
    // The paired person asked for a code and the owner approved it.
    await write('a paired channel person', 'hello?');
    await host.channels.approve((await host.store.channels.pairings('hooks'))[0]?.code ?? '');
  });
  afterAll(async () => {
    await server.close();
    await host.close();
    await receiver.close();
  });

  /** Reads the channel's answer: the agent's reply or a decision is allowed; the pairing offer or a refusal is denied. */
  const outcomeOf = (reply: string, allowed: RegExp): Outcome =>
    allowed.test(reply) ? 'allowed' : /^I can't talk with you here yet|^Only the approvers/.test(reply) ? 'denied' : `unexpected: ${reply}`;

  const operations: Partial<Record<Operation, (role: ChannelRole) => Promise<Outcome>>> = {
    'send a message': async (role) => {
      model.script([{ text: 'hello back' }]);
      return outcomeOf(await write(role, 'hello'), /^hello back$/);
    },
    // A tool call of the agent waits for a person: the role answers "approve <id>" on the channel.
    'decide an approval': async (role) => {
      model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'n.txt', content: 'x' } }] }, { text: 'done' }]);
      const turn = host.kernel.send('helper-one', 'write it');
      const [request] = await waitFor('the approval request', async () => {
        const pending = await host.kernel.approvals.list('pending');
        return pending.length > 0 ? pending : undefined;
      });
      const outcome = outcomeOf(await write(role, `approve ${(request?.id ?? '').slice(0, 8)}`), /^Approved: file_write runs\.$/);
      if ((await host.kernel.approvals.list('pending')).length > 0)
        await host.kernel.approvals.decide(request?.id ?? '', { approved: false, by: 'local', reason: 'cleaning up' });
      await turn;
      return outcome;
    },
  };
  it("is judged by the kernel, not the channel: a channel's approver decides its agent's requests through kernelAs, and is refused another agent's, named", async () => {
    const channel = ConfigSchema.parse({
      channels: [
        {
          name: 'hooks',
          kind: 'webhook',
          agent: 'helper-one',
          secret_env: 'HOOK_SECRET',
          reply_url: 'http://127.0.0.1:9/r',
          policy: { approvers: ['u-approver'] },
        },
      ],
    }).channels[0];
    if (channel === undefined) throw new Error('no channel parsed');
    await host.kernel.spawn(
      manifest(`${agentToml('other-agent', model.url)}[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]\n`),
    );
    const approver = kernelAs(host.kernel, channelPrincipal(channel, 'u-approver'));
    for (const [agent, allowed] of [
      ['helper-one', true],
      ['other-agent', false],
    ] as const) {
      model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'n.txt', content: 'x' } }] }, { text: 'done' }]);
      const turn = host.kernel.send(agent, 'write it');
      const [request] = await waitFor(`the approval request of ${agent}`, async () => {
        const pending = await host.kernel.approvals.list('pending');
        return pending.length > 0 ? pending : undefined;
      });
      const decided = approver.decide(request?.id ?? '', { approved: true, reason: null });
      if (allowed) await expect(decided).resolves.toMatchObject({ status: 'approved', decidedBy: 'hooks:u-approver' });
      else {
        await expect(decided).rejects.toThrow(
          '"hooks:u-approver" may not approve tool calls of agent "other-agent": it decides only the waiting ones of the agents "helper-one"',
        );
        await host.kernel.approvals.decide(request?.id ?? '', { approved: false, by: 'local', reason: 'cleaning up' });
      }
      await turn;
    }
  });

  for (const [operation, run] of Object.entries(operations) as [Operation, (role: ChannelRole) => Promise<Outcome>][]) {
    for (const role of CHANNEL_ROLES) {
      const expected: Outcome = ALLOWED[operation].includes(role) ? 'allowed' : 'denied';
      it(`${role}: ${operation} is ${expected}`, async () => {
        expect(await run(role)).toBe(expected);
      });
    }
  }
});

const DOORS: Record<string, Door> = {
  'the HTTP API': HTTP,
  '/v1 (OpenAI-compatible)': OPENAI,
  'MCP over HTTP': MCP,
  'MCP over stdio (loom mcp against the daemon)': MCP_STDIO,
  'A2A JSON-RPC': A2A,
  'A2A HTTP+JSON': A2A_REST,
  'the CLI against a daemon': CLI,
};

for (const [doorName, door] of Object.entries(DOORS)) {
  describe(`through ${doorName}`, () => {
    for (const [operation, run] of Object.entries(door) as [Operation, (role: KeyRole) => Promise<Outcome>][]) {
      for (const role of ROLES) {
        const expected: Outcome = ALLOWED[operation].includes(role) ? 'allowed' : 'denied';
        it(`${role}: ${operation} is ${expected}`, async () => {
          expect(await run(role)).toBe(expected);
        });
      }
    }
  });
}
