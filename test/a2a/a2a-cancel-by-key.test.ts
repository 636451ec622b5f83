/**
 * Who cancels an A2A task, with API keys: the owner may cancel another key's task, and the turn's
 * end (its audit record, its session) and the task's status message name whoever cancelled it, as
 * the API's cancel of a turn does; the turn stays its creator's. The same for a task running live
 * and one whose turn a previous daemon left and this one resumed (src/a2a/task-recovery.ts), and
 * through an agent's endpoints or the legacy `POST /a2a/tasks/{id}/cancel`, which names no agent.
 */
import { type Task, TaskState } from '@a2a-js/sdk';
import type { Context } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InMemoryA2aTaskRepository } from '../../src/a2a/index.ts';
import { textOf } from '../../src/a2a/agent-executor.ts';
import { AccessDeniedError, StoreError } from '../../src/errors/index.ts';
import { type Caller, callerOf, type Kernel } from '../../src/kernel/index.ts';
import { agentToml } from '../http/api-harness.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { type A2aHarness, startA2a } from './a2a-harness.ts';
import { a2aClient, textMessage } from './a2a-sdk-client.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let first: A2aHarness | undefined;
let next: A2aHarness | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-cancel-by-key-');
});
afterEach(async () => {
  await next?.close();
  await first?.close();
  first = next = undefined;
  await dir.remove();
});

/** The callers of the keys, as the API's auth gives them: the owner `admin`, the users `helper-bot` and `other-bot` (agents `helper-*`). */
const CALLERS: Record<string, Caller> = {
  'admin-secret': callerOf({ name: 'admin', role: 'owner', agents: ['*'] }),
  'helper-secret': callerOf({ name: 'helper-bot', role: 'user', agents: ['helper-*'] }),
  'other-secret': callerOf({ name: 'other-bot', role: 'user', agents: ['helper-*'] }),
};
const keyOf = (c: Context): Caller | undefined => CALLERS[(c.req.header('authorization') ?? '').replace(/^Bearer /, '')];

/**
 * The cancel of task `id` through the legacy `POST /a2a/tasks/{id}/cancel` with the key: the task
 * as it is then, read with the SDK's client through `agent`'s endpoint, or the error answered.
 */
async function legacyCancelAs(key: string, harness: A2aHarness, agent: string, id: string): Promise<Task | Error> {
  const answer = await harness.request(`/a2a/tasks/${id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${key}` } });
  if (answer.status !== 200) return new Error(`${answer.status} ${await answer.text()}`);
  expect(await answer.json()).toMatchObject({ id, status: 'cancelled' });
  return (await a2aClient(harness.url, agent, key)).getTask({ tenant: '', id, historyLength: undefined });
}

/** How a client cancels a task: through its agent's endpoint with the SDK's client, or through the legacy endpoint. */
const DOORS = [
  ["its agent's endpoint", (key: string, harness: A2aHarness, agent: string, id: string) => cancelAs(key, harness, agent, id)],
  ['the legacy endpoint', legacyCancelAs],
] as const;

/** `helper-bot`'s task to `helper-slow`, whose model call never answers, answered as it starts. */
async function helperTask(harness: A2aHarness): Promise<Task> {
  await harness.host.kernel.spawn(manifest(agentToml('helper-slow', model.url)));
  model.script([
    { text: 'never said', gate: new Promise<never>(() => undefined) },
    { text: 'never said either', gate: new Promise<never>(() => undefined) },
  ]);
  const task = await sendAs('helper-secret', harness, 'helper-slow', textMessage('Tell me a story'));
  await waitFor('the first model call', () => model.requests.length >= 1);
  return task;
}

/** Sends `sent` to `agent` with the key, answered as its task starts. */
async function sendAs(key: string, harness: A2aHarness, agent: string, sent: ReturnType<typeof textMessage>): Promise<Task> {
  const configuration = { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true };
  return (await (await a2aClient(harness.url, agent, key)).sendMessage({ ...sent, configuration })) as Task;
}

/** The cancel of task `id` through `agent`'s endpoint with the key: the task, or the error thrown. */
async function cancelAs(key: string, harness: A2aHarness, agent: string, id: string): Promise<Task | Error> {
  return (await a2aClient(harness.url, agent, key)).cancelTask({ tenant: '', id, metadata: undefined }).catch((error: unknown) => error as Error);
}

/** The ends of `agent`'s turns in the audit log, once there are `count`. */
async function turnEnds(harness: A2aHarness, agent: string, count = 1): Promise<{ type: string; data: unknown }[]> {
  return waitFor(`${count} turn end(s) in the audit log`, async () => {
    const records = await harness.host.kernel.audit({ agent, types: ['turn-cancel', 'turn-finish', 'turn-fail'] });
    return records.length >= count ? records : undefined;
  });
}

describe('an A2A task cancelled with API keys', () => {
  describe.each([
    ['running live', ...DOORS[0], false],
    ['running live', ...DOORS[1], false],
    ['whose turn resumed after a restart', ...DOORS[0], true],
    ['whose turn resumed after a restart', ...DOORS[1], true],
  ])('%s, cancelled through %s', (_how, _door, cancel, restarted) => {
    it.each([
      ['the owner', 'admin-secret', '"admin"'],
      ['its creator', 'helper-secret', '"helper-bot"'],
    ])(
      "cancelled by %s: its turn is cancelled, its end and the task's status naming who cancelled it, the turn still its creator's",
      async (_who, key, byline) => {
        const tasks = new InMemoryA2aTaskRepository();
        first = await startA2a(dir.path, { repository: tasks, callerOf: keyOf });
        const task = await helperTask(first);
        let daemon = first;
        if (restarted) {
          next = await startA2a(dir.path, { repository: tasks, daemon: true, callerOf: keyOf });
          daemon = next;
          await waitFor('the resumed model call', () => model.requests.length >= 2);
        }
        const canceled = await cancel(key, daemon, 'helper-slow', task.id);
        expect(canceled).not.toBeInstanceOf(Error);
        expect((canceled as Task).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
        expect(textOf((canceled as Task).status?.message)).toContain(`cancelled by ${byline}`);
        const { kernel } = daemon.host;
        const [ended] = await turnEnds(daemon, 'helper-slow');
        expect(ended?.type).toBe('turn-cancel');
        expect(ended?.data).toMatchObject({
          via: 'user:helper-bot',
          code: 'TURN_CANCELLED',
          message: expect.stringContaining(`cancelled by ${byline}`) as string,
        });
        expect(kernel.turnCounts().running).toBe(0);
      },
    );
  });
});

describe('an A2A task cancelled with API keys, live', () => {
  beforeEach(async () => {
    first = await startA2a(dir.path, { callerOf: keyOf });
  });

  it("refuses another key's cancel as of an unknown task: its turn goes on", async () => {
    const harness = first as A2aHarness;
    const task = await helperTask(harness);
    const refused = await cancelAs('other-secret', harness, 'helper-slow', task.id);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toContain('Task not found');
    expect(harness.host.kernel.turnCounts().running).toBe(1);
    expect(await harness.host.kernel.audit({ agent: 'helper-slow', types: ['turn-cancel'] })).toEqual([]);
    const seen = await (await a2aClient(harness.url, 'helper-slow', 'helper-secret')).getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(seen.status?.state).toBe(TaskState.TASK_STATE_WORKING);
  });

  it("answers TaskNotCancelable for a task that has ended, and cancels no later task's turn in its conversation", async () => {
    const harness = first as A2aHarness;
    await harness.host.kernel.spawn(manifest(agentToml('helper-slow', model.url)));
    model.script([{ text: 'Done.' }, { text: 'never said', gate: new Promise<never>(() => undefined) }]);
    const done = await sendAs('helper-secret', harness, 'helper-slow', textMessage('Say done'));
    await turnEnds(harness, 'helper-slow');
    // A later task in the same conversation (the A2A context), its turn running.
    const later = textMessage('Tell me a story');
    const running = await sendAs('helper-secret', harness, 'helper-slow', { ...later, message: { ...later.message, contextId: done.contextId } });
    await waitFor('the later model call', () => model.requests.length >= 2);
    for (const key of ['admin-secret', 'helper-secret']) {
      const refused = await cancelAs(key, harness, 'helper-slow', done.id);
      expect({ key, refused: refused instanceof Error ? refused.message : refused }).toEqual({
        key,
        refused: expect.stringContaining('not cancelable') as string,
      });
    }
    expect(harness.host.kernel.turnCounts().running).toBe(1);
    expect(
      (await harness.host.kernel.audit({ agent: 'helper-slow', types: ['turn-cancel', 'turn-finish', 'turn-fail'] })).map((record) => record.type),
    ).toEqual(['turn-finish']);
    // The later task is cancelled as any: its turn ends.
    expect(await cancelAs('helper-secret', harness, 'helper-slow', running.id)).toMatchObject({ status: { state: TaskState.TASK_STATE_CANCELED } });
    expect((await turnEnds(harness, 'helper-slow', 2)).map((record) => record.type)).toEqual(['turn-finish', 'turn-cancel']);
  });

  it("refuses a cancel through another agent's endpoint as of an unknown task, the owner's too: its turn goes on", async () => {
    const harness = first as A2aHarness;
    const task = await helperTask(harness);
    await harness.host.kernel.spawn(manifest(agentToml('helper-other', model.url)));
    for (const key of ['admin-secret', 'helper-secret']) {
      const refused = await cancelAs(key, harness, 'helper-other', task.id);
      expect({ key, refused: refused instanceof Error ? refused.message : refused }).toEqual({
        key,
        refused: expect.stringContaining('Task not found') as string,
      });
    }
    expect(harness.host.kernel.turnCounts().running).toBe(1);
    expect(await harness.host.kernel.audit({ agent: 'helper-slow', types: ['turn-cancel'] })).toEqual([]);
    // Through its own agent's endpoint it is cancelled as any.
    expect(await cancelAs('admin-secret', harness, 'helper-slow', task.id)).toMatchObject({ status: { state: TaskState.TASK_STATE_CANCELED } });
    const [ended] = await turnEnds(harness, 'helper-slow');
    expect(ended).toMatchObject({ type: 'turn-cancel', data: { via: 'user:helper-bot', message: expect.stringContaining('cancelled by "admin"') as string } });
  });

  it('cancels both turns of a task sent a second message while its first waits for an approval', async () => {
    const harness = first as A2aHarness;
    const toml = agentToml('helper-careful', model.url, '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]');
    await harness.host.kernel.spawn(manifest(toml));
    model.script([
      { toolCalls: [{ name: 'file_write', input: { path: 'approved.txt', content: 'ok' } }] },
      { text: 'never said', gate: new Promise<never>(() => undefined) },
    ]);
    const task = await sendAs('helper-secret', harness, 'helper-careful', textMessage('write approved.txt'));
    await waitFor('the approval asked', async () => (await harness.host.kernel.approvals.list()).length === 1);
    // The task waits for the approval (input-required): a second message to it starts a second turn.
    const again = textMessage('And then?');
    await sendAs('helper-secret', harness, 'helper-careful', { ...again, message: { ...again.message, taskId: task.id, contextId: task.contextId } });
    await waitFor('the second turn', () => harness.host.kernel.turnCounts().running + harness.host.kernel.turnCounts().queued === 2);
    expect(await cancelAs('admin-secret', harness, 'helper-careful', task.id)).toMatchObject({ status: { state: TaskState.TASK_STATE_CANCELED } });
    // Neither goes on: the first no longer waits for its approval.
    await waitFor('no turn to run or wait', () => {
      const counts = harness.host.kernel.turnCounts();
      return counts.running === 0 && counts.queued === 0;
    });
    expect(await harness.host.kernel.approvals.list()).toEqual([]);
  });
});

describe('an A2A task cancelled through the legacy endpoint', () => {
  it.each([
    ['refuses', () => new AccessDeniedError('"helper-bot" may not cancel this turn'), 409, 'TASK_NOT_CANCELABLE'],
    ['fails', () => new StoreError('the store is out of reach'), 500, 'STORE_FAILURE'],
  ])('leaves the task working and its turn running when the kernel %s the cancel, answering why', async (_what, error, status, code) => {
    // The kernel's look-up of the task's turn, as the cancel asks it, refuses or fails.
    const refusing = (kernel: Kernel): Kernel =>
      new Proxy(kernel, {
        get: (target, property, receiver): unknown => (property === 'keyedTurn' ? () => Promise.reject(error()) : Reflect.get(target, property, receiver)),
      });
    first = await startA2a(dir.path, { callerOf: keyOf, kernel: refusing });
    const task = await helperTask(first);
    const answer = await first.request(`/a2a/tasks/${task.id}/cancel`, { method: 'POST', headers: { authorization: 'Bearer helper-secret' } });
    expect(answer.status).toBe(status);
    expect(await answer.json()).toMatchObject({ error: { code, message: expect.stringContaining(error().message) as string } });
    const seen = await (await a2aClient(first.url, 'helper-slow', 'helper-secret')).getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(seen.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(first.host.kernel.turnCounts().running).toBe(1);
    expect(await first.host.kernel.audit({ agent: 'helper-slow', types: ['turn-cancel'] })).toEqual([]);
  });
});

describe('an A2A task an agent made and cancels (a server whose callers include agents)', () => {
  it.each(DOORS)("names the agent, cancelling through %s: the task's status and its turn's end", async (_door, cancel) => {
    // The A2A server mounted with callers of its own (`callerOf`): one of them an agent.
    const boss: { caller?: Caller } = {};
    first = await startA2a(dir.path, { callerOf: (c) => (c.req.header('authorization') === 'Bearer boss-secret' ? boss.caller : keyOf(c)) });
    const toml = agentToml('helper-boss', model.url, '[capabilities]\ntools = ["agent_message"]\nagent_message = ["helper-slow"]');
    boss.caller = { kind: 'agent', agentId: (await first.host.kernel.spawn(manifest(toml))).id, chain: [] };
    await first.host.kernel.spawn(manifest(agentToml('helper-slow', model.url)));
    model.script([{ text: 'never said', gate: new Promise<never>(() => undefined) }]);
    const task = await sendAs('boss-secret', first, 'helper-slow', textMessage('Tell me a story'));
    await waitFor('the first model call', () => model.requests.length >= 1);
    const canceled = await cancel('boss-secret', first, 'helper-slow', task.id);
    expect((canceled as Task).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(textOf((canceled as Task).status?.message)).toContain('cancelled by agent "helper-boss"');
    const [ended] = await turnEnds(first, 'helper-slow');
    expect(ended).toMatchObject({ type: 'turn-cancel', data: { message: expect.stringContaining('cancelled by agent "helper-boss"') as string } });
  });
});

describe('an A2A task an agent made, cancelled once the agent may no longer message its agent', () => {
  it.each(DOORS)(
    "refuses the cancel through %s when the task's turn resumed after a restart: the task stays working, its turn running",
    async (_door, cancel) => {
      const tasks = new InMemoryA2aTaskRepository();
      const boss: { caller?: Caller } = {};
      const callerOf = (c: Context): Caller | undefined => (c.req.header('authorization') === 'Bearer boss-secret' ? boss.caller : keyOf(c));
      first = await startA2a(dir.path, { repository: tasks, callerOf });
      const bossToml = agentToml('helper-boss', model.url, '[capabilities]\ntools = ["agent_message"]\nagent_message = ["helper-slow"]');
      boss.caller = { kind: 'agent', agentId: (await first.host.kernel.spawn(manifest(bossToml))).id, chain: [] };
      await first.host.kernel.spawn(manifest(agentToml('helper-slow', model.url)));
      model.script([
        { text: 'never said', gate: new Promise<never>(() => undefined) },
        { text: 'never said either', gate: new Promise<never>(() => undefined) },
      ]);
      const task = await sendAs('boss-secret', first, 'helper-slow', textMessage('Tell me a story'));
      await waitFor('the first model call', () => model.requests.length >= 1);
      // The daemon restarts: no turn of the task runs in its A2A server; the kernel resumed it.
      next = await startA2a(dir.path, { repository: tasks, daemon: true, callerOf });
      await waitFor('the resumed model call', () => model.requests.length >= 2);
      // The owner takes the agent's right to message helper-slow away.
      await next.host.kernel.update('helper-boss', manifest(agentToml('helper-boss', model.url)));
      const refused = await cancel('boss-secret', next, 'helper-slow', task.id);
      expect(refused).toBeInstanceOf(Error);
      expect((refused as Error).message).toMatch(/not cancelable|TASK_NOT_CANCELABLE/i);
      expect((refused as Error).message).toContain('agent_message');
      const seen = await (await a2aClient(next.url, 'helper-slow', 'admin-secret')).getTask({ tenant: '', id: task.id, historyLength: undefined });
      expect(seen.status?.state).toBe(TaskState.TASK_STATE_WORKING);
      expect(next.host.kernel.turnCounts().running).toBe(1);
      expect(await next.host.kernel.audit({ agent: 'helper-slow', types: ['turn-cancel'] })).toEqual([]);
    },
  );
});
