import { describe, expect, it } from 'vitest';
import type { TaskRecord } from '../../../src/contracts/index.ts';
import type { StoreContext } from './fixtures.ts';

const task = (id: string, changes: Partial<TaskRecord> = {}): TaskRecord => ({
  id,
  contextId: 'ctx-1',
  agent: 'helper',
  state: 'TASK_STATE_WORKING',
  finished: false,
  task: { id, history: [{ parts: [{ text: 'héllo "there"' }] }] },
  createdAt: 1_000,
  updatedAt: 1_000,
  ...changes,
});

/** The A2A tasks part of the Store contract. */
export function describeTasksContract(context: StoreContext): void {
  describe('A2A tasks', () => {
    it('stores a task, reads it back exactly, and replaces it keeping when it was created', async () => {
      const { tasks } = context.store;
      await tasks.put(task('t1'));
      expect(await tasks.get('t1')).toEqual(task('t1'));
      expect(await tasks.get('nope')).toBeUndefined();

      await tasks.put(task('t1', { state: 'TASK_STATE_COMPLETED', finished: true, task: { id: 't1', done: true }, createdAt: 9_000, updatedAt: 2_000 }));
      expect(await tasks.get('t1')).toEqual(
        task('t1', { state: 'TASK_STATE_COMPLETED', finished: true, task: { id: 't1', done: true }, createdAt: 1_000, updatedAt: 2_000 }),
      );
      expect(await tasks.count()).toBe(1);
    });

    it('finds the finished task created first, and counts and deletes tasks', async () => {
      const { tasks } = context.store;
      expect(await tasks.oldestFinished()).toBeUndefined();
      await tasks.put(task('running', { createdAt: 1 }));
      await tasks.put(task('done-late', { finished: true, createdAt: 3 }));
      await tasks.put(task('done-early', { finished: true, createdAt: 2 }));
      await tasks.put(task('done-same-time', { finished: true, createdAt: 2 }));

      expect(await tasks.oldestFinished()).toBe('done-early');
      await tasks.delete('done-early');
      await tasks.delete('not-there');
      expect(await tasks.oldestFinished()).toBe('done-same-time');
      expect(await tasks.count()).toBe(3);
    });

    it('lists tasks newest first (the later stored first on a tie), filtered and paged, with the total', async () => {
      const { tasks } = context.store;
      await tasks.put(task('a', { updatedAt: 1_000 }));
      await tasks.put(task('b', { updatedAt: 3_000, contextId: 'ctx-2' }));
      await tasks.put(task('c', { updatedAt: 2_000, state: 'TASK_STATE_COMPLETED', finished: true }));
      await tasks.put(task('d', { updatedAt: 2_000, agent: 'other' }));
      const ids = async (query: Partial<Parameters<typeof tasks.list>[0]>): Promise<{ ids: string[]; total: number }> => {
        const { records, total } = await tasks.list({ limit: 10, offset: 0, ...query });
        return { ids: records.map((record) => record.id), total };
      };

      expect(await ids({})).toEqual({ ids: ['b', 'd', 'c', 'a'], total: 4 });
      expect(await ids({ limit: 2, offset: 1 })).toEqual({ ids: ['d', 'c'], total: 4 });
      expect(await ids({ offset: 10 })).toEqual({ ids: [], total: 4 });
      expect(await ids({ contextId: 'ctx-1' })).toEqual({ ids: ['d', 'c', 'a'], total: 3 });
      expect(await ids({ state: 'TASK_STATE_COMPLETED' })).toEqual({ ids: ['c'], total: 1 });
      expect(await ids({ contextId: 'ctx-1', updatedAfter: 2_000 })).toEqual({ ids: ['d', 'c'], total: 2 });
      expect(await ids({ agent: 'helper' })).toEqual({ ids: ['b', 'c', 'a'], total: 3 });
      expect(await ids({ agent: 'other', contextId: 'ctx-1' })).toEqual({ ids: ['d'], total: 1 });
    });
  });
}
