/**
 * The key of the turn an A2A message starts (the task and the client's message id) and the
 * conversation of its context: readable when short, and bounded whatever the client sends (keys
 * are indexed: PostgreSQL refuses an index entry of a few KB).
 */
import { type Task, TaskState } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { taskThread, taskTurnKey, taskTurnPlaces } from '../../src/a2a/task-turn-places.ts';
import type { Kernel } from '../../src/kernel/index.ts';
import { agentToml } from '../http/api-harness.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { startA2a } from './a2a-harness.ts';
import { a2aClient, textMessage } from './a2a-sdk-client.ts';

const model = useScriptedModelServer();

describe('taskTurnKey and taskThread', () => {
  it('keeps a message id of ordinary length as it is', () => {
    expect(taskTurnKey('task-1', 'm-1')).toBe('a2a:task-1:m-1');
  });

  it('bounds a long message id by its SHA-256, one key per id', () => {
    const long = 'x'.repeat(10_000);
    const key = taskTurnKey('task-1', long);
    expect(key.length).toBeLessThan(200);
    expect(key).toMatch(/^a2a:task-1:sha256:[0-9a-f]{64}$/);
    expect(taskTurnKey('task-1', long)).toBe(key);
    expect(taskTurnKey('task-1', `${long}y`)).not.toBe(key);
  });

  it("bounds a client's context id the same way, in the conversation the task's turns go to", () => {
    expect(taskThread('ctx-1')).toBe('a2a:ctx-1');
    expect(taskThread('c'.repeat(5_000))).toMatch(/^a2a:sha256:[0-9a-f]{64}$/);
  });

  it('looks a turn up where this version journals it, then where a daemon before the upgrade did, for ids past 128 characters only', () => {
    expect(taskTurnPlaces('task-1', 'm-1', 'ctx-1')).toEqual([{ key: 'a2a:task-1:m-1', thread: 'a2a:ctx-1' }]);
    const [message, context] = ['m'.repeat(200), 'c'.repeat(200)];
    expect(taskTurnPlaces('task-1', message, context)).toEqual([
      { key: taskTurnKey('task-1', message), thread: taskThread(context) },
      { key: taskTurnKey('task-1', message), thread: `a2a:${context}` },
      { key: `a2a:task-1:${message}`, thread: `a2a:${context}` },
    ]);
    expect(taskTurnPlaces('task-1', message, 'ctx-1')).toEqual([
      { key: taskTurnKey('task-1', message), thread: 'a2a:ctx-1' },
      { key: `a2a:task-1:${message}`, thread: 'a2a:ctx-1' },
    ]);
  });
});

describe('the turn of a message that makes a task', () => {
  it('is looked up nowhere a daemon before an upgrade journaled turns, whatever its ids: the task is new', async () => {
    const dir = await makeTempDir('loom-a2a-turn-key-');
    // The kernel's look-ups of a turn by its key, as the server asks them.
    const looked: string[] = [];
    const counting = (kernel: Kernel): Kernel =>
      new Proxy(kernel, {
        get: (target, property, receiver): unknown =>
          property === 'keyedTurn'
            ? (...args: Parameters<Kernel['keyedTurn']>) => {
                looked.push(args[1]);
                return target.keyedTurn(...args);
              }
            : Reflect.get(target, property, receiver),
      });
    const harness = await startA2a(dir.path, { kernel: counting });
    try {
      await harness.host.kernel.spawn(manifest(agentToml('echo', model.url)));
      model.script([{ text: 'Hello.' }]);
      const sent = textMessage('Hi');
      const [messageId, contextId] = [`m-${'x'.repeat(200)}`, `c-${'y'.repeat(200)}`];
      const task = (await (await a2aClient(harness.url, 'echo', 'none')).sendMessage({ ...sent, message: { ...sent.message, messageId, contextId } })) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(looked).toEqual([]);
    } finally {
      await harness.close();
      await dir.remove();
    }
  });
});
