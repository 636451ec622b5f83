import { beforeEach, describe, expect, it } from 'vitest';
import type { AgentRecord, MemoryRecord, Store } from '../../../src/contracts/index.ts';
import { StoreNotFoundError } from '../../../src/errors/index.ts';
import { createAgentIn, memoryRecord, type StoreContext } from './fixtures.ts';

/** The contract of `store.memory`. */
export function describeMemoryContract(context: StoreContext): void {
  describe('memory', () => {
    let store: Store;
    beforeEach(() => {
      store = context.store;
    });
    const createAgent = (id: string, overrides: Partial<AgentRecord> = {}) => createAgentIn(store, id, overrides);

    it('memory.put() stores any JSON value, which get() returns', async () => {
      await createAgent('a1');
      const values: MemoryRecord['value'][] = ['text', 42, 0.5, true, null, [1, 'two'], { nested: { list: [] } }];

      for (const [index, value] of values.entries()) await store.memory.put(memoryRecord('a1', `k${index}`, value));

      for (const [index, value] of values.entries()) {
        expect(await store.memory.get('a1', `k${index}`)).toEqual(memoryRecord('a1', `k${index}`, value));
      }
    });

    it('memory.put() replaces the value of an existing key', async () => {
      await createAgent('a1');
      await store.memory.put(memoryRecord('a1', 'k', 'old'));

      await store.memory.put({ agentId: 'a1', key: 'k', value: { v: 'new' }, updatedAt: 9_000 });

      expect(await store.memory.get('a1', 'k')).toEqual({ agentId: 'a1', key: 'k', value: { v: 'new' }, updatedAt: 9_000 });
      expect(await store.memory.list('a1')).toHaveLength(1);
    });

    it('memory.get() returns undefined for an unknown key or agent', async () => {
      await createAgent('a1');
      await store.memory.put(memoryRecord('a1', 'k'));

      expect(await store.memory.get('a1', 'other')).toBeUndefined();
      expect(await store.memory.get('nobody', 'k')).toBeUndefined();
    });

    it('memory.list() returns all of an agent’s keys in key order, and no other agent’s', async () => {
      await createAgent('a1');
      await createAgent('a2');
      for (const key of ['notes/b', 'config', 'notes/a', 'zeta']) await store.memory.put(memoryRecord('a1', key));
      await store.memory.put(memoryRecord('a2', 'alpha'));

      expect((await store.memory.list('a1')).map((record) => record.key)).toEqual(['config', 'notes/a', 'notes/b', 'zeta']);
      expect(await store.memory.list('nobody')).toEqual([]);
    });

    it('memory.list() with a prefix returns only the keys that start with it, in key order', async () => {
      await createAgent('a1');
      await createAgent('a2');
      for (const key of ['notes/b', 'notes', 'notes/a', 'note', 'notesx', 'other', 'z']) {
        await store.memory.put(memoryRecord('a1', key));
      }
      await store.memory.put(memoryRecord('a2', 'notes/c'));

      expect((await store.memory.list('a1', 'notes/')).map((record) => record.key)).toEqual(['notes/a', 'notes/b']);
      expect((await store.memory.list('a1', 'notes')).map((record) => record.key)).toEqual(['notes', 'notes/a', 'notes/b', 'notesx']);
      expect(await store.memory.list('a1', 'missing')).toEqual([]);
      expect(await store.memory.list('a1', '')).toHaveLength(7);
    });

    it('memory.list() treats % and _ in a prefix literally, not as wildcards', async () => {
      await createAgent('a1');
      for (const key of ['100%', '100x', '1000', 'a_b', 'axb', 'a_', 'ab']) await store.memory.put(memoryRecord('a1', key));

      expect((await store.memory.list('a1', '100%')).map((record) => record.key)).toEqual(['100%']);
      expect((await store.memory.list('a1', '%')).map((record) => record.key)).toEqual([]);
      expect((await store.memory.list('a1', 'a_')).map((record) => record.key)).toEqual(['a_', 'a_b']);
      expect((await store.memory.list('a1', '_')).map((record) => record.key)).toEqual([]);
    });

    it('memory.list() matches a prefix case-sensitively', async () => {
      await createAgent('a1');
      for (const key of ['Note', 'note', 'NOTE/x']) await store.memory.put(memoryRecord('a1', key));

      expect((await store.memory.list('a1', 'note')).map((record) => record.key)).toEqual(['note']);
      expect((await store.memory.list('a1', 'N')).map((record) => record.key)).toEqual(['NOTE/x', 'Note']);
    });

    it('memory.list() sorts keys beyond ASCII by code point, and finds a prefix among them', async () => {
      await createAgent('a1');
      for (const key of ['😀/b', 'ｚ', '😀/a', 'é', 'z', '😀', 'Z']) await store.memory.put(memoryRecord('a1', key, null));

      expect((await store.memory.list('a1')).map((record) => record.key)).toEqual(['Z', 'z', 'é', 'ｚ', '😀', '😀/a', '😀/b']);
      expect((await store.memory.list('a1', '😀/')).map((record) => record.key)).toEqual(['😀/a', '😀/b']);
    });

    it('memory.put() refuses a key of an unknown agent with StoreNotFoundError', async () => {
      const attempt = store.memory.put(memoryRecord('nobody', 'k'));

      await expect(attempt).rejects.toBeInstanceOf(StoreNotFoundError);
      await expect(attempt).rejects.toThrow('agent "nobody" does not exist');
    });

    it('memory.delete() removes the key and says whether it existed', async () => {
      await createAgent('a1');
      await store.memory.put(memoryRecord('a1', 'k'));
      await store.memory.put(memoryRecord('a1', 'kept'));

      expect(await store.memory.delete('a1', 'k')).toBe(true);
      expect(await store.memory.delete('a1', 'k')).toBe(false);
      expect(await store.memory.delete('nobody', 'kept')).toBe(false);
      expect((await store.memory.list('a1')).map((record) => record.key)).toEqual(['kept']);
    });
  });
}
