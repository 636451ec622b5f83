/**
 * The A2A task store at the daemon's stop (src/a2a/bounded-task-store.ts): once the store closed, a
 * write is dropped and a read answers the task as this process last wrote it, only then; any other
 * failure is thrown.
 */
import { Task, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { InMemoryA2aTaskRepository, type A2aTaskRepository } from '../../src/a2a/index.ts';
import { BoundedTaskStore } from '../../src/a2a/bounded-task-store.ts';
import { StoreClosedError, StoreError } from '../../src/errors/index.ts';

/** A repository that fails as `failure` says once set (the store closed, or out of reach). */
function failingRepository(): { repository: A2aTaskRepository; tasks: InMemoryA2aTaskRepository; fail: (error: Error) => void } {
  const tasks = new InMemoryA2aTaskRepository();
  let failure: Error | undefined;
  const checked =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      failure === undefined ? call(...args) : Promise.reject(failure);
  const repository: A2aTaskRepository = {
    get: checked((id) => tasks.get(id)),
    put: checked((record) => tasks.put(record)),
    delete: checked((id) => tasks.delete(id)),
    count: checked(() => tasks.count()),
    oldestFinished: checked(() => tasks.oldestFinished()),
    list: checked((query) => tasks.list(query)),
  };
  return { repository, tasks, fail: (error) => (failure = error) };
}

const task = (id: string, state: TaskState): Task =>
  Task.fromJSON({ id, contextId: 'ctx', status: { state: taskStateToJSON(state) }, history: [], artifacts: [] });

describe('the A2A task store at the stop', () => {
  it('answers a read, once the store closed, with the task this process last wrote unfinished; any other task is not known missing: the failure is thrown', async () => {
    const { repository, fail } = failingRepository();
    const stopping = new AbortController();
    const store = new BoundedTaskStore({ repository, now: () => 0, stopping: stopping.signal });
    await store.save(task('written', TaskState.TASK_STATE_WORKING));
    stopping.abort();
    fail(new StoreClosedError('the store is closed'));
    expect((await store.load('written'))?.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    await expect(store.load('other')).rejects.toThrow(StoreClosedError);
    // A write that meets it closed is dropped.
    await expect(store.save(task('written', TaskState.TASK_STATE_CANCELED))).resolves.toBeUndefined();
  });

  it('forgets a task whose end it saved, the save dropped too (the task ended on another node first)', async () => {
    const { repository, tasks, fail } = failingRepository();
    const stopping = new AbortController();
    const store = new BoundedTaskStore({ repository, now: () => 0, stopping: stopping.signal });
    await store.save(task('elsewhere', TaskState.TASK_STATE_WORKING));
    // Another node completes it; this one's cancel of it is dropped: the first end wins.
    const stored = await tasks.get('elsewhere');
    if (stored === undefined) throw new Error('not stored');
    await tasks.put({ ...stored, state: 'TASK_STATE_COMPLETED', finished: true });
    await store.save(task('elsewhere', TaskState.TASK_STATE_CANCELED));
    expect((await tasks.get('elsewhere'))?.state).toBe('TASK_STATE_COMPLETED');
    stopping.abort();
    fail(new StoreClosedError('the store is closed'));
    // Not answered working, as this process wrote it once.
    await expect(store.load('elsewhere')).rejects.toThrow(StoreClosedError);
  });

  it('throws any other failure at the stop, and the store closed before it', async () => {
    const { repository, fail } = failingRepository();
    const stopping = new AbortController();
    const store = new BoundedTaskStore({ repository, now: () => 0, stopping: stopping.signal });
    await store.save(task('written', TaskState.TASK_STATE_WORKING));
    fail(new StoreClosedError('the store is closed'));
    await expect(store.save(task('written', TaskState.TASK_STATE_WORKING))).rejects.toThrow(StoreClosedError);
    await expect(store.load('written')).rejects.toThrow(StoreClosedError);
    stopping.abort();
    fail(new StoreError('the database is out of reach'));
    await expect(store.save(task('written', TaskState.TASK_STATE_WORKING))).rejects.toThrow('the database is out of reach');
    await expect(store.load('written')).rejects.toThrow('the database is out of reach');
  });
});
