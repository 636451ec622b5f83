/**
 * The recovery of A2A tasks a previous daemon left unfinished (src/a2a/task-recovery.ts), where it
 * meets what else happens meanwhile: a client's cancel while it writes a task's end, a store that
 * cannot answer for a while.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type Task, TaskState } from '@a2a-js/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/index.ts';
import { LoomError, StoreError } from '../../src/errors/index.ts';
import { type A2aServer, type A2aTaskRepository, createA2aServer, InMemoryA2aTaskRepository } from '../../src/a2a/index.ts';
import { TASK_RECOVERY_ATTEMPTS, TASK_RECOVERY_RETRY_MS } from '../../src/a2a/task-recovery.ts';
import type { Kernel, KeyedTurn } from '../../src/kernel/index.ts';
import { agentToml, type HangingModelServer, startHangingModelServer } from '../http/api-harness.ts';
import { createRecordingLogger } from '../support/recording-logger.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { type A2aHarness, startA2a } from './a2a-harness.ts';
import { a2aClient, textMessage } from './a2a-sdk-client.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let first: A2aHarness | undefined;
let next: A2aHarness | undefined;
let server: A2aServer | undefined;
let hanging: HangingModelServer | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-recovery-');
});
afterEach(async () => {
  // The next daemon first: the first one's turn is cut off when it closes, as after a crash.
  server?.close();
  await next?.close();
  await first?.close();
  await hanging?.close();
  server = next = first = hanging = undefined;
  await dir.remove();
});

/** A message answered at once, with the task as it starts (its turn goes on). */
const sentAtOnce = (text: string) => ({
  ...textMessage(text),
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
});

describe('the recovery of unfinished A2A tasks', () => {
  it("keeps the task's first end: a client's cancel made while it writes the task's outcome (between its read and its write) is not cancelable", async () => {
    const tasks = new InMemoryA2aTaskRepository();
    first = await startA2a(dir.path, { repository: tasks });
    await first.host.kernel.spawn(manifest(agentToml('slow', model.url)));
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The first daemon's model call never answers; the resumed turn's answers once released.
    model.script([
      { text: 'never said', gate: new Promise<never>(() => undefined) },
      { text: 'The story, resumed.', gate: released },
    ]);
    const task = (await (await a2aClient(first.url, 'slow', 'none')).sendMessage(sentAtOnce('Tell me a story'))) as Task;
    await waitFor('the first model call', () => model.requests.length >= 1);

    // The next daemon's tasks: the same, but the read of the task once the turn has ended first
    // lets a client cancel the task, and waits until that cancel is saved or waits its turn to be.
    let cancelOnRead: (() => Promise<void>) | undefined;
    const repository: A2aTaskRepository = {
      get: async (id) => {
        const read = await tasks.get(id);
        const cancel = id === task.id ? cancelOnRead : undefined;
        cancelOnRead = undefined;
        await cancel?.();
        return read;
      },
      put: (record) => tasks.put(record),
      delete: (id) => tasks.delete(id),
      count: () => tasks.count(),
      oldestFinished: () => tasks.oldestFinished(),
      list: (query) => tasks.list(query),
    };
    next = await startA2a(dir.path, { repository, daemon: true });
    const resumed = next;
    await waitFor('the resumed model call', () => model.requests.length >= 2);
    const client = await a2aClient(resumed.url, 'slow', 'none');
    const { store } = resumed.a2a;
    const save = store.save.bind(store);
    let canceledSave: ((saving: { saved: Promise<void> }) => void) | undefined;
    store.save = (saved, context) => {
      const saving = save(saved, context);
      if (saved.status?.state === TaskState.TASK_STATE_CANCELED) canceledSave?.({ saved: saving });
      return saving;
    };
    let canceled: Promise<unknown> | undefined;
    cancelOnRead = async () => {
      const saving = new Promise<{ saved: Promise<void> }>((resolve) => (canceledSave = resolve));
      canceled = client.cancelTask({ tenant: '', id: task.id, metadata: undefined }).then(
        () => 'canceled',
        (error: unknown) => error,
      );
      // Saved at once, unless it waits for the write under way: then it comes after it.
      await Promise.race([(await saving).saved, nextTurn()]);
    };
    release();

    // The cancel read the task working, but the outcome was saved first: an ended task is final.
    expect(String(await waitFor('the cancel', () => canceled))).toMatch(/not cancelable/i);
    await waitFor('the turn to end', () => resumed.host.kernel.turnCounts().running === 0);
    const read = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(read.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(JSON.stringify(read)).toContain('The story, resumed.');
  });

  it('looks the turn of a task up again, on the clock, when the store could not answer at start', async () => {
    hanging = await startHangingModelServer();
    first = await startA2a(dir.path, { storeTasks: true });
    // A chain-of-thought agent's turns are not journaled: its task's turn cannot be found.
    await first.host.kernel.spawn(manifest(agentToml('thinker', hanging.url, 'module = "builtin:chain-of-thought"')));
    const task = (await (await a2aClient(first.url, 'thinker', 'none')).sendMessage(sentAtOnce('Think about this'))) as Task;
    await waitFor('the task to be working', async () => (await first?.repository.get(task.id))?.state === 'TASK_STATE_WORKING');

    // The next server, over the same tasks, whose first look-up of a turn the store cannot answer.
    const { kernel, clock } = first.host;
    let lookups = 0;
    const flaky = new Proxy(kernel, {
      get: (target, property, receiver): unknown =>
        property === 'keyedTurn'
          ? (...args: Parameters<Kernel['keyedTurn']>) => {
              lookups += 1;
              return lookups === 1 ? Promise.reject(new StoreError('the database is out of reach')) : kernel.keyedTurn(...args);
            }
          : Reflect.get(target, property, receiver),
    });
    const logger = createRecordingLogger();
    const failedToLook = logger.next('error');
    server = createA2aServer({ kernel: flaky, config: ConfigSchema.parse({}), repository: first.repository, logger, now: () => clock.now(), clock });
    expect((await failedToLook).message).toMatch(/could not yet say what became of the turns of 1 unfinished A2A task\(s\) \(the store could not answer\)/);
    expect((await first.repository.get(task.id))?.state).toBe('TASK_STATE_WORKING');

    await clock.advance(TASK_RECOVERY_RETRY_MS);
    const failed = await waitFor('the task to be failed', async () => {
      const record = await first?.repository.get(task.id);
      return record?.state === 'TASK_STATE_FAILED' ? record : undefined;
    });
    expect(JSON.stringify(failed.task)).toContain('the Loom daemon stopped while it ran');
    expect(lookups).toBe(2);
  });

  it('stops looking the turn up again when the server closes', async () => {
    hanging = await startHangingModelServer();
    first = await startA2a(dir.path, { storeTasks: true });
    await first.host.kernel.spawn(manifest(agentToml('thinker', hanging.url, 'module = "builtin:chain-of-thought"')));
    const task = (await (await a2aClient(first.url, 'thinker', 'none')).sendMessage(sentAtOnce('Think about this'))) as Task;
    await waitFor('the task to be working', async () => (await first?.repository.get(task.id))?.state === 'TASK_STATE_WORKING');
    const { kernel, clock } = first.host;
    let lookups = 0;
    const unreachable = new Proxy(kernel, {
      get: (target, property, receiver): unknown =>
        property === 'keyedTurn'
          ? () => {
              lookups += 1;
              return Promise.reject(new StoreError('the database is out of reach'));
            }
          : Reflect.get(target, property, receiver),
    });
    const logger = createRecordingLogger();
    const failedToLook = logger.next('error');
    const asleep = clock.pending();
    server = createA2aServer({ kernel: unreachable, config: ConfigSchema.parse({}), repository: first.repository, logger, now: () => clock.now(), clock });
    await failedToLook;
    await waitFor('the retry to wait on the clock', () => clock.pending() === asleep + 1);
    server.close();
    await waitFor('the retry to stop waiting', () => clock.pending() === asleep);
    await clock.advance(TASK_RECOVERY_RETRY_MS * 2);
    expect(lookups).toBe(1);
    expect((await first.repository.get(task.id))?.state).toBe('TASK_STATE_WORKING');
  });

  it('asks again for a task whose turn the store holds running while no node runs it, then leaves it for the next start: never fails it as running on another node', async () => {
    hanging = await startHangingModelServer();
    first = await startA2a(dir.path, { storeTasks: true });
    await first.host.kernel.spawn(manifest(agentToml('thinker', hanging.url, 'module = "builtin:chain-of-thought"')));
    const task = (await (await a2aClient(first.url, 'thinker', 'none')).sendMessage(sentAtOnce('Think about this'))) as Task;
    await waitFor('the task to be working', async () => (await first?.repository.get(task.id))?.state === 'TASK_STATE_WORKING');
    // One node: the journal holds the turn running, but nothing runs it here (nor may elsewhere).
    const { kernel, clock } = first.host;
    let lookups = 0;
    const stranded: KeyedTurn = {
      state: 'running',
      here: false,
      result: () => Promise.reject(new LoomError('TURN_RUNNING', 'user', 'the turn is still running on another node; retry later')),
      follow: async function* () {},
    };
    const strandedKernel = new Proxy(kernel, {
      get: (target, property, receiver): unknown =>
        property === 'keyedTurn'
          ? () => {
              lookups += 1;
              return Promise.resolve(stranded);
            }
          : Reflect.get(target, property, receiver),
    });
    const logger = createRecordingLogger();
    const told = logger.next('error');
    server = createA2aServer({ kernel: strandedKernel, config: ConfigSchema.parse({}), repository: first.repository, logger, now: () => clock.now(), clock });
    expect((await told).message).toMatch(/could not yet say what became of the turns of 1 unfinished A2A task\(s\) \(the store says they run, not here\)/);
    // Past the 10 minutes a turn on another node is waited for, and past every retry.
    for (let waited = 0; waited <= TASK_RECOVERY_RETRY_MS * (TASK_RECOVERY_ATTEMPTS + 2); waited += 2000) await clock.advance(2000);
    await waitFor('the recovery to give up', () => logger.entries.some((entry) => /gave up asking/.test(entry.message ?? '')));
    expect((await first.repository.get(task.id))?.state).toBe('TASK_STATE_WORKING');
    expect(lookups).toBe(1 + TASK_RECOVERY_ATTEMPTS);
    expect(logger.entries.filter((entry) => entry.level === 'error' && /gave up asking/.test(entry.message ?? ''))).toHaveLength(1);
  });

  it('asks the store again once per round for every task it could not answer for, with one line per round, and cancels the turn of a task canceled meanwhile', async () => {
    hanging = await startHangingModelServer();
    first = await startA2a(dir.path, { storeTasks: true });
    await first.host.kernel.spawn(manifest(agentToml('thinker', hanging.url, 'module = "builtin:chain-of-thought"')));
    const client = await a2aClient(first.url, 'thinker', 'none');
    const tasks: Task[] = [];
    for (const text of ['one', 'two', 'three']) tasks.push((await client.sendMessage(sentAtOnce(text))) as Task);
    await waitFor('the tasks to be working', async () => {
      for (const task of tasks) if ((await first?.repository.get(task.id))?.state !== 'TASK_STATE_WORKING') return false;
      return true;
    });
    const { kernel, clock } = first.host;
    const runningHere: KeyedTurn = { state: 'running', here: true, result: () => new Promise<never>(() => undefined), follow: async function* () {} };
    let lookups = 0;
    let canceled = 0;
    const unreachable = new Proxy(kernel, {
      get: (target, property, receiver): unknown => {
        if (property === 'cancelTurn') {
          return () => {
            canceled += 1;
            return Promise.resolve({ agent: 'thinker', run_id: null, status: 'cancelled' });
          };
        }
        if (property !== 'keyedTurn') return Reflect.get(target, property, receiver);
        return (_agent: string, key: string) => {
          // The second task's turn, looked up to cancel it, is found running here.
          if (key.includes(tasks[1]?.id ?? '?')) return Promise.resolve(runningHere);
          lookups += 1;
          // Out of reach for a while; then the turns are found running here.
          return lookups <= 4 ? Promise.reject(new StoreError('the database is out of reach')) : Promise.resolve(runningHere);
        };
      },
    });
    const logger = createRecordingLogger();
    const told = logger.next('error');
    server = createA2aServer({ kernel: unreachable, config: ConfigSchema.parse({}), repository: first.repository, logger, now: () => clock.now(), clock });
    // At start, the first look-up failed: the others wait with it, untried.
    expect((await told).bindings).toMatchObject({ tasks: 3 });
    expect(lookups).toBe(1);
    // Its client cancels the second task while it waits (saved canceled, as the SDK does with no executor): its turn is canceled.
    const second = await server.store.load(tasks[1]?.id ?? '');
    if (second === undefined) throw new Error('the second task is not stored');
    await server.store.save({
      ...second,
      status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date(clock.now()).toISOString() },
    });
    await waitFor("the second task's turn to be canceled", () => canceled === 1);
    for (let round = 1; round <= 3; round += 1) {
      const line = logger.next('warn');
      await clock.advance(TASK_RECOVERY_RETRY_MS);
      expect((await line).message).toMatch(/could not yet say what became of the turns of 2 unfinished A2A task/);
      // One look-up a round while the store fails: the others wait for the next.
      expect(lookups).toBe(1 + round);
    }
    await clock.advance(TASK_RECOVERY_RETRY_MS);
    await waitFor('the two tasks to be looked up', () => lookups === 6);
  });
});
