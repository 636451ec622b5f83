import { describe, expect, it } from 'vitest';
import type { A2aPushConfigRecord, TaskRecord } from '../../../src/contracts/index.ts';
import type { StoreContext } from './fixtures.ts';

const config = (taskId: string, id: string, changes: Partial<A2aPushConfigRecord> = {}): A2aPushConfigRecord => ({
  taskId,
  id,
  url: 'https://hooks.example.com/a2a?inbox=7',
  token: 'tok-ü-1',
  authentication: { scheme: 'Bearer', credentials: 'secret' },
  wireVersion: '1.0',
  createdBy: 'ci',
  createdAt: 1_000,
  ...changes,
});

const task = (id: string): TaskRecord => ({
  id,
  contextId: 'ctx',
  agent: 'helper',
  state: 'TASK_STATE_WORKING',
  finished: false,
  task: { id },
  createdAt: 1,
  updatedAt: 1,
});

/** The A2A push-notification configs part of the Store contract. */
export function describeA2aPushConfigsContract(context: StoreContext): void {
  describe('A2A push-notification configs', () => {
    it('stores configs per task, reads them back exactly (oldest first), and replaces one by id keeping when it was made', async () => {
      const { a2aPushConfigs } = context.store;
      await a2aPushConfigs.put(config('t1', 'b', { createdAt: 2_000 }));
      await a2aPushConfigs.put(config('t1', 'a', { token: null, authentication: null, wireVersion: '0.3' }));
      await a2aPushConfigs.put(config('t2', 'a'));
      expect(await a2aPushConfigs.get('t1', 'a')).toEqual(config('t1', 'a', { token: null, authentication: null, wireVersion: '0.3' }));
      expect((await a2aPushConfigs.list('t1')).map((record) => record.id)).toEqual(['a', 'b']);
      expect(await a2aPushConfigs.get('t1', 'c')).toBeUndefined();
      expect(await a2aPushConfigs.list('nope')).toEqual([]);

      await a2aPushConfigs.put(config('t1', 'b', { url: 'https://other.example.com/hook', token: 'tok-2', createdAt: 9_000 }));
      expect(await a2aPushConfigs.get('t1', 'b')).toEqual(config('t1', 'b', { url: 'https://other.example.com/hook', token: 'tok-2', createdAt: 2_000 }));
    });

    it('deletes one config, saying whether there was one', async () => {
      const { a2aPushConfigs } = context.store;
      await a2aPushConfigs.put(config('t1', 'a'));
      await a2aPushConfigs.put(config('t1', 'b'));
      expect(await a2aPushConfigs.delete('t1', 'a')).toBe(true);
      expect(await a2aPushConfigs.delete('t1', 'a')).toBe(false);
      expect(await a2aPushConfigs.delete('t2', 'b')).toBe(false);
      expect((await a2aPushConfigs.list('t1')).map((record) => record.id)).toEqual(['b']);
    });

    it('goes with its task when the task is deleted (evicted)', async () => {
      const { store } = context;
      await store.tasks.put(task('t1'));
      await store.tasks.put(task('t2'));
      await store.a2aPushConfigs.put(config('t1', 'a'));
      await store.a2aPushConfigs.put(config('t2', 'a'));
      await store.tasks.delete('t1');
      expect(await store.a2aPushConfigs.list('t1')).toEqual([]);
      expect(await store.a2aPushConfigs.list('t2')).toHaveLength(1);
    });
  });
}
