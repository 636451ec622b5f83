import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { type Message, Role, type SendMessageRequest, type StreamResponse, Task, TaskState } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { settleWithClock } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml, type HangingModelServer, OWNER_AND_HELPER_KEYS, startApi, startHangingModelServer, type Api } from '../http/api-harness.ts';
import { ConfigSchema } from '../../src/config/index.ts';
import { createA2aServer, InMemoryA2aPushConfigRepository } from '../../src/a2a/index.ts';
import { PushNotifier } from '../../src/a2a/push-notifier.ts';
import { createFakeClock } from '../../src/clock/fake-clock.ts';
import type { EventRecord } from '../../src/contracts/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { type A2aHarness, startA2a } from './a2a-harness.ts';

/** A webhook receiver on 127.0.0.1: records every POST, answers with the statuses queued (200 after them). */
interface Receiver {
  url: string;
  received: { headers: IncomingHttpHeaders; body: unknown }[];
  answer(...statuses: number[]): void;
  /** Resolves once `predicate` holds for what was received (checked on every POST). */
  until(predicate: (received: Receiver['received']) => boolean): Promise<void>;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const received: Receiver['received'] = [];
  const statuses: number[] = [];
  const waiters: { predicate: (received: Receiver['received']) => boolean; resolve: () => void }[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown });
      response.writeHead(statuses.shift() ?? 200).end();
      for (const waiter of [...waiters]) {
        if (waiter.predicate(received)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    answer: (...next) => statuses.push(...next),
    until: (predicate) => (predicate(received) ? Promise.resolve() : new Promise((resolve) => waiters.push({ predicate, resolve }))),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let receiver: Receiver;
let api: A2aHarness | undefined;
let daemon: Api | undefined;

/** Loom with webhooks on loopback allowed (the receiver runs on 127.0.0.1). */
const LOOPBACK_WEBHOOKS = { a2a: { push_allow_private_network: true } };

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-push-');
  receiver = await startReceiver();
});
afterEach(async () => {
  await api?.close();
  await daemon?.close();
  api = undefined;
  daemon = undefined;
  await receiver.close();
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
const pushConfig = (url: string, token: string, taskId = '') => ({ tenant: '', id: '', taskId, url, token, authentication: undefined });
/** A message, with a push config for its task when `push` is given (answered at once with `returnImmediately`). */
function send(text: string, push?: { url: string; token: string; returnImmediately?: boolean }): SendMessageRequest {
  return {
    tenant: '',
    message: userMessage(text),
    configuration:
      push === undefined
        ? undefined
        : { acceptedOutputModes: [], taskPushNotificationConfig: pushConfig(push.url, push.token), returnImmediately: push.returnImmediately ?? false },
    metadata: undefined,
  };
}

async function clientOf(server: { url: string }, agent: string, transport: 'JSONRPC' | 'HTTP+JSON', version: '1.0' | '0.3', key?: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) =>
    fetch(
      input,
      key === undefined ? init : { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers).entries()), authorization: `Bearer ${key}` } },
    );
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [
        new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
        new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
      ],
      preferredTransports: [transport],
      // The card is read with the key too: with keys, a card is shown only to a key that reaches its agent.
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  const cardUrl = `${server.url}/a2a/${agent}/.well-known/agent-card.json`;
  if (version === '1.0') return factory.createFromUrl(cardUrl, '');
  return factory.createFromAgentCard(parseLegacyAgentCard(await (await fetchImpl(cardUrl, { headers: { 'A2A-Version': '0.3' } })).json()));
}

/** The state a notification carries: a 1.0 `StreamResponse` (task or status update), or a 0.3 task. */
function stateOf(body: unknown): string | undefined {
  const value = body as { task?: { status?: { state?: string } }; statusUpdate?: { status?: { state?: string } }; kind?: string; status?: { state?: string } };
  return value.task?.status?.state ?? value.statusUpdate?.status?.state ?? (value.kind === 'task' ? value.status?.state : undefined);
}
const states = (received: Receiver['received']): (string | undefined)[] => received.map((entry) => stateOf(entry.body)).filter((state) => state !== undefined);
const reached = (state: string) => (received: Receiver['received']) => states(received).includes(state);

const modes = [
  ['JSONRPC', '1.0'],
  ['HTTP+JSON', '1.0'],
  ['JSONRPC', '0.3'],
  ['HTTP+JSON', '0.3'],
] as const;

describe.each(modes)('push notifications over %s (A2A %s)', (transport, version) => {
  const completed = version === '1.0' ? 'TASK_STATE_COMPLETED' : 'completed';

  it("sets, gets, lists and deletes a task's push-notification configs", async () => {
    api = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS });
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'done' }]);
    const client = await clientOf(api, 'echo', transport, version);
    expect((await client.getAgentCard()).capabilities?.pushNotifications).toBe(true);
    const task = await client.sendMessage(send('Hi'));
    const taskId = (task as { id: string }).id;

    const created = await client.createTaskPushNotificationConfig(pushConfig(receiver.url, 'tok-1', taskId));
    expect(created).toMatchObject({ taskId, url: receiver.url, token: 'tok-1' });
    expect(created.id).not.toBe('');
    const named = await client.createTaskPushNotificationConfig({ ...pushConfig(`${receiver.url}?inbox=2`, 'tok-2', taskId), id: 'second' });
    expect(named.id).toBe('second');
    expect(await client.getTaskPushNotificationConfig({ tenant: '', taskId, id: created.id })).toMatchObject({
      id: created.id,
      url: receiver.url,
      token: 'tok-1',
    });
    const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId, pageSize: 0, pageToken: '' });
    expect(listed.configs.map((config) => config.id)).toEqual([created.id, 'second']);
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId, id: created.id });
    expect((await client.listTaskPushNotificationConfig({ tenant: '', taskId, pageSize: 0, pageToken: '' })).configs.map((config) => config.id)).toEqual([
      'second',
    ]);
    await expect(client.getTaskPushNotificationConfig({ tenant: '', taskId, id: created.id })).rejects.toThrow(/not found/i);
    // Kept in the store, not in the server: a new server over the same database lists it.
    expect((await api.host.store.a2aPushConfigs.list(taskId)).map((config) => config.id)).toEqual(['second']);
    // A config for an unknown task is refused as the task is.
    await expect(client.createTaskPushNotificationConfig(pushConfig(receiver.url, 'tok', 'no-such-task'))).rejects.toThrow(/not found/i);
  });

  it("POSTs the task's updates to the webhook with the token it gave, to the end (the client answered at once), and records each delivery in the audit log", async () => {
    api = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS });
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'Pushed reply.' }]);
    const client = await clientOf(api, 'echo', transport, version);
    const result = await client.sendMessage(send('Hi', { url: receiver.url, token: 'secret-token', returnImmediately: true }));
    const taskId = (result as { id: string }).id;
    expect((result as { status?: { state: TaskState } }).status?.state).not.toBe(TaskState.TASK_STATE_COMPLETED);
    await waitFor('the completed task at the webhook', () => states(receiver.received).includes(completed));

    for (const { headers } of receiver.received) {
      expect(headers['x-a2a-notification-token']).toBe('secret-token');
      expect(headers['content-type']).toBe(version === '1.0' ? 'application/a2a+json' : 'application/json');
    }
    const last = receiver.received.at(-1)?.body as Record<string, unknown>;
    if (version === '1.0') {
      expect(receiver.received.map((entry) => Object.keys(entry.body as object)[0])).toEqual(['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate']);
      expect(last).toMatchObject({ statusUpdate: { taskId, status: { state: 'TASK_STATE_COMPLETED' } } });
      expect(JSON.stringify(receiver.received[2]?.body)).toContain('Pushed reply.');
    } else {
      // 0.3 webhooks get the whole task each time.
      expect(last).toMatchObject({ kind: 'task', id: taskId, status: { state: 'completed' } });
      expect(JSON.stringify(last)).toContain('Pushed reply.');
    }
    // Recorded once the webhook has answered: the last record may follow the last POST by a moment.
    const delivered = await waitFor('a delivery record for each POST', async () => {
      const records = await api?.host.kernel.audit({ types: ['a2a-push-deliver'] });
      return records?.length === receiver.received.length ? records : undefined;
    });
    expect(delivered[0]).toMatchObject({
      agentId: api.host.kernel.get('echo').id,
      data: { name: 'echo', taskId, url: receiver.url, attempts: 1, status: 200 },
    });
    expect(JSON.stringify(delivered)).not.toContain('secret-token');
  });

  it('goes on to the end of a task whose streaming client left mid-turn: GetTask reads it completed with its reply said once, and its webhook is told', async () => {
    api = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS });
    await api.host.kernel.spawn(manifest(agentToml('teller', model.url)));
    // The reply's text is streamed, then the turn waits: the client leaves meanwhile.
    let finish: () => void = () => undefined;
    model.script([{ text: 'Once upon a time, the end.', stall: new Promise<void>((resolve) => (finish = resolve)) }]);
    const client = await clientOf(api, 'teller', transport, version);
    const stream = client.sendMessageStream(send('Tell me a story', { url: receiver.url, token: 'left' }));
    const first = (await stream.next()).value as StreamResponse;
    const taskId = first.payload?.$case === 'task' ? first.payload.value.id : '';
    for (let next = await stream.next(); next.done !== true && next.value.payload?.$case !== 'artifactUpdate'; next = await stream.next());
    await stream.return(undefined);
    await waitFor('the server to hear the client leave', () => api?.clientsLeft() === 1);
    finish();
    const done = await waitFor('the task to end', async () => {
      const task = await client.getTask({ tenant: '', id: taskId, historyLength: undefined });
      return task.status?.state === TaskState.TASK_STATE_WORKING ? undefined : task;
    });
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(done.artifacts.flatMap((artifact) => artifact.parts.map((part) => (part.content?.$case === 'text' ? part.content.value : '')))).toEqual([
      'Once upon a time, the end.',
    ]);
    await receiver.until(reached(completed));
    expect(JSON.stringify(receiver.received.at(-1)?.body)).toContain(version === '1.0' ? taskId : 'Once upon a time, the end.');
  });
});

describe('push delivery', () => {
  it('goes on after input-required: the updates once a human approves reach the webhook too', async () => {
    api = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS });
    await api.host.kernel.spawn(
      manifest(agentToml('careful', model.url, '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]')),
    );
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'a.txt', content: 'ok' } }] }, { text: 'written' }]);
    const client = await clientOf(api, 'careful', 'JSONRPC', '1.0');
    const result = await client.sendMessage(send('write a.txt', { url: receiver.url, token: 't' }));
    expect('status' in result && result.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    await receiver.until(reached('TASK_STATE_INPUT_REQUIRED'));
    const [pending] = await api.host.kernel.approvals.list();
    await api.host.kernel.approvals.decide(pending?.id ?? '', { approved: true, by: 'owner', reason: null });
    await waitFor('the completed task at the webhook', () => states(receiver.received).includes('TASK_STATE_COMPLETED'));
    expect(states(receiver.received)).toEqual([
      'TASK_STATE_SUBMITTED',
      'TASK_STATE_WORKING',
      'TASK_STATE_INPUT_REQUIRED',
      'TASK_STATE_WORKING',
      'TASK_STATE_COMPLETED',
    ]);
  });

  it('retries a failing webhook with backoff on the injected clock (1 s, then 2 s) until it answers', async () => {
    api = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS });
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'eventually' }]);
    receiver.answer(503, 500);
    const client = await clientOf(api, 'echo', 'JSONRPC', '1.0');
    const start = api.host.clock.now();
    const asleep = api.host.clock.pending();
    await client.sendMessage(send('Hi', { url: receiver.url, token: 't' }));
    await receiver.until((received) => received.length === 1);
    // No retry while the clock stands still: the notifier took the 503 and sleeps on the clock.
    await waitFor('the retry to wait on the clock', () => api?.host.clock.pending() === asleep + 1);
    expect(receiver.received).toHaveLength(1);
    await settleWithClock(api.host.clock, receiver.until(reached('TASK_STATE_COMPLETED')));
    // The first notification (the task) was sent three times, the same each time; the rest once.
    expect(receiver.received.slice(0, 3).map((entry) => entry.body)).toEqual([
      receiver.received[0]?.body,
      receiver.received[0]?.body,
      receiver.received[0]?.body,
    ]);
    expect(api.host.clock.now() - start).toBeGreaterThanOrEqual(3000);
    const [first] = await api.host.kernel.audit({ types: ['a2a-push-deliver'] });
    expect(first?.data).toMatchObject({ update: 'task', attempts: 3, status: 200 });
  });

  it("gives up after four attempts and records the failure with the webhook's answer", async () => {
    api = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS, push: { attempts: 4 } });
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'nobody listens' }]);
    receiver.answer(503, 503, 503, 503, 404);
    const client = await clientOf(api, 'echo', 'JSONRPC', '1.0');
    await client.sendMessage(send('Hi', { url: receiver.url, token: 't' }));
    const failed = waitFor('two failure records', async () => (await api?.host.kernel.audit({ types: ['a2a-push-fail'] }))?.length === 2);
    await settleWithClock(api.host.clock, failed);
    const records = await api.host.kernel.audit({ types: ['a2a-push-fail'] });
    // Four 503s for the task, then a 404 for the next update, which is not retried.
    expect(records[0]?.data).toMatchObject({ update: 'task', attempts: 4, status: 503, reason: 'the webhook answered 503' });
    expect(records[1]?.data).toMatchObject({ update: 'statusUpdate', attempts: 1, status: 404 });
  });
});

describe('push after a restart', () => {
  let hanging: HangingModelServer | undefined;
  let next: A2aHarness | undefined;
  afterEach(async () => {
    // The next daemon first: the first one's turn is cut off when it closes, as after a crash.
    await next?.close();
    next = undefined;
    await hanging?.close();
    hanging = undefined;
  });

  it('a task whose turn resumes at the next start is completed when the turn ends, and its webhook is told the reply, never a failure', async () => {
    api = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS, storeTasks: true });
    await api.host.kernel.spawn(manifest(agentToml('slow', model.url)));
    // The first daemon's model call never answers; the next daemon's (the turn resumed) does.
    model.script([{ text: 'never said', gate: new Promise<never>(() => undefined) }, { text: 'The long story, resumed.' }]);
    const client = await clientOf(api, 'slow', 'JSONRPC', '1.0');
    const task = (await client.sendMessage(send('Tell me a long story', { url: receiver.url, token: 'again', returnImmediately: true }))) as { id: string };
    await receiver.until(reached('TASK_STATE_WORKING'));
    await waitFor('the first model call', () => model.requests.length >= 1);

    // The next daemon, on the same store, while the first one's turn hangs (as after a crash).
    next = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS, storeTasks: true, daemon: true });
    const ended = (received: Receiver['received']): boolean => reached('TASK_STATE_COMPLETED')(received) || reached('TASK_STATE_FAILED')(received);
    await receiver.until(ended);
    expect(states(receiver.received)).not.toContain('TASK_STATE_FAILED');
    const last = receiver.received.at(-1);
    expect(last?.headers['x-a2a-notification-token']).toBe('again');
    expect(JSON.stringify(last?.body)).toContain('The long story, resumed.');
    const read = await (await clientOf(next, 'slow', 'JSONRPC', '1.0')).getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(JSON.stringify(read.artifacts)).toContain('The long story, resumed.');
    expect(model.requests).toHaveLength(2);
  });

  it('a task whose turn resumed at the next start, canceled by its client, cancels that turn, and its webhook is told', async () => {
    api = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS, storeTasks: true });
    await api.host.kernel.spawn(manifest(agentToml('slow', model.url)));
    // Neither daemon's model call answers: the resumed turn runs until something stops it.
    model.script([
      { text: 'never said', gate: new Promise<never>(() => undefined) },
      { text: 'never said either', gate: new Promise<never>(() => undefined) },
    ]);
    const task = (await (
      await clientOf(api, 'slow', 'JSONRPC', '1.0')
    ).sendMessage(send('Tell me a long story', { url: receiver.url, token: 'again', returnImmediately: true }))) as {
      id: string;
    };
    await waitFor('the first model call', () => model.requests.length >= 1);

    next = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS, storeTasks: true, daemon: true });
    const resumed = next;
    await waitFor('the resumed model call', () => model.requests.length >= 2);
    expect(resumed.host.kernel.turnCounts().running).toBe(1);
    const client = await clientOf(resumed, 'slow', 'JSONRPC', '1.0');
    const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    // The turn stops with it: nothing goes on spending for a task its client gave up.
    await waitFor('the resumed turn to be cancelled', () => resumed.host.kernel.turnCounts().running === 0);
    expect((await client.getTask({ tenant: '', id: task.id, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await receiver.until(reached('TASK_STATE_CANCELED'));
    expect(states(receiver.received).filter((state) => state === 'TASK_STATE_CANCELED')).toHaveLength(1);
  });

  it('a task whose resumed turn asks for an approval is input-required until a human answers, then working and completed, as a live task is', async () => {
    const careful = '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]';
    api = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS, storeTasks: true });
    await api.host.kernel.spawn(manifest(agentToml('careful', model.url, careful)));
    // The first daemon's model call never answers; the resumed turn asks to write a file, then answers.
    model.script([
      { text: 'never said', gate: new Promise<never>(() => undefined) },
      { toolCalls: [{ name: 'file_write', input: { path: 'a.txt', content: 'ok' } }] },
      { text: 'written' },
    ]);
    const task = (await (
      await clientOf(api, 'careful', 'JSONRPC', '1.0')
    ).sendMessage(send('write a.txt', { url: receiver.url, token: 't', returnImmediately: true }))) as { id: string };
    await waitFor('the first model call', () => model.requests.length >= 1);

    next = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS, storeTasks: true, daemon: true });
    const resumed = next;
    const pending = await waitFor('the approval the resumed turn asks', async () => (await resumed.host.kernel.approvals.list())[0]);
    const client = await clientOf(resumed, 'careful', 'JSONRPC', '1.0');
    const waiting = await waitFor('the task to be input-required', async () => {
      const read = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
      return read.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED ? read : undefined;
    });
    expect(JSON.stringify(waiting.status?.message)).toContain(`approval ${pending.id}`);
    await waitFor('input-required at the webhook', () => reached('TASK_STATE_INPUT_REQUIRED')(receiver.received));

    await resumed.host.kernel.approvals.decide(pending.id, { approved: true, by: 'owner', reason: null });
    await waitFor('the completed task at the webhook', () => reached('TASK_STATE_COMPLETED')(receiver.received));
    expect(states(receiver.received)).toEqual([
      'TASK_STATE_SUBMITTED',
      'TASK_STATE_WORKING',
      'TASK_STATE_INPUT_REQUIRED',
      'TASK_STATE_WORKING',
      'TASK_STATE_COMPLETED',
    ]);
    const read = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(JSON.stringify(read.artifacts)).toContain('written');
  });

  it('a task whose turn cannot be found (its agent type does not journal turns) is failed at the next start, and its webhook is told', async () => {
    hanging = await startHangingModelServer();
    api = await startA2a(dir.path, { config: LOOPBACK_WEBHOOKS });
    await api.host.kernel.spawn(manifest(agentToml('slow', hanging.url, 'module = "builtin:chain-of-thought"')));
    const client = await clientOf(api, 'slow', 'JSONRPC', '1.0');
    const task = (await client.sendMessage(send('Tell me a long story', { url: receiver.url, token: 'again', returnImmediately: true }))) as { id: string };
    await receiver.until(reached('TASK_STATE_WORKING'));
    // The next daemon, over the same tasks and configs (the first one's turn never ends: as after a crash).
    const server = createA2aServer({
      kernel: api.host.kernel,
      config: ConfigSchema.parse(LOOPBACK_WEBHOOKS),
      repository: api.repository,
      logger: createSilentLogger(),
      now: () => api?.host.clock.now() ?? 0,
      push: { repository: api.host.store.a2aPushConfigs, clock: api.host.clock },
    });
    try {
      await receiver.until(reached('TASK_STATE_FAILED'));
      const last = receiver.received.at(-1);
      expect(last?.headers['x-a2a-notification-token']).toBe('again');
      expect(last?.body).toMatchObject({ task: { id: task.id, status: { state: 'TASK_STATE_FAILED' } } });
      expect(JSON.stringify(last?.body)).toContain('the Loom daemon stopped while it ran');
    } finally {
      server.close();
    }
  });
});

describe("push at the daemon's stop", () => {
  /** A notifier with one 1.0 webhook (the receiver's) for the task `t1`, on a fake clock, recording what it delivers. */
  async function notifier(): Promise<{ notifier: PushNotifier; records: Omit<EventRecord, 'seq'>[] }> {
    const repository = new InMemoryA2aPushConfigRepository();
    await repository.put({
      taskId: 't1',
      id: 'c1',
      url: receiver.url,
      token: null,
      authentication: null,
      wireVersion: '1.0',
      createdBy: 'local',
      createdAt: 0,
    });
    const records: Omit<EventRecord, 'seq'>[] = [];
    const built = new PushNotifier({
      repository,
      clock: createFakeClock(),
      logger: createSilentLogger(),
      allowPrivateNetwork: true,
      record: (event) => Promise.resolve(records.push(event)),
    });
    return { notifier: built, records };
  }
  const completed = Task.fromJSON({ id: 't1', contextId: 'ctx', status: { state: 'TASK_STATE_COMPLETED' }, history: [], artifacts: [] });

  it("tells a finished task's webhook before the drain resolves", async () => {
    const { notifier: push, records } = await notifier();
    push.notifyStored('helper', completed);
    await push.drain();
    expect(states(receiver.received)).toEqual(['TASK_STATE_COMPLETED']);
    expect(records.map((record) => record.type)).toEqual(['a2a-push-deliver']);
  });

  it('tells the webhook of a task that ends while the drain waits for the deliveries taken before it', async () => {
    const { notifier: push } = await notifier();
    push.notifyStored('helper', Task.fromJSON({ id: 't1', contextId: 'ctx', status: { state: 'TASK_STATE_WORKING' }, history: [], artifacts: [] }));
    const draining = push.drain();
    push.notifyStored('helper', completed);
    await draining;
    expect(states(receiver.received)).toEqual(['TASK_STATE_WORKING', 'TASK_STATE_COMPLETED']);
  });

  it("waits for no retry at the drain: a webhook that failed is not asked again, and the failure is recorded (the clock's backoff not waited for)", async () => {
    const { notifier: push, records } = await notifier();
    receiver.answer(503);
    push.notifyStored('helper', completed);
    await receiver.until((received) => received.length === 1);
    await push.drain();
    expect(receiver.received).toHaveLength(1);
    expect(records).toMatchObject([{ type: 'a2a-push-fail', data: { attempts: 1, status: 503 } }]);
  });
});

describe('the webhook address guard', () => {
  it('refuses a webhook on loopback unless [a2a].push_allow_private_network is set, saying so; cloud metadata always', async () => {
    api = await startA2a(dir.path);
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'done' }]);
    for (const version of ['1.0', '0.3'] as const) {
      const client = await clientOf(api, 'echo', 'JSONRPC', version);
      const error = await client.sendMessage(send('Hi', { url: receiver.url, token: 't' })).then(
        () => undefined,
        (caught: unknown) => caught as Error,
      );
      expect(error?.message).toMatch(/loopback addresses are refused; set \[a2a\]\.push_allow_private_network = true/);
      expect(error).toMatchObject({ envelopeCode: -32602 });
    }
    expect(model.requests).toHaveLength(0);
    await api.close();

    api = await startA2a(`${dir.path}/allowed`, { config: LOOPBACK_WEBHOOKS });
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'done' }]);
    const client = await clientOf(api, 'echo', 'HTTP+JSON', '1.0');
    const task = await client.sendMessage(send('Hi'));
    const taskId = (task as { id: string }).id;
    await expect(client.createTaskPushNotificationConfig(pushConfig('http://169.254.169.254/latest/meta-data', 't', taskId))).rejects.toThrow(
      /cloud metadata addresses are never called/,
    );
    await expect(client.createTaskPushNotificationConfig(pushConfig('ftp://example.com/hook', 't', taskId))).rejects.toThrow(/only http and https/);
    expect(await api.host.store.a2aPushConfigs.list(taskId)).toEqual([]);
  });
});

describe('push notifications in the daemon', () => {
  it('a push config for a task the caller may not reach is refused like the task itself', async () => {
    daemon = await startApi(dir.path, { config: { ...OWNER_AND_HELPER_KEYS.config, ...LOOPBACK_WEBHOOKS }, env: OWNER_AND_HELPER_KEYS.env });
    await daemon.host.kernel.spawn(manifest(agentToml('private', model.url)));
    await daemon.host.kernel.spawn(manifest(agentToml('helper-one', model.url)));
    model.script([{ text: 'secret plan' }, { text: 'helping' }]);
    const owner = await clientOf(daemon, 'private', 'JSONRPC', '1.0', 'admin-secret');
    const secret = (await owner.sendMessage(send('plan'))) as { id: string };
    // The helper key is not shown the agent's card; a client given it anyway (the owner's) is answered 404, as for an unknown agent.
    await expect(clientOf(daemon, 'private', 'JSONRPC', '1.0', 'helper-secret')).rejects.toThrow(/404/);
    const helperFetch: typeof fetch = (input, init) =>
      fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init?.headers).entries()), authorization: 'Bearer helper-secret' } });
    const helperOnPrivate = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: helperFetch })],
        preferredTransports: ['JSONRPC'],
      }),
    ).createFromAgentCard(await owner.getAgentCard());
    for (const attempt of [
      helperOnPrivate.createTaskPushNotificationConfig(pushConfig(receiver.url, 't', secret.id)),
      helperOnPrivate.listTaskPushNotificationConfig({ tenant: '', taskId: secret.id, pageSize: 0, pageToken: '' }),
    ]) {
      await expect(attempt).rejects.toThrow(/404/);
    }
    const rest = await daemon.request(`/a2a/private/rest/tasks/${secret.id}/pushNotificationConfigs`, {
      method: 'POST',
      headers: { authorization: 'Bearer helper-secret', 'content-type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ url: receiver.url, token: 't' }),
    });
    expect(rest.status).toBe(404);
    // Its own task, on an agent it reaches: allowed.
    const helper = await clientOf(daemon, 'helper-one', 'JSONRPC', '1.0', 'helper-secret');
    const own = (await helper.sendMessage(send('help'))) as { id: string };
    expect(await helper.createTaskPushNotificationConfig(pushConfig(receiver.url, 't', own.id))).toMatchObject({ taskId: own.id });
  });

  it('without push notifications ([a2a].push_notifications = false) the HTTP+JSON config routes answer PushNotificationNotSupportedError, not 404', async () => {
    daemon = await startApi(dir.path, { config: { a2a: { push_notifications: false } } });
    await daemon.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    const card = (await (await daemon.request('/a2a/echo/.well-known/agent-card.json')).json()) as { capabilities: { pushNotifications: boolean } };
    expect(card.capabilities.pushNotifications).toBe(false);
    const response = await daemon.request('/a2a/echo/rest/tasks/some-task/pushNotificationConfigs', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ url: receiver.url }),
    });
    expect(response.status).toBe(400);
    expect(JSON.stringify(await response.json())).toContain('PUSH_NOTIFICATION_NOT_SUPPORTED');
  });
});
