import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';
import { type AgentCard, type Message, Role, type StreamResponse, TaskState } from '@a2a-js/sdk';
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml, type HangingModelServer, startHangingModelServer } from '../http/api-harness.ts';
import { type A2aHarness, startA2a } from './a2a-harness.ts';
import { waitFor } from '../support/wait-for.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: A2aHarness;
let hanging: HangingModelServer | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-');
  api = await startA2a(dir.path);
});
afterEach(async () => {
  await api.close();
  await hanging?.close();
  hanging = undefined;
  await dir.remove();
});

function userMessage(text: string): Message {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}
const send = (text: string) => ({ tenant: '', message: userMessage(text), configuration: undefined, metadata: undefined });

async function clientFor(agent: string, transport: 'JSONRPC' | 'HTTP+JSON', version: '1.0' | '0.3' = '1.0'): Promise<Client> {
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } }), new RestTransportFactory({ legacyCompat: { enabled: true } })],
      preferredTransports: [transport],
    }),
  );
  if (version === '1.0') return factory.createFromUrl(`${api.url}/a2a/${agent}/.well-known/agent-card.json`, '');
  // A 0.3 peer: the card as served without A2A-Version (0.3 shape), read by the SDK's 0.3 card parser.
  const card = parseLegacyAgentCard(await (await api.request(`/a2a/${agent}/.well-known/agent-card.json`)).json());
  expect(card.supportedInterfaces.find((entry) => entry.protocolBinding === transport)?.protocolVersion).toMatch(/^0\.3/);
  return factory.createFromAgentCard(card);
}

const writeCall = { toolCalls: [{ name: 'file_write', input: { path: 'approved.txt', content: 'ok' } }] };
const carefulToml = (): string =>
  agentToml('careful', model.url, '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]');

/** Streams a message to the end of its stream (the SDK ends it at a terminal or interrupted state). */
async function streamAll(client: Client, text: string): Promise<StreamResponse[]> {
  const events: StreamResponse[] = [];
  for await (const event of client.sendMessageStream(send(text))) events.push(event);
  return events;
}
const stateOf = (event: StreamResponse | undefined): TaskState | undefined =>
  event?.payload?.$case === 'statusUpdate'
    ? event.payload.value.status?.state
    : event?.payload?.$case === 'task'
      ? event.payload.value.status?.state
      : undefined;
const taskIdOf = (events: StreamResponse[]): string => {
  const first = events[0]?.payload;
  return first?.$case === 'task' ? first.value.id : '';
};

/** The one pending approval of the kernel, once it exists (bounded wait). */
async function pendingApproval(): Promise<{ id: string; tool: string }> {
  return waitFor('a pending approval', async () => (await api.host.kernel.approvals.list())[0]);
}

function replyOf(result: unknown): string {
  const task = result as { artifacts: { parts: { content?: { $case: string; value: string } }[] }[] };
  return task.artifacts.flatMap((artifact) => artifact.parts.map((part) => part.content?.value ?? '')).join('');
}

describe('agent cards', () => {
  it("serves a card per agent (1.0 with A2A-Version, spec/05 fields beside 1.0's without), the default card, and /a2a/agents", async () => {
    await api.host.kernel.spawn(manifest(agentToml('helper', model.url, 'description = "Helps"\n[capabilities]\ntools = ["file_read"]')));
    const v1 = (await (await api.request('/a2a/helper/.well-known/agent-card.json', { headers: { 'A2A-Version': '1.0' } })).json()) as AgentCard;
    expect(v1.name).toBe('helper');
    expect(v1.supportedInterfaces.map((entry) => `${entry.protocolBinding} ${entry.protocolVersion}`)).toEqual([
      'JSONRPC 1.0',
      'HTTP+JSON 1.0',
      'JSONRPC 0.3',
      'HTTP+JSON 0.3',
    ]);
    expect(v1.skills.map((skill) => skill.id)).toEqual(['file_read']);
    const legacy = (await (await api.request('/.well-known/agent.json')).json()) as Record<string, unknown>;
    expect(legacy).toMatchObject({
      name: 'helper',
      description: 'Helps',
      url: `${api.url}/a2a/helper`,
      capabilities: { streaming: true, pushNotifications: true, stateTransitionHistory: true },
      defaultInputModes: ['text/plain', 'application/json'],
    });
    expect(legacy['additionalInterfaces']).toEqual([
      { url: `${api.url}/a2a/helper`, transport: 'JSONRPC' },
      { url: `${api.url}/a2a/helper`, transport: 'HTTP+JSON' },
    ]);
    expect(legacy['skills']).toEqual([
      { id: 'file_read', name: 'file read', description: 'Can use the file_read tool', tags: ['tool'], examples: [], securityRequirements: [] },
    ]);
    const list = (await (await api.request('/a2a/agents')).json()) as { agents: { name: string }[]; total: number };
    expect(list).toMatchObject({ total: 1, agents: [{ name: 'helper' }] });
    expect((await api.request('/.well-known/agent-card.json', { headers: { 'A2A-Version': '1.0' } })).status).toBe(200);
  });

  it('serves a placeholder card when no agent runs', async () => {
    const card = (await (await api.request('/.well-known/agent.json')).json()) as { name: string; skills: unknown[] };
    expect(card).toMatchObject({ name: 'loom', skills: [] });
    expect(await (await api.request('/a2a/agents')).json()).toEqual({ agents: [], total: 0 });
  });
});

describe.each([
  ['JSONRPC', '1.0'],
  ['HTTP+JSON', '1.0'],
  ['JSONRPC', '0.3'],
  ['HTTP+JSON', '0.3'],
] as const)('the @a2a-js/sdk client over %s (A2A %s)', (transport, version) => {
  it('sends, gets and lists a task', async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'Hello from Loom.' }]);
    const client = await clientFor('echo', transport, version);
    const result = await client.sendMessage(send('Hi'));
    expect('status' in result && result.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(replyOf(result)).toBe('Hello from Loom.');
    const id = (result as { id: string }).id;
    const fetched = await client.getTask({ tenant: '', id, historyLength: undefined });
    expect(fetched.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    if (version === '1.0') {
      const listed = await client.listTasks({
        tenant: '',
        contextId: '',
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageToken: '',
        statusTimestampAfter: undefined,
      });
      expect(listed.tasks.map((task) => task.id)).toContain(id);
    }
  });

  it('streams status and artifact updates to the end', async () => {
    await api.host.kernel.spawn(manifest(agentToml('streamer', model.url)));
    model.script([{ text: 'Streamed reply.' }]);
    const client = await clientFor('streamer', transport, version);
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream(send('Hi'))) events.push(event);
    const cases = events.map((event) => event.payload?.$case);
    expect(cases[0]).toBe('task');
    expect(cases).toContain('artifactUpdate');
    const last = events.at(-1)?.payload;
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('cancels a long-running task', async () => {
    hanging = await startHangingModelServer();
    await api.host.kernel.spawn(manifest(agentToml('slow', hanging.url)));
    const client = await clientFor('slow', transport, version);
    const stream = client.sendMessageStream(send('Tell me a long story'));
    const first = (await stream.next()).value as StreamResponse;
    expect(first.payload?.$case).toBe('task');
    const id = first.payload?.$case === 'task' ? first.payload.value.id : '';
    // The task is announced before its model call starts: cancel once the call is under way.
    await hanging.received;
    const canceled = await client.cancelTask({ tenant: '', id, metadata: {} });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await hanging.closed;
    await stream.return(undefined);
    expect((await client.getTask({ tenant: '', id, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });
  it('cancels, as its creator, a task whose streaming client went away: canceled, its turn cancelled, naming who', async () => {
    await api.host.kernel.spawn(manifest(agentToml('slow', model.url)));
    let answer: () => void = () => undefined;
    model.script([{ text: 'Once upon a time ', gate: new Promise<void>((resolve) => (answer = resolve)), stall: new Promise<never>(() => undefined) }]);
    const client = await clientFor('slow', transport, version);
    const stream = client.sendMessageStream(send('Tell me a long story'));
    const first = (await stream.next()).value as StreamResponse;
    const id = first.payload?.$case === 'task' ? first.payload.value.id : '';
    // The client goes away, and the server hears it: the task's events are saved all the same.
    await stream.return(undefined);
    await waitFor('the server to hear the client leave', () => api.clientsLeft() === 1);
    answer();
    await waitFor('the text said after the client left', async () => replyOf(await client.getTask({ tenant: '', id, historyLength: undefined })) !== '');
    // Nobody reads the task's events any more: its cancel is saved all the same.
    const canceled = await client.cancelTask({ tenant: '', id, metadata: {} });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await client.getTask({ tenant: '', id, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const [ended] = await waitFor("the turn's end in the audit log", async () => {
      const records = await api.host.kernel.audit({ agent: 'slow', types: ['turn-cancel', 'turn-finish', 'turn-fail'] });
      return records.length > 0 ? records : undefined;
    });
    expect(ended).toMatchObject({ type: 'turn-cancel', data: { message: expect.stringContaining('cancelled by the owner') as string } });
  });

  it("answers another agent's task as unknown (TaskNotFound) to every request through this agent's endpoint, running no turn of it", async () => {
    await api.host.kernel.spawn(manifest(agentToml('slow', model.url)));
    await api.host.kernel.spawn(manifest(agentToml('other', model.url)));
    model.script([{ text: 'never said', gate: new Promise<never>(() => undefined) }]);
    const own = await clientFor('slow', transport, version);
    const returnImmediately = { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true };
    const task = (await own.sendMessage({ ...send('Tell me a long story'), configuration: returnImmediately })) as { id: string; contextId: string };
    await waitFor('the model call', () => model.requests.length === 1);
    const other = await clientFor('other', transport, version);
    const again = userMessage('And then?');
    const toTask = { ...send(''), message: { ...again, taskId: task.id, contextId: task.contextId } };
    const requests: Record<string, () => Promise<unknown>> = {
      get: () => other.getTask({ tenant: '', id: task.id, historyLength: undefined }),
      send: () => other.sendMessage(toTask),
      stream: async () => (await other.sendMessageStream(toTask).next()).value,
      cancel: () => other.cancelTask({ tenant: '', id: task.id, metadata: {} }),
      subscribe: async () => (await other.resubscribeTask({ tenant: '', id: task.id }).next()).value,
      push: () =>
        other.createTaskPushNotificationConfig({
          tenant: '',
          id: '',
          taskId: task.id,
          url: 'https://hooks.example.com/a2a',
          token: 't',
          authentication: undefined,
        }),
    };
    for (const [request, ask] of Object.entries(requests)) {
      const error = await ask().then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect({ request, error: String(error) }).toEqual({ request, error: expect.stringMatching(/task not found/i) as string });
    }
    if (version === '1.0') {
      const listed = await other.listTasks({
        tenant: '',
        contextId: '',
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageToken: '',
        statusTimestampAfter: undefined,
      });
      expect(listed.tasks.map((each) => each.id)).not.toContain(task.id);
    }
    // Nothing ran for it, and its own agent's endpoint reads it running still.
    expect(model.requests).toHaveLength(1);
    expect(api.host.kernel.turnCounts()).toMatchObject({ running: 1, queued: 0 });
    expect(await api.host.kernel.audit({ agent: 'slow', types: ['turn-cancel'] })).toEqual([]);
    expect((await own.getTask({ tenant: '', id: task.id, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_WORKING);
  });

  it('cancels a task whose agent is suspended during its turn, and fails one sent to it suspended, each saying why', async () => {
    hanging = await startHangingModelServer();
    await api.host.kernel.spawn(manifest(agentToml('pausing', hanging.url)));
    const client = await clientFor('pausing', transport, version);
    const stream = client.sendMessageStream(send('Tell me a long story'));
    const first = (await stream.next()).value as StreamResponse;
    const id = first.payload?.$case === 'task' ? first.payload.value.id : '';
    await hanging.received;
    await api.host.kernel.suspend('pausing');
    const stopped = await waitFor('the task to end', async () => {
      const task = await client.getTask({ tenant: '', id, historyLength: undefined });
      return task.status?.state === TaskState.TASK_STATE_WORKING ? undefined : task;
    });
    expect(stopped.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(JSON.stringify(stopped.status?.message)).toContain('was suspended during the turn');
    await stream.return(undefined);
    // Refused at admission, not stopped by Loom: failed, saying the agent is suspended.
    const refused = await client.sendMessage(send('Hi again'));
    expect('status' in refused && refused.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(JSON.stringify('status' in refused ? refused.status?.message : refused)).toContain('is suspended');
  });

  it('puts a task whose tool call waits for a human approval in input-required, and completes it once approved', async () => {
    await api.host.kernel.spawn(manifest(carefulToml()));
    model.script([writeCall, { text: 'written' }]);
    const client = await clientFor('careful', transport, version);
    const events = await streamAll(client, 'write approved.txt');
    expect(stateOf(events.at(-1))).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const id = taskIdOf(events);
    expect((await client.getTask({ tenant: '', id, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const approval = await pendingApproval();
    expect(approval.tool).toBe('file_write');
    await api.host.kernel.approvals.decide(approval.id, { approved: true, by: 'owner', reason: null });
    const done = await waitFor('the task to complete', async () => {
      const task = await client.getTask({ tenant: '', id, historyLength: undefined });
      return task.status?.state === TaskState.TASK_STATE_COMPLETED ? task : undefined;
    });
    expect(replyOf(done)).toBe('written');
  });

  it('SubscribeToTask on a running task (waiting for approval) receives its updates to completion', async () => {
    await api.host.kernel.spawn(manifest(carefulToml()));
    model.script([writeCall, { text: 'written after approval' }]);
    const client = await clientFor('careful', transport, version);
    const id = taskIdOf(await streamAll(client, 'write approved.txt'));
    const subscription = client.resubscribeTask({ tenant: '', id });
    const first = await subscription.next();
    expect(first.done).toBe(false);
    expect(stateOf(first.value as StreamResponse)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    await api.host.kernel.approvals.decide((await pendingApproval()).id, { approved: true, by: 'owner', reason: null });
    const updates: StreamResponse[] = [];
    for await (const event of subscription) updates.push(event);
    expect(updates.map((event) => event.payload?.$case)).toContain('artifactUpdate');
    expect(stateOf(updates.at(-1))).toBe(TaskState.TASK_STATE_COMPLETED);
    expect((await client.getTask({ tenant: '', id, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});
