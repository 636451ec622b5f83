/**
 * Who cancels an A2A task, with API keys: the owner may cancel another key's task, and the turn's
 * end (its audit record, its session) names whoever cancelled it, as the API's cancel of a turn
 * does; the turn stays its creator's. The same for a task running live and one whose turn a
 * previous daemon left and this one resumed (src/a2a/task-recovery.ts).
 */
import { type Task, TaskState } from '@a2a-js/sdk';
import type { Context } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InMemoryA2aTaskRepository } from '../../src/a2a/index.ts';
import { type Caller, callerOf } from '../../src/kernel/index.ts';
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

/** The callers of the keys, as the API's auth gives them: the owner `admin`, the user `helper-bot` (agents `helper-*`). */
const CALLERS: Record<string, Caller> = {
  'admin-secret': callerOf({ name: 'admin', role: 'owner', agents: ['*'] }),
  'helper-secret': callerOf({ name: 'helper-bot', role: 'user', agents: ['helper-*'] }),
};
const keyOf = (c: Context): Caller | undefined => CALLERS[(c.req.header('authorization') ?? '').replace(/^Bearer /, '')];

/** `helper-bot`'s task to `helper-slow`, whose model call never answers, answered as it starts. */
async function helperTask(harness: A2aHarness): Promise<Task> {
  await harness.host.kernel.spawn(manifest(agentToml('helper-slow', model.url)));
  model.script([
    { text: 'never said', gate: new Promise<never>(() => undefined) },
    { text: 'never said either', gate: new Promise<never>(() => undefined) },
  ]);
  const sent = {
    ...textMessage('Tell me a story'),
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
  };
  const task = (await (await a2aClient(harness.url, 'helper-slow', 'helper-secret')).sendMessage(sent)) as Task;
  await waitFor('the first model call', () => model.requests.length >= 1);
  return task;
}

describe('an A2A task cancelled with API keys', () => {
  describe.each([
    ['running live', false],
    ['whose turn resumed after a restart', true],
  ])('%s', (_how, restarted) => {
    it.each([
      ['the owner', 'admin-secret', '"admin"'],
      ['its creator', 'helper-secret', '"helper-bot"'],
    ])("cancelled by %s: its turn is cancelled, its end naming who cancelled it, the turn still its creator's", async (_who, key, byline) => {
      const tasks = new InMemoryA2aTaskRepository();
      first = await startA2a(dir.path, { repository: tasks, callerOf: keyOf });
      const task = await helperTask(first);
      let daemon = first;
      if (restarted) {
        next = await startA2a(dir.path, { repository: tasks, daemon: true, callerOf: keyOf });
        daemon = next;
        await waitFor('the resumed model call', () => model.requests.length >= 2);
      }
      const canceled = await (await a2aClient(daemon.url, 'helper-slow', key)).cancelTask({ tenant: '', id: task.id, metadata: undefined });
      expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      const { kernel } = daemon.host;
      const [ended] = await waitFor("the turn's end in the audit log", async () => {
        const records = await kernel.audit({ agent: 'helper-slow', types: ['turn-cancel', 'turn-finish', 'turn-fail'] });
        return records.length > 0 ? records : undefined;
      });
      expect(ended?.type).toBe('turn-cancel');
      expect(ended?.data).toMatchObject({
        via: 'user:helper-bot',
        code: 'TURN_CANCELLED',
        message: expect.stringContaining(`cancelled by ${byline}`) as string,
      });
      expect(kernel.turnCounts().running).toBe(0);
    });
  });
});
