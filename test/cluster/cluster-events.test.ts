import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Role, type StreamResponse, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, type Client as A2aClient } from '@a2a-js/sdk/client';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVE, DOUBLE_IT } from '../support/forge-requests.ts';
import { agentToml, readSse, startHangingModelServer } from '../http/api-harness.ts';
import { connectClient } from '../mcp/server-harness.ts';
import type { ScriptedModelServer } from '../support/scripted-model-server.ts';
import type { TestPostgres } from '../support/postgres-server.ts';
import { activityJson, bindingJson, writePackage } from '../packages/support.ts';
import { type DaemonCluster, type DaemonNode, type DaemonNodes, startDaemonCluster, waitFor } from './daemons.ts';

// Two daemons in separate processes on one PostgreSQL database: what one node does, the other
// hears (LISTEN/NOTIFY) and holds.

let postgres: TestPostgres;
let model: ScriptedModelServer;
let dir: DaemonCluster['dir'];
let nodes: DaemonNodes;
let first: DaemonNode;
let second: DaemonNode;
let databaseUrl: string;

let cluster: DaemonCluster | undefined;

beforeAll(async () => {
  cluster = await startDaemonCluster('loom-cluster-events-', [{ text: 'Hello from the model.' }]);
  ({ dir, model, postgres, nodes } = cluster);
  databaseUrl = (await postgres.createDatabase()).url;
  [first, second] = await Promise.all([nodes.start('events-a', databaseUrl), nodes.start('events-b', databaseUrl)]);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

const manifest = (name: string): string => agentToml(name, model.url, 'description = "says hello"');

async function api(node: DaemonNode, path: string, init: { method?: string; toml?: string; json?: unknown } = {}): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = {};
  let body: string | undefined;
  if (init.toml !== undefined) {
    headers['content-type'] = 'application/toml';
    body = init.toml;
  } else if (init.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(init.json);
  }
  const response = await fetch(`${node.url}/api${path}`, {
    method: init.method ?? (body === undefined ? 'GET' : 'POST'),
    headers,
    ...(body === undefined ? {} : { body }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

const agentNames = async (node: DaemonNode): Promise<string[]> => ((await api(node, '/agents')).body as { name: string }[]).map((agent) => agent.name).sort();
const stateOf = async (node: DaemonNode, name: string): Promise<string | undefined> =>
  ((await api(node, '/agents')).body as { name: string; state: string }[]).find((agent) => agent.name === name)?.state;

/** Follows `GET /api/events` on a node: the events it streams, by type and agent name. */
async function followEvents(node: DaemonNode): Promise<{ events: { type: string; name: string }[]; close: () => void }> {
  const controller = new AbortController();
  const response = await fetch(`${node.url}/api/events`, { signal: controller.signal });
  expect(response.status).toBe(200);
  const events: { type: string; name: string }[] = [];
  void (async () => {
    try {
      for await (const event of readSse(response))
        if (event.comment === undefined && event.data !== '') events.push(JSON.parse(event.data) as { type: string; name: string });
    } catch {
      // Closed by the test.
    }
  })();
  return { events, close: () => controller.abort() };
}

describe('events between nodes', () => {
  it('holds an agent spawned on one node on the other, streams its turns there, and runs its next turn there on the same session', async () => {
    const watch = await followEvents(second);
    try {
      expect((await api(first, '/agents', { toml: manifest('greeter') })).status).toBe(201);
      // The other node holds it within moments, without a restart.
      await waitFor('node B to hold the agent spawned on node A', async () => ((await agentNames(second)).includes('greeter') ? true : undefined));

      const reply = await api(first, '/agents/greeter/messages', { json: { message: 'Hi from node A' } });
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ text: 'Hello from the model.' });
      // Node B's event stream shows node A's spawn and turn.
      await waitFor("node A's turn on node B's event stream", () =>
        Promise.resolve(watch.events.some((event) => event.type === 'turn-finish' && event.name === 'greeter') ? true : undefined),
      );
      expect(watch.events.filter((event) => event.name === 'greeter').map((event) => event.type)).toEqual(['agent-spawn', 'turn-finish']);

      // The session read from node B holds node A's turn, and node B runs the next one on it.
      const texts = async (node: DaemonNode): Promise<string[]> =>
        ((await api(node, '/agents/greeter/session')).body as { messages: { role: string; content: unknown }[] }).messages.map(
          (message) => `${message.role}: ${JSON.stringify(message.content)}`,
        );
      expect(await texts(second)).toEqual(await texts(first));
      expect((await texts(second)).join('\n')).toContain('Hi from node A');
      expect((await api(second, '/agents/greeter/messages', { json: { message: 'Hi from node B' } })).status).toBe(200);
      const both = await texts(first);
      expect(both.filter((line) => line.startsWith('user:'))).toEqual(['user: "Hi from node A"', 'user: "Hi from node B"']);
      expect(both).toHaveLength(4);
    } finally {
      watch.close();
    }
  }, 60_000);

  it('suspends, resumes, updates and kills an agent on every node when one node does', async () => {
    expect((await api(second, '/agents', { toml: manifest('worker') })).status).toBe(201);
    await waitFor('node A to hold the agent', async () => ((await agentNames(first)).includes('worker') ? true : undefined));

    expect((await api(second, '/agents/worker/suspend', { method: 'POST' })).status).toBe(200);
    await waitFor('node A to show it suspended', async () => ((await stateOf(first, 'worker')) === 'suspended' ? true : undefined));
    // Node A refuses it a message, as node B does.
    const refused = await api(first, '/agents/worker/messages', { json: { message: 'are you there?' } });
    expect(refused.status).toBe(409);
    expect(JSON.stringify(refused.body)).toContain('suspended');

    expect((await api(first, '/agents/worker/resume', { method: 'POST' })).status).toBe(200);
    await waitFor('node B to show it running', async () => ((await stateOf(second, 'worker')) === 'running' ? true : undefined));

    // An update on node A is the manifest node B runs.
    expect((await api(first, '/agents/worker', { method: 'PUT', toml: manifest('worker').replace('says hello', 'works hard') })).status).toBe(200);
    await waitFor('node B to hold the new manifest', async () =>
      ((await api(second, '/agents/worker')).body as { description: string }).description === 'works hard' ? true : undefined,
    );

    expect((await api(first, '/agents/worker', { method: 'DELETE' })).status).toBe(200);
    await waitFor('node B to let it go', async () => (!(await agentNames(second)).includes('worker') ? true : undefined));
    expect((await api(second, '/agents/worker/messages', { json: { message: 'still there?' } })).status).toBe(404);
    // The name is free on every node again.
    expect((await api(second, '/agents', { toml: manifest('worker') })).status).toBe(201);
    await waitFor('node A to hold the new one', async () => ((await agentNames(first)).includes('worker') ? true : undefined));
  }, 60_000);

  it('runs on node B a package installed on node A, without a restart', async () => {
    const folder = await writePackage(dir.path, 'digest', {
      workflows: { summarise: bindingJson({ type: 'manual' }, [activityJson('read', { on_error: { retry: 0, fallback: 'Skip' } })]) },
    });
    expect((await api(first, '/packages', { json: { source: folder } })).status).toBe(201);
    await waitFor('node B to hold the package agent', async () => ((await agentNames(second)).includes('digest') ? true : undefined));
    const run = await waitFor('a run on node B', async () => {
      const started = await api(second, '/packages/digest/bindings/summarise/run', { json: {} });
      return started.status === 201 || started.status === 200 ? started : undefined;
    });
    expect(run.body).toMatchObject({ status: 'completed' });
  }, 60_000);

  it('offers on node B a tool forged on node A (its source stored), and calls it there', async () => {
    const smith = `${manifest('smith')}\n[capabilities]\ntools = ["forge_tool"]\n\n[emergent]\npersist_sandbox_source = true\njudge_model = "claude-haiku"\n`;
    expect((await api(first, '/agents', { toml: smith })).status).toBe(201);
    await waitFor('node B to hold the agent', async () => ((await agentNames(second)).includes('smith') ? true : undefined));
    model.reset();
    model.script([APPROVE]);
    const watch = await followEvents(second);
    try {
      const forged = await api(first, '/tools/forged', { json: { agent: 'smith', request: DOUBLE_IT } });
      expect(forged.body).toMatchObject({ name: 'double_it' });
      // Node B has taken the tool in once its event stream shows the forge.
      await waitFor('the forge on node B', () => Promise.resolve(watch.events.some((event) => event.type === 'tool-forge') ? true : undefined));
    } finally {
      watch.close();
    }

    model.script([{ toolCalls: [{ name: 'double_it', input: { n: 21 } }] }, { text: 'It is 42.' }]);
    const reply = await api(second, '/agents/smith/messages', { json: { message: 'double 21' } });
    expect(reply.body).toMatchObject({ text: 'It is 42.' });
    const session = JSON.stringify((await api(second, '/agents/smith/session')).body);
    expect(session).toContain('{\\"n\\":42}');
  }, 60_000);

  it('tells an MCP client of node B when an agent is spawned and killed on node A (tools/list_changed)', async () => {
    const lists: string[][] = [];
    const client: Client = await connectClient(second.url, 'modern', {
      clientOptions: { listChanged: { tools: { debounceMs: 0, onChanged: (_error, tools) => lists.push((tools ?? []).map((tool) => tool.name)) } } },
    });
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).not.toContain('loom_agent_announcer');
      expect((await api(first, '/agents', { toml: manifest('announcer') })).status).toBe(201);
      await waitFor('the list with the new agent', () => Promise.resolve(lists.some((names) => names.includes('loom_agent_announcer')) ? true : undefined));
      expect((await api(first, '/agents/announcer', { method: 'DELETE' })).status).toBe(200);
      await waitFor('the list without it', () => Promise.resolve(lists.at(-1)?.includes('loom_agent_announcer') === false ? true : undefined));
    } finally {
      await client.close();
    }
  }, 60_000);

  it("approves on node B a tool call that node A's turn waits for: node A runs it and finishes the turn; a node starting meanwhile leaves it pending", async () => {
    const guarded = `${manifest('keeper')}\n[capabilities]\ntools = ["file_write"]\n\n[autonomous]\napproval_required_for = ["file_write"]\n`;
    expect((await api(first, '/agents', { toml: guarded })).status).toBe(201);
    model.reset();
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'notes.txt', content: 'approved on node B' } }] }, { text: 'Written.' }]);
    const turn = api(first, '/agents/keeper/messages', { json: { message: 'Write notes.txt' } });

    type Pending = { id: string; agent: string; tool: string; status: string }[];
    const pending = await waitFor('the request on node B', async () => {
      const listed = (await api(second, '/approvals')).body as Pending;
      return listed.find((request) => request.agent === 'keeper');
    });
    expect(pending).toMatchObject({ tool: 'file_write', status: 'pending' });
    // A node starting closes the requests that no turn waits for any more, not node A's.
    const third = await nodes.start('events-c', databaseUrl);
    try {
      expect(((await api(third, '/approvals')).body as Pending).find((request) => request.id === pending.id)).toMatchObject({ status: 'pending' });
    } finally {
      await nodes.stop(third);
    }

    const approved = await api(second, `/approvals/${pending.id}/approve`, { json: { reason: 'fine by me' } });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ id: pending.id, status: 'approved' });
    const reply = await turn;
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ text: 'Written.' });
    expect(await readFile(join(first.home, 'workspaces', 'keeper', 'notes.txt'), 'utf8')).toBe('approved on node B');
  }, 60_000);

  it('follows over A2A on node B a task node A runs: node B leaves it running, answers its state now, then its updates to completion', async () => {
    const guarded = `${manifest('scribe')}\n[capabilities]\ntools = ["file_write"]\n\n[autonomous]\napproval_required_for = ["file_write"]\n`;
    expect((await api(first, '/agents', { toml: guarded })).status).toBe(201);
    await waitFor('node B to hold the agent', async () => ((await agentNames(second)).includes('scribe') ? true : undefined));
    model.reset();
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'task.txt', content: 'from the task' } }] }, { text: 'Task done.' }]);
    const clientOf = (node: DaemonNode): Promise<A2aClient> =>
      new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory()], preferredTransports: ['JSONRPC'] }),
      ).createFromUrl(`${node.url}/a2a/scribe/.well-known/agent-card.json`, '');
    const stateOf = (event: StreamResponse | undefined): TaskState | undefined =>
      event?.payload?.$case === 'statusUpdate'
        ? event.payload.value.status?.state
        : event?.payload?.$case === 'task'
          ? event.payload.value.status?.state
          : undefined;

    // On node A the task runs until its tool call waits for a person (input-required).
    const onFirst = await clientOf(first);
    const sent: StreamResponse[] = [];
    const message = {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text' as const, value: 'write task.txt' }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
    for await (const event of onFirst.sendMessageStream({ tenant: '', message, configuration: undefined, metadata: undefined })) sent.push(event);
    expect(stateOf(sent.at(-1))).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const id = sent[0]?.payload?.$case === 'task' ? sent[0].payload.value.id : '';

    // Node B (its first A2A request) leaves node A's task as it is, and follows it.
    const subscription = (await clientOf(second)).resubscribeTask({ tenant: '', id });
    const now = await subscription.next();
    expect(stateOf(now.value as StreamResponse)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const pending = await waitFor('the request', async () =>
      ((await api(second, '/approvals')).body as { id: string; agent: string }[]).find((request) => request.agent === 'scribe'),
    );
    expect((await api(second, `/approvals/${pending.id}/approve`, { json: {} })).status).toBe(200);
    const updates: StreamResponse[] = [];
    for await (const event of subscription) updates.push(event);
    expect(stateOf(updates.at(-1))).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(JSON.stringify(updates.at(-1))).toContain('Task done.');
  }, 60_000);
});

describe('package runs across nodes', () => {
  it('skips a fire of a binding whose run goes on another node, and resumes on the leader a run whose node died', async () => {
    const hanging = await startHangingModelServer();
    try {
      // Nodes of their own, whose model holds the first call until the test ends and answers the next.
      const url = (await postgres.createDatabase()).url;
      const leader = await nodes.start('runs-a', url, { modelUrl: hanging.url });
      const other = await nodes.start('runs-b', url, { modelUrl: hanging.url });
      const folder = await writePackage(dir.path, 'slowpoke', {
        workflows: { chore: bindingJson({ type: 'manual' }, [activityJson('read', { on_error: { retry: 0, fallback: 'Skip' } })]) },
      });
      expect((await api(leader, '/packages', { json: { source: folder } })).status).toBe(201);
      await waitFor('node B to hold the package', async () => ((await agentNames(other)).includes('slowpoke') ? true : undefined));

      // A run on node B, waiting for its model.
      void fetch(`${other.url}/api/packages/slowpoke/bindings/chore/run`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      }).catch(() => undefined);
      await hanging.received;
      type Run = { id: string; status: string; error: string | null; trigger: string };
      const runs = async (): Promise<Run[]> => (await api(leader, '/packages/slowpoke/runs')).body as Run[];
      const [going] = await runs();
      expect(going).toMatchObject({ status: 'running', trigger: 'manual' });

      // Node A does not run the binding beside it.
      const refused = await api(leader, '/packages/slowpoke/bindings/chore/run', { json: {} });
      expect(refused.status).toBe(409);
      expect(JSON.stringify(refused.body)).toContain('BINDING_BUSY');
      expect((await runs()).find((run) => run.status === 'skipped')?.error).toBe(
        `not started: the previous run of "chore" is still going on another node (run "${going?.id}")`,
      );

      // Node B dies mid-run: once it is gone (10 s without a heartbeat), the leader resumes the run.
      other.child.kill('SIGKILL');
      await other.exited;
      const resumed = await waitFor(
        'the leader to resume the run',
        async () => (await runs()).find((run) => run.id === going?.id && run.status === 'completed'),
        { ms: 40_000 },
      );
      expect(resumed).toMatchObject({ trigger: 'manual', error: null });
      expect((await runs()).filter((run) => run.status === 'running')).toEqual([]);
    } finally {
      await hanging.close();
    }
  }, 90_000);
});
