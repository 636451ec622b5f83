import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BoundedTaskStore } from '../../src/a2a/index.ts';
import type { TaskRepository } from '../../src/contracts/index.ts';
import { openSqliteStore } from '../../src/store/index.ts';
import { Task, TaskState } from '@a2a-js/sdk';
import { makeTempDir } from '../support/test-kernel.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-sqlite-');
});
afterEach(async () => {
  await dir.remove();
});

/** The store's tasks domain on a real SQLite file (migrated like any Loom database). */
function open(path: string): { repository: TaskRepository; db: { close(): Promise<void> } } {
  const store = openSqliteStore({ path });
  return { repository: store.tasks, db: { close: () => store.close() } };
}

function task(id: string, state: TaskState): Task {
  return Task.fromJSON({
    id,
    contextId: 'ctx',
    status: { state: TaskState[state] },
    history: [{ messageId: `m-${id}`, role: 'ROLE_USER', parts: [{ text: `hello ${id}` }] }],
  });
}

describe("the store's A2A tasks on SQLite", () => {
  it('persists tasks across a reopen, bounded with the oldest finished task evicted first', async () => {
    const path = join(dir.path, 'loom.db');
    let clock = 0;
    const first = open(path);
    const store = new BoundedTaskStore({ repository: first.repository, now: () => (clock += 1), maxTasks: 3 });
    await store.save(task('running', TaskState.TASK_STATE_WORKING));
    await store.save(task('done-1', TaskState.TASK_STATE_COMPLETED));
    await store.save(task('done-2', TaskState.TASK_STATE_FAILED));
    await store.save(task('new', TaskState.TASK_STATE_SUBMITTED));
    expect(await first.repository.count()).toBe(3);
    expect(await store.load('done-1')).toBeUndefined();
    await first.db.close();

    const second = open(path);
    const reopened = new BoundedTaskStore({ repository: second.repository, now: () => (clock += 1), maxTasks: 3 });
    const loaded = await reopened.load('running');
    expect(loaded?.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(loaded?.history[0]?.parts[0]?.content).toEqual({ $case: 'text', value: 'hello running' });
    const listed = await reopened.list({
      tenant: '',
      contextId: 'ctx',
      status: TaskState.TASK_STATE_UNSPECIFIED,
      pageSize: 2,
      pageToken: '',
      statusTimestampAfter: undefined,
    });
    expect(listed).toMatchObject({ totalSize: 3, pageSize: 2, nextPageToken: '2' });
    expect(listed.tasks.map((entry) => entry.id)).toEqual(['new', 'done-2']);
    await second.db.close();
  });
});
