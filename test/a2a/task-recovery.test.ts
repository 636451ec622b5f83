/**
 * The recovery of A2A tasks a previous daemon left unfinished (src/a2a/task-recovery.ts), where it
 * meets what else happens meanwhile: a client's cancel while it writes a task's end, a store that
 * cannot answer for a while.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type Task, TaskState } from '@a2a-js/sdk';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/index.ts';
import { LoomError, StoreError, TurnCancelledError } from '../../src/errors/index.ts';
import { type RunningHttpServer, startHttpServer } from '../../src/http/index.ts';
import { type A2aServer, type A2aTaskRepository, createA2aServer, InMemoryA2aPushConfigRepository, InMemoryA2aTaskRepository } from '../../src/a2a/index.ts';
import type { Clock, EventRecord } from '../../src/contracts/index.ts';
import { TASK_RECOVERY_ATTEMPTS, TASK_RECOVERY_RETRY_MS } from '../../src/a2a/task-recovery-rounds.ts';
import { textOf } from '../../src/a2a/agent-executor.ts';
import type { Kernel, KeyedTurn, SendOptions } from '../../src/kernel/index.ts';
import type { AgentEvent, TurnResult } from '../../src/runtime/index.ts';
import { agentToml, type HangingModelServer, startHangingModelServer } from '../http/api-harness.ts';
import { createRecordingLogger, type LogEntry, type RecordingLogger } from '../support/recording-logger.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import type { ScriptStep } from '../support/scripted-model-server.ts';
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
let http: RunningHttpServer | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-recovery-');
});
afterEach(async () => {
  // The next daemon first: the first one's turn is cut off when it closes, as after a crash.
  server?.close();
  await http?.close();
  await next?.close();
  await first?.close();
  await hanging?.close();
  server = next = first = hanging = http = undefined;
  await dir.remove();
});

/** A message answered at once, with the task as it starts (its turn goes on). */
const sentAtOnce = (text: string) => ({
  ...textMessage(text),
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
});

/** An A2A server as the daemon builds one (default config, on `clock`), which recovers the unfinished tasks it finds. */
function recoveryServer(
  options: Pick<Parameters<typeof createA2aServer>[0], 'kernel' | 'repository' | 'logger' | 'leasesTurns' | 'push'> & { clock: Clock },
): A2aServer {
  const { clock } = options;
  return createA2aServer({ ...options, config: ConfigSchema.parse({}), now: () => clock.now() });
}

/** A recovery server (`server`) on `options`, logging to a recording logger, once it has told its first line (at its start). */
async function startedRecovery(
  options: Omit<Parameters<typeof recoveryServer>[0], 'logger'>,
): Promise<{ recovered: A2aServer; logger: RecordingLogger; told: LogEntry }> {
  const logger = createRecordingLogger();
  const told = logger.next('info');
  const recovered = recoveryServer({ ...options, logger });
  server = recovered;
  return { recovered, logger, told: await told };
}

/** `base` with some of its methods replaced: a store that fails or waits where a test says. */
function repositoryWith(base: A2aTaskRepository, overrides: Partial<A2aTaskRepository>): A2aTaskRepository {
  return {
    get: (id) => base.get(id),
    put: (record) => base.put(record),
    delete: (id) => base.delete(id),
    count: () => base.count(),
    oldestFinished: () => base.oldestFinished(),
    list: (query) => base.list(query),
    ...overrides,
  };
}

/** Serves `a2a` on 127.0.0.1, as the daemon does; returns its URL. */
async function listen(a2a: A2aServer): Promise<string> {
  const app = new Hono();
  app.route('/', a2a.publicRoutes);
  app.route('/', a2a.routes);
  http = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  return http.url;
}

/** A turn the journal holds running, for a kernel that finds it (see {@link findingTurns}). */
function runningTurn(options: {
  here: () => boolean;
  result?: () => Promise<TurnResult>;
  follow?: () => AsyncIterable<AgentEvent>;
  cancel?: () => void;
}): KeyedTurn {
  return {
    state: 'running',
    get here() {
      return options.here();
    },
    result: options.result ?? (() => new Promise<never>(() => undefined)),
    follow: options.follow ?? async function* () {},
    cancel: () => {
      if (!options.here()) return false;
      options.cancel?.();
      return true;
    },
  };
}

/** `kernel`, but finding every task's turn with `keyedTurn`, and counting its `cancelTurn`s (the conversation's current turn). */
function findingTurns(kernel: Kernel, keyedTurn: (key: string) => Promise<KeyedTurn | undefined>, counts = { currentCanceled: 0 }): Kernel {
  return new Proxy(kernel, {
    get: (target, property, receiver): unknown => {
      if (property === 'keyedTurn') return (_agent: string, key: string) => keyedTurn(key);
      if (property !== 'cancelTurn') return Reflect.get(target, property, receiver);
      return () => {
        counts.currentCanceled += 1;
        return Promise.resolve({ agent: 'thinker', run_id: null, status: 'cancelled' });
      };
    },
  });
}

/** A tool call's request for a human's approval, as a turn emits it. */
const approvalRequest = (approvalId: string): AgentEvent => ({
  type: 'approval-request',
  approvalId,
  toolCallId: `call-${approvalId}`,
  toolName: 'shell',
  input: {},
  expiresAt: '2026-01-01T01:00:00.000Z',
});

const TURN_RUNNING = (): LoomError => new LoomError('TURN_RUNNING', 'user', 'the turn is still running on another node; retry later');
const RESULT: TurnResult = { text: 'Done, elsewhere.', usage: { inputTokens: 1, outputTokens: 1 }, iterations: 1, costUsd: 0, model: 'openai/gpt-4o' };

/** A first daemon's `thinker` task, working, its turn hanging (chain-of-thought: its turns are not journaled). */
async function workingTasks(...texts: string[]): Promise<{ harness: A2aHarness; tasks: Task[] }> {
  hanging = await startHangingModelServer();
  const harness = await startA2a(dir.path, { storeTasks: true });
  first = harness;
  await harness.host.kernel.spawn(manifest(agentToml('thinker', hanging.url, 'module = "builtin:chain-of-thought"')));
  const client = await a2aClient(harness.url, 'thinker', 'none');
  const tasks: Task[] = [];
  for (const text of texts) tasks.push((await client.sendMessage(sentAtOnce(text))) as Task);
  await waitFor('the tasks to be working', async () => {
    for (const task of tasks) if ((await harness.repository.get(task.id))?.state !== 'TASK_STATE_WORKING') return false;
    return true;
  });
  return { harness, tasks };
}

/**
 * Where a daemon before an upgrade journaled the turn of a task whose message and context ids are
 * past 128 characters: the key it gave the turn (from this version's, and the message id), its
 * conversation the context's id whole.
 */
const JOURNALED_BEFORE: [string, (key: string, long: string) => string][] = [
  ['whole in its key and its conversation (before ids were bounded)', (key, long) => key.replace(/sha256:[0-9a-f]{64}$/, long)],
  ["bounded in its key, its context's whole in its conversation (before context ids were)", (key) => key],
];

/**
 * A first daemon's task (`first`, as before an upgrade: see {@link JOURNALED_BEFORE}) to agent
 * `slow`, its message and context ids past 128 characters, working, its turn's model call hanging;
 * the model then answers `replies`. Returns the task and the message sent.
 */
async function taskBeforeUpgrade(
  tasks: A2aTaskRepository,
  keyBefore: (key: string, long: string) => string,
  ...replies: ScriptStep[]
): Promise<{ task: Task; sent: ReturnType<typeof sentAtOnce> }> {
  const [messageId, contextId] = [`m-${'x'.repeat(200)}`, `c-${'y'.repeat(200)}`];
  // The daemon before the upgrade: the turn journaled under the key and in the conversation it gave them.
  const before = (kernel: Kernel): Kernel =>
    new Proxy(kernel, {
      get: (target, property, receiver): unknown =>
        property === 'stream'
          ? (agent: string, text: string, options: SendOptions) =>
              kernel.stream(agent, text, { ...options, idempotencyKey: keyBefore(options.idempotencyKey ?? '', messageId), conversation: `a2a:${contextId}` })
          : Reflect.get(target, property, receiver),
    });
  first = await startA2a(dir.path, { repository: tasks, kernel: before });
  await first.host.kernel.spawn(manifest(agentToml('slow', model.url)));
  model.script([{ text: 'never said', gate: new Promise<never>(() => undefined) }, ...replies]);
  const message = sentAtOnce('Tell me a story');
  const sent = { ...message, message: { ...message.message, messageId, contextId } };
  const task = (await (await a2aClient(first.url, 'slow', 'none')).sendMessage(sent)) as Task;
  await waitFor('the first model call', () => model.requests.length >= 1);
  return { task, sent };
}

describe('the recovery of unfinished A2A tasks', () => {
  it("cancels, when its client cancels a task whose turn does not run here yet, that task's turn once it runs here: never the conversation's current turn", async () => {
    const { harness, tasks } = await workingTasks('Think about this');
    const { kernel, clock } = harness.host;
    let here = false;
    let turnCanceled = 0;
    const counts = { currentCanceled: 0 };
    const turn = runningTurn({ here: () => here, result: () => Promise.reject(TURN_RUNNING()), cancel: () => (turnCanceled += 1) });
    const { recovered } = await startedRecovery({
      kernel: findingTurns(kernel, () => Promise.resolve(turn), counts),
      repository: harness.repository,
      clock,
    });
    const client = await a2aClient(await listen(recovered), 'thinker', 'none');
    const canceled = await client.cancelTask({ tenant: '', id: tasks[0]?.id ?? '', metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await nextTurn();
    // Not here yet: nothing is canceled, least of all the turn that runs now in its conversation.
    expect(counts.currentCanceled).toBe(0);
    expect(turnCanceled).toBe(0);
    here = true;
    await clock.advance(TASK_RECOVERY_RETRY_MS);
    await waitFor("the task's turn to be canceled", () => turnCanceled === 1);
    expect(counts.currentCanceled).toBe(0);
  });

  it("misses no client's cancel made while a round looks the task up again: its turn is canceled once it runs here", async () => {
    const { harness, tasks } = await workingTasks('Think about this');
    const { kernel, clock } = harness.host;
    const id = tasks[0]?.id ?? '';
    let here = false;
    let turnCanceled = 0;
    const turn = runningTurn({ here: () => here, result: () => Promise.reject(TURN_RUNNING()), cancel: () => (turnCanceled += 1) });
    // Armed for the round: its read of the task lets the client cancel it, and answers once the cancel is saved.
    let cancelOnRead: (() => Promise<void>) | undefined;
    const repository = repositoryWith(harness.repository, {
      get: async (taskId) => {
        const read = await harness.repository.get(taskId);
        const cancel = taskId === id ? cancelOnRead : undefined;
        cancelOnRead = undefined;
        await cancel?.();
        return read;
      },
    });
    const { recovered, logger } = await startedRecovery({
      kernel: findingTurns(kernel, () => Promise.resolve(turn)),
      repository,
      clock,
    });
    const client = await a2aClient(await listen(recovered), 'thinker', 'none');
    let canceled: Promise<unknown> | undefined;
    cancelOnRead = async () => {
      canceled = client.cancelTask({ tenant: '', id, metadata: undefined });
      await canceled;
    };
    const round = logger.next('info');
    await clock.advance(TASK_RECOVERY_RETRY_MS);
    await round;
    expect(canceled).toBeDefined();
    expect((await harness.repository.get(id))?.state).toBe('TASK_STATE_CANCELED');
    here = true;
    await clock.advance(TASK_RECOVERY_RETRY_MS);
    await waitFor("the task's turn to be canceled", () => turnCanceled === 1);
  });

  it("goes on when the store fails to write a task's outcome: the task is written in the next round, the tasks after it too", async () => {
    const { harness, tasks } = await workingTasks('one', 'two');
    const { kernel, clock } = harness.host;
    let failures = 1;
    const repository = repositoryWith(harness.repository, {
      put: (record) =>
        record.id === tasks[0]?.id && failures-- > 0 ? Promise.reject(new StoreError('the database is out of reach')) : harness.repository.put(record),
    });
    const logger = createRecordingLogger();
    const told = logger.next('error');
    server = recoveryServer({ kernel, repository, logger, clock });
    // The tasks met after it wait with it (none, when it was met last).
    expect((await told).message).toMatch(/could not yet say what became of the turns of [12] unfinished A2A task\(s\) \(the store could not answer\)/);
    await clock.advance(TASK_RECOVERY_RETRY_MS);
    for (const task of tasks) {
      await waitFor('the task to be failed', async () => (await harness.repository.get(task.id))?.state === 'TASK_STATE_FAILED');
    }
  });

  it('tells of the store failing, not of a turn not here, when both kept tasks from being settled at start', async () => {
    const { harness } = await workingTasks('one', 'two');
    const { kernel, clock } = harness.host;
    const stranded = runningTurn({ here: () => false, result: () => Promise.reject(TURN_RUNNING()) });
    // The first task met: its turn runs, not here; the second: the store fails.
    let lookups = 0;
    const finding = (): Promise<KeyedTurn> =>
      (lookups += 1) === 1 ? Promise.resolve(stranded) : Promise.reject(new StoreError('the database is out of reach'));
    const logger = createRecordingLogger();
    const told = logger.next('error');
    server = recoveryServer({
      kernel: findingTurns(kernel, finding),
      repository: harness.repository,
      logger,
      clock,
    });
    expect((await told).message).toMatch(/of 2 unfinished A2A task\(s\) \(the store could not answer\)/);
  });

  it('waits for a turn not here as for one on another node when the store leases turns (PostgreSQL): taken over, its end settles the task within seconds', async () => {
    const { harness, tasks } = await workingTasks('Think about this');
    const { kernel, clock } = harness.host;
    let takenOver = false;
    const turn = runningTurn({ here: () => takenOver, result: () => (takenOver ? Promise.resolve(RESULT) : Promise.reject(TURN_RUNNING())) });
    const logger = createRecordingLogger();
    const asleep = clock.pending();
    server = recoveryServer({
      kernel: findingTurns(kernel, () => Promise.resolve(turn)),
      repository: harness.repository,
      logger,
      clock,
      leasesTurns: true,
    });
    await waitFor('the recovery to wait on the clock', () => clock.pending() > asleep);
    takenOver = true;
    await clock.advance(2000);
    await waitFor('the task to be completed', async () => (await harness.repository.get(tasks[0]?.id ?? ''))?.state === 'TASK_STATE_COMPLETED');
    expect(logger.entries.filter((entry) => entry.level === 'error' || entry.level === 'warn')).toEqual([]);
  });

  it('shows the approval a turn taken over after the start asks for (PostgreSQL): the task is input-required', async () => {
    const { harness, tasks } = await workingTasks('Think about this');
    const { kernel, clock } = harness.host;
    let takenOver = false;
    const turn = runningTurn({
      here: () => takenOver,
      result: () => (takenOver ? new Promise<never>(() => undefined) : Promise.reject(TURN_RUNNING())),
      // Its events while it runs here: it asks for an approval, then waits.
      follow: async function* () {
        if (!takenOver) return;
        yield approvalRequest('first');
        await new Promise<never>(() => undefined);
      },
    });
    const asleep = clock.pending();
    server = recoveryServer({
      kernel: findingTurns(kernel, () => Promise.resolve(turn)),
      repository: harness.repository,
      logger: createRecordingLogger(),
      clock,
      leasesTurns: true,
    });
    await waitFor('the recovery to wait on the clock', () => clock.pending() > asleep);
    takenOver = true;
    await clock.advance(2000);
    const shown = await waitFor('the task to be input-required', async () => {
      const record = await harness.repository.get(tasks[0]?.id ?? '');
      return record?.state === 'TASK_STATE_INPUT_REQUIRED' ? record : undefined;
    });
    expect(JSON.stringify(shown.task)).toContain('approval first');
  });

  it("cancels the turn of a task its client canceled before the turn was taken over (PostgreSQL), the takeover landing as the turn's journal is read", async () => {
    const { harness, tasks } = await workingTasks('Think about this');
    const { kernel, clock } = harness.host;
    let takenOver = false;
    // Once the client canceled, the takeover lands at the next read of the turn's journal (its look-up, or its result's).
    let landing = false;
    const read = (): void => {
      if (landing) takenOver = true;
    };
    let turnCanceled = 0;
    const turn = runningTurn({
      here: () => takenOver,
      result: () => {
        read();
        return takenOver ? new Promise<never>(() => undefined) : Promise.reject(TURN_RUNNING());
      },
      cancel: () => (turnCanceled += 1),
    });
    const asleep = clock.pending();
    server = recoveryServer({
      kernel: findingTurns(kernel, () => {
        read();
        return Promise.resolve(turn);
      }),
      repository: harness.repository,
      logger: createRecordingLogger(),
      clock,
      leasesTurns: true,
    });
    await waitFor('the recovery to wait on the clock', () => clock.pending() > asleep);
    const client = await a2aClient(await listen(server), 'thinker', 'none');
    const canceled = await client.cancelTask({ tenant: '', id: tasks[0]?.id ?? '', metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(turnCanceled).toBe(0);
    landing = true;
    await clock.advance(2000);
    await waitFor("the task's turn to be canceled", () => turnCanceled === 1);
  });

  it("tells a task's webhooks once that it canceled when a round finds its turn canceled", async () => {
    const { harness, tasks } = await workingTasks('Think about this');
    const { kernel, clock } = harness.host;
    const id = tasks[0]?.id ?? '';
    // Running, not here, at start (no other node); canceled by the next round.
    let lookups = 0;
    const canceledTurn: KeyedTurn = {
      state: 'done',
      here: false,
      result: () => Promise.reject(new TurnCancelledError('the turn was cancelled by its owner')),
      follow: async function* () {},
      cancel: () => false,
    };
    const finding = (): Promise<KeyedTurn> =>
      Promise.resolve((lookups += 1) === 1 ? runningTurn({ here: () => false, result: () => Promise.reject(TURN_RUNNING()) }) : canceledTurn);
    // The task's webhook: a loopback address, refused at each delivery, which records each.
    const configs = new InMemoryA2aPushConfigRepository();
    await configs.put({
      taskId: id,
      id: 'c1',
      url: 'http://127.0.0.1:9/hook',
      token: null,
      authentication: null,
      wireVersion: '1.0',
      createdBy: 'local',
      createdAt: 0,
    });
    const records: Omit<EventRecord, 'seq'>[] = [];
    const { recovered } = await startedRecovery({
      kernel: findingTurns(kernel, finding),
      repository: harness.repository,
      clock,
      push: { repository: configs, clock, record: (event) => Promise.resolve(void records.push(event)) },
    });
    await clock.advance(TASK_RECOVERY_RETRY_MS);
    await waitFor('the task to be canceled', async () => (await harness.repository.get(id))?.state === 'TASK_STATE_CANCELED');
    await waitFor('the webhook to be told', () => records.length > 0);
    // Every delivery taken is done.
    await recovered.drain();
    expect(records.filter((record) => record.data['state'] === 'TASK_STATE_CANCELED')).toHaveLength(1);
  });

  it('leaves a canceled task whose turn cannot be canceled for an unexpected failure, logged once, and goes on with the tasks after it', async () => {
    const { harness, tasks } = await workingTasks('one', 'two');
    const { kernel, clock } = harness.host;
    const [broken, fine] = [tasks[0]?.id ?? '', tasks[1]?.id ?? ''];
    let brokenLookups = 0;
    let fineLookups = 0;
    // At start, both turns run, not here (no other node); then the first's look-up fails unexpectedly, the second's turn has ended.
    const finding = (key: string): Promise<KeyedTurn> => {
      if (key.includes(broken) && (brokenLookups += 1) > 1) return Promise.reject(new Error('the journal holds a record it cannot read'));
      if (key.includes(fine) && (fineLookups += 1) > 1)
        return Promise.resolve({ ...runningTurn({ here: () => false }), state: 'done', result: () => Promise.resolve(RESULT) });
      return Promise.resolve(runningTurn({ here: () => false, result: () => Promise.reject(TURN_RUNNING()) }));
    };
    const { recovered, logger } = await startedRecovery({
      kernel: findingTurns(kernel, finding),
      repository: harness.repository,
      clock,
    });
    const client = await a2aClient(await listen(recovered), 'thinker', 'none');
    expect((await client.cancelTask({ tenant: '', id: broken, metadata: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    for (let round = 1; round <= 3; round += 1) await clock.advance(TASK_RECOVERY_RETRY_MS);
    await waitFor('the second task to be completed', async () => (await harness.repository.get(fine))?.state === 'TASK_STATE_COMPLETED');
    // Its watch's look-up at the cancel, and one in the first round: then it is left.
    expect(brokenLookups).toBe(3);
    const errors = logger.entries.filter((entry) => entry.level === 'error');
    expect(errors.map((entry) => entry.message)).toEqual([expect.stringMatching(/could not stop the turn of a canceled A2A task/)]);
  });

  it('logs no next round when the server closes during a round', async () => {
    const { harness } = await workingTasks('one', 'two');
    const { kernel, clock } = harness.host;
    let lookups = 0;
    // Not here at start (no other node); the server closes at the first look-up of a round.
    const finding = (): Promise<KeyedTurn> => {
      if ((lookups += 1) === 3) server?.close();
      return Promise.resolve(runningTurn({ here: () => false, result: () => Promise.reject(TURN_RUNNING()) }));
    };
    const { logger } = await startedRecovery({
      kernel: findingTurns(kernel, finding),
      repository: harness.repository,
      clock,
    });
    await clock.advance(TASK_RECOVERY_RETRY_MS);
    await waitFor('the round to look a turn up', () => lookups === 3);
    await nextTurn();
    await nextTurn();
    expect(logger.entries.filter((entry) => /asked again/.test(entry.message ?? ''))).toHaveLength(1);
  });

  it("shows a resumed turn's approval once a write of the task failed: the next change is written", async () => {
    const { harness, tasks } = await workingTasks('Think about this');
    const { kernel, clock } = harness.host;
    const id = tasks[0]?.id ?? '';
    // The turn's events, given one at a time.
    const events: AgentEvent[] = [];
    let wake: () => void = () => undefined;
    const turn: KeyedTurn = {
      ...runningTurn({ here: () => true }),
      follow: async function* () {
        for (;;) {
          const event = events.shift();
          if (event !== undefined) yield event;
          else await new Promise<void>((resolve) => (wake = resolve));
        }
      },
    };
    const emit = (event: AgentEvent): void => {
      events.push(event);
      wake();
    };
    let failures = 1;
    const repository = repositoryWith(harness.repository, {
      put: (record) =>
        record.state === 'TASK_STATE_INPUT_REQUIRED' && failures-- > 0
          ? Promise.reject(new StoreError('the database is out of reach'))
          : harness.repository.put(record),
    });
    const logger = createRecordingLogger();
    const failed = logger.next('warn');
    server = recoveryServer({
      kernel: findingTurns(kernel, () => Promise.resolve(turn)),
      repository,
      logger,
      clock,
    });
    emit(approvalRequest('first'));
    expect((await failed).message).toMatch(/could not show an A2A task waiting for an approval/);
    expect((await harness.repository.get(id))?.state).toBe('TASK_STATE_WORKING');
    emit(approvalRequest('second'));
    const shown = await waitFor('the task to be input-required', async () => {
      const record = await harness.repository.get(id);
      return record?.state === 'TASK_STATE_INPUT_REQUIRED' ? record : undefined;
    });
    expect(JSON.stringify(shown.task)).toContain('approval second');
  });

  it("stops quietly at the server's close while a resumed turn runs: no warning that its end could not be read", async () => {
    const { harness } = await workingTasks('Think about this');
    const { kernel, clock } = harness.host;
    let end: (error: Error) => void = () => undefined;
    const ended = new Promise<never>((_resolve, reject) => (end = reject));
    const turn = runningTurn({ here: () => true, result: () => ended });
    const logger = createRecordingLogger();
    const going = logger.next('info');
    server = recoveryServer({
      kernel: findingTurns(kernel, () => Promise.resolve(turn)),
      repository: harness.repository,
      logger,
      clock,
    });
    expect((await going).message).toMatch(/go on with their resumed turns/);
    server.close();
    // The kernel's shutdown ends the turn.
    end(new LoomError('AGENT_STATE', 'user', 'agent "thinker" stopped because Loom is shutting down during the turn'));
    await nextTurn();
    await nextTurn();
    expect(logger.entries.filter((entry) => entry.level === 'error' || entry.level === 'warn')).toEqual([]);
  });

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
    const repository = repositoryWith(tasks, {
      get: async (id) => {
        const read = await tasks.get(id);
        const cancel = id === task.id ? cancelOnRead : undefined;
        cancelOnRead = undefined;
        await cancel?.();
        return read;
      },
    });
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

  it.each(JOURNALED_BEFORE)(
    'meets, after an upgrade, the turn of a task whose message and context ids are past 128 characters, journaled by the daemon before: %s',
    async (_when, keyBefore) => {
      const tasks = new InMemoryA2aTaskRepository();
      const { task } = await taskBeforeUpgrade(tasks, keyBefore, { text: 'The story, resumed.' });
      next = await startA2a(dir.path, { repository: tasks, daemon: true });
      const done = await waitFor('the task to end', async () => {
        const record = await tasks.get(task.id);
        return record?.finished === true ? record : undefined;
      });
      expect(done.state).toBe('TASK_STATE_COMPLETED');
      expect(JSON.stringify(done.task)).toContain('The story, resumed.');
      // Its turn ran once, resumed: no second turn for the same message.
      expect(model.requests).toHaveLength(2);
    },
  );

  it.each(JOURNALED_BEFORE)(
    'gives the same message sent again after an upgrade, its ids past 128 characters, the turn it started, journaled by the daemon before: %s',
    async (_when, keyBefore) => {
      const tasks = new InMemoryA2aTaskRepository();
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const { task, sent } = await taskBeforeUpgrade(tasks, keyBefore, { text: 'The story, resumed.', gate }, { text: 'A second story.' });
      next = await startA2a(dir.path, { repository: tasks, daemon: true });
      await waitFor('the resumed model call', () => model.requests.length >= 2);
      // Its client sends the message to the task again (its id the same), and waits for the answer.
      const again = (await a2aClient(next.url, 'slow', 'none')).sendMessage({
        ...sent,
        message: { ...sent.message, taskId: task.id },
        configuration: undefined,
      });
      await waitFor('the message to reach the task', async () => {
        const record = await tasks.get(task.id);
        return (record?.task as { history?: { role?: string }[] } | undefined)?.history?.filter((entry) => entry.role === 'ROLE_USER').length === 2;
      });
      release();
      const answered = (await again) as Task;
      expect(answered.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(textOf(answered.status?.message)).toBe('The story, resumed.');
      // One turn for the message: the one resumed, no second.
      expect(model.requests).toHaveLength(2);
    },
  );

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
    server = recoveryServer({ kernel: flaky, repository: first.repository, logger, clock });
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
    server = recoveryServer({ kernel: unreachable, repository: first.repository, logger, clock });
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
      cancel: () => false,
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
    const { logger, told } = await startedRecovery({ kernel: strandedKernel, repository: first.repository, clock });
    expect(told.message).toMatch(/could not yet say what became of the turns of 1 unfinished A2A task\(s\) \(the store says they run, not here\)/);
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
    let canceled = 0;
    const runningHere: KeyedTurn = {
      state: 'running',
      here: true,
      result: () => new Promise<never>(() => undefined),
      follow: async function* () {},
      cancel: () => {
        canceled += 1;
        return true;
      },
    };
    let lookups = 0;
    const unreachable = new Proxy(kernel, {
      get: (target, property, receiver): unknown => {
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
    server = recoveryServer({ kernel: unreachable, repository: first.repository, logger, clock });
    // At start, the first look-up failed: the others wait with it, untried.
    expect((await told).bindings).toMatchObject({ tasks: 3 });
    expect(lookups).toBe(1);
    // Its client cancels the second task while it waits (saved canceled by the SDK, with no executor): its turn is canceled.
    const canceling = await a2aClient(await listen(server), 'thinker', 'none');
    expect((await canceling.cancelTask({ tenant: '', id: tasks[1]?.id ?? '', metadata: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
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
