import { beforeEach, describe, expect, it } from 'vitest';
import type { AgentRecord, JsonObject, SessionRecord, Store } from '../../../src/contracts/index.ts';
import { StoreConflictError, StoreError, StoreNotFoundError } from '../../../src/errors/index.ts';
import { agentRecord, createAgentIn, memoryRecord, sessionOf, type StoreContext, usageRecord } from './fixtures.ts';

/** The contract of `store.agents` and `store.sessions`. */
export function describeAgentsContract(context: StoreContext): void {
  describe('agents', () => {
    let store: Store;
    beforeEach(() => {
      store = context.store;
    });
    const createAgent = (id: string, overrides: Partial<AgentRecord> = {}) => createAgentIn(store, id, overrides);

    it('agents.create() stores the agent and its session, which get() and list() return unchanged', async () => {
      const manifest: JsonObject = {
        name: 'researcher',
        description: 'Reads “sources” — and cites them 📚',
        model: { provider: 'anthropic', temperature: 0.2, maxTokens: 4096 },
        capabilities: ['fs.read:/workspace/**', { kind: 'net', hosts: ['*.example.org'] }],
        optional: null,
        enabled: true,
      };
      const agent = agentRecord('a1', { name: 'researcher', manifest, createdAt: 1_500, updatedAt: 1_600 });
      const session = sessionOf(agent, { messages: [{ role: 'system', content: 'hello' }] });

      await store.agents.create(agent, session);

      expect(await store.agents.get('a1')).toEqual(agent);
      expect(await store.agents.list()).toEqual([agent]);
      expect(await store.sessions.get(agent.sessionId)).toEqual(session);
    });

    it('agents.get() returns undefined for an unknown id', async () => {
      expect(await store.agents.get('nobody')).toBeUndefined();
    });

    it('agents.list() returns every agent oldest first', async () => {
      await createAgent('late', { createdAt: 3_000 });
      await createAgent('early', { createdAt: 1_000 });
      await createAgent('middle', { createdAt: 2_000 });

      expect((await store.agents.list()).map((agent) => agent.id)).toEqual(['early', 'middle', 'late']);
    });

    it('agents.create() stores a child agent with its parent id', async () => {
      await createAgent('parent');
      const child = await createAgent('child', { parentId: 'parent' });

      expect(await store.agents.get('child')).toEqual(child);
    });

    it('agents.create() refuses a second agent with the same id and writes nothing', async () => {
      const first = await createAgent('a1', { name: 'first' });
      const second = agentRecord('a1', { name: 'second', sessionId: 'session-second' });

      const attempt = store.agents.create(second, sessionOf(second));

      await expect(attempt).rejects.toBeInstanceOf(StoreConflictError);
      await expect(attempt).rejects.toThrow('cannot store agent "second": the id "a1" is already taken');
      expect(await store.agents.list()).toEqual([first]);
      expect(await store.sessions.get('session-second')).toBeUndefined();
    });

    it('agents.create() refuses a second agent with the same name and writes nothing', async () => {
      const first = await createAgent('a1', { name: 'x' });
      const second = agentRecord('a2', { name: 'x' });

      const attempt = store.agents.create(second, sessionOf(second));

      await expect(attempt).rejects.toBeInstanceOf(StoreConflictError);
      await expect(attempt).rejects.toThrow('cannot store agent "x": the name "x" is already taken');
      expect(await store.agents.list()).toEqual([first]);
      expect(await store.sessions.get(second.sessionId)).toBeUndefined();
    });

    it('agents.create() refuses a session id that is taken and leaves the agent unstored', async () => {
      const first = await createAgent('a1');
      const second = agentRecord('a2', { sessionId: first.sessionId });

      const attempt = store.agents.create(second, sessionOf(second));

      await expect(attempt).rejects.toBeInstanceOf(StoreConflictError);
      await expect(attempt).rejects.toThrow(`the session id "${first.sessionId}" is already taken`);
      expect(await store.agents.get('a2')).toBeUndefined();
      expect((await store.sessions.get(first.sessionId))?.agentId).toBe('a1');
    });

    it('agents.create() refuses a child whose parent does not exist, with StoreNotFoundError', async () => {
      const orphan = agentRecord('orphan', { parentId: 'missing' });

      const attempt = store.agents.create(orphan, sessionOf(orphan));

      await expect(attempt).rejects.toBeInstanceOf(StoreNotFoundError);
      await expect(attempt).rejects.toThrow('"missing"');
      expect(await store.agents.list()).toEqual([]);
    });

    it('agents.create() refuses a session that is not the agent’s own and writes nothing', async () => {
      await createAgent('other');
      const agent = agentRecord('a1');

      const attempt = store.agents.create(agent, sessionOf(agent, { agentId: 'other' }));

      await expect(attempt).rejects.toBeInstanceOf(StoreError);
      expect(await store.agents.get('a1')).toBeUndefined();
      expect(await store.sessions.get(agent.sessionId)).toBeUndefined();
    });

    it('agents.setState() changes the state and the update time', async () => {
      const agent = await createAgent('a1');

      await store.agents.setState('a1', 'suspended', 5_000);

      expect(await store.agents.get('a1')).toEqual({ ...agent, state: 'suspended', updatedAt: 5_000 });
      await store.agents.setState('a1', 'running', 6_000);
      expect(await store.agents.get('a1')).toMatchObject({ state: 'running', updatedAt: 6_000 });
    });

    it('agents.setState() refuses an unknown id with StoreNotFoundError', async () => {
      const attempt = store.agents.setState('nobody', 'suspended', 5_000);

      await expect(attempt).rejects.toBeInstanceOf(StoreNotFoundError);
      await expect(attempt).rejects.toThrow('"nobody"');
    });

    it('agents.delete() removes agents with their sessions, memory and descendants, and keeps usage and events', async () => {
      const parent = await createAgent('parent');
      const child = await createAgent('child', { parentId: 'parent' });
      const grandchild = await createAgent('grandchild', { parentId: 'child' });
      const bystander = await createAgent('bystander');
      await store.sessions.save({ id: 'extra', agentId: 'parent', messages: [], createdAt: 1, updatedAt: 1 });
      await store.memory.put(memoryRecord('parent', 'k'));
      await store.memory.put(memoryRecord('grandchild', 'k'));
      await store.memory.put(memoryRecord('bystander', 'k'));
      await store.usage.record(usageRecord('parent', 10));
      await store.usage.record(usageRecord('grandchild', 11));
      await store.events.append({ at: 12, type: 'agent-spawn', agentId: 'parent', data: {} });

      await store.agents.delete(['parent']);

      expect(await store.agents.list()).toEqual([bystander]);
      for (const agent of [parent, child, grandchild]) {
        expect(await store.sessions.get(agent.sessionId)).toBeUndefined();
        expect(await store.memory.list(agent.id)).toEqual([]);
      }
      expect(await store.sessions.get('extra')).toBeUndefined();
      expect(await store.sessions.get(bystander.sessionId)).toBeDefined();
      expect(await store.memory.get('bystander', 'k')).toBeDefined();
      expect((await store.usage.list()).map((usage) => usage.agentId)).toEqual(['parent', 'grandchild']);
      expect((await store.events.list()).map((event) => event.agentId)).toEqual(['parent']);
    });

    it('agents.delete() removes every listed agent and ignores unknown ids', async () => {
      await createAgent('a1');
      await createAgent('a2');
      const kept = await createAgent('a3');

      await store.agents.delete(['a1', 'nobody', 'a2']);
      await store.agents.delete([]);

      expect(await store.agents.list()).toEqual([kept]);
    });
  });

  describe('sessions', () => {
    let store: Store;
    beforeEach(() => {
      store = context.store;
    });
    const createAgent = (id: string, overrides: Partial<AgentRecord> = {}) => createAgentIn(store, id, overrides);

    it('sessions.save() creates a session that get() and listByAgent() return, with the conversation it holds', async () => {
      const agent = await createAgent('a1', { createdAt: 1_000 });
      const session: SessionRecord = {
        id: 's2',
        agentId: 'a1',
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
        ],
        createdAt: 2_000,
        updatedAt: 2_500,
        conversation: 'principal:["bob","user",["helper-*"]]/a2a:ctx-1',
      };

      await store.sessions.save(session);

      expect(await store.sessions.get('s2')).toEqual(session);
      expect(await store.sessions.listByAgent('a1')).toEqual([sessionOf(agent), session]);
    });

    it("sessions.save() without a conversation stores the agent's main conversation (null)", async () => {
      const agent = await createAgent('a1');
      const { conversation: _none, ...written } = sessionOf(agent, { id: 's3' });
      await store.sessions.save(written);
      expect((await store.sessions.get('s3'))?.conversation).toBeNull();
    });

    it('sessions.save() replaces the session with the same id', async () => {
      const agent = await createAgent('a1');
      const replaced = sessionOf(agent, { messages: [{ role: 'user', content: 'again' }], createdAt: 500, updatedAt: 9_000 });

      await store.sessions.save(replaced);

      expect(await store.sessions.get(agent.sessionId)).toEqual(replaced);
      expect(await store.sessions.listByAgent('a1')).toEqual([replaced]);
    });

    it('sessions.save() returns a revision that grows by one with each save, and revision() reads it', async () => {
      const agent = await createAgent('a1');
      const before = await store.sessions.revision(agent.sessionId);
      expect(before).toBeTypeOf('number');
      const first = await store.sessions.save(sessionOf(agent, { messages: [{ role: 'user', content: 'one' }] }));
      const second = await store.sessions.save(sessionOf(agent, { messages: [{ role: 'user', content: 'two' }] }));
      expect(first).toBe((before ?? 0) + 1);
      expect(second).toBe(first + 1);
      expect(await store.sessions.revision(agent.sessionId)).toBe(second);
      expect(await store.sessions.save({ id: 'fresh', agentId: 'a1', messages: [], createdAt: 1, updatedAt: 1 })).toBe(1);
      expect(await store.sessions.revision('nowhere')).toBeUndefined();
    });

    it('sessions.append() adds messages after the stored ones and counts a revision', async () => {
      const agent = await createAgent('a1');
      const first = await store.sessions.save(sessionOf(agent, { messages: [{ role: 'user', content: 'one' }] }));
      const second = await store.sessions.append(
        agent.sessionId,
        [
          { role: 'assistant', content: 'two' },
          { role: 'user', content: 'three' },
        ],
        { expectedRevision: first, updatedAt: 7_000 },
      );
      expect(second).toBe(first + 1);
      expect(await store.sessions.get(agent.sessionId)).toMatchObject({
        messages: [
          { role: 'user', content: 'one' },
          { role: 'assistant', content: 'two' },
          { role: 'user', content: 'three' },
        ],
        updatedAt: 7_000,
      });
    });

    it('sessions.append() refuses a stale revision and an unknown session, and writes nothing', async () => {
      const agent = await createAgent('a1');
      const revision = await store.sessions.save(sessionOf(agent, { messages: [{ role: 'user', content: 'one' }] }));
      await expect(
        store.sessions.append(agent.sessionId, [{ role: 'user', content: 'late' }], { expectedRevision: revision - 1, updatedAt: 1 }),
      ).rejects.toBeInstanceOf(StoreConflictError);
      await expect(store.sessions.append('nowhere', [{ role: 'user', content: 'x' }], { updatedAt: 1 })).rejects.toBeInstanceOf(StoreNotFoundError);
      expect((await store.sessions.get(agent.sessionId))?.messages).toEqual([{ role: 'user', content: 'one' }]);
    });

    it('sessions.append() expecting a revision of a session that went is a conflict, as a stale revision is (not found only when 0 was expected)', async () => {
      const agent = await createAgent('a1');
      const revision = await store.sessions.save(sessionOf(agent, { messages: [{ role: 'user', content: 'one' }] }));
      await store.sessions.delete(agent.sessionId);
      await expect(
        store.sessions.append(agent.sessionId, [{ role: 'user', content: 'late' }], { expectedRevision: revision, updatedAt: 1 }),
      ).rejects.toBeInstanceOf(StoreConflictError);
      await expect(store.sessions.append(agent.sessionId, [{ role: 'user', content: 'late' }], { expectedRevision: 0, updatedAt: 1 })).rejects.toBeInstanceOf(
        StoreNotFoundError,
      );
      expect(await store.sessions.get(agent.sessionId)).toBeUndefined();
    });

    it('sessions.append() records the usage it is given in the same transaction, and none when refused', async () => {
      const agent = await createAgent('a1');
      const revision = await store.sessions.save(sessionOf(agent, { messages: [] }));
      const usage = [usageRecord('a1', 5_000, { inputTokens: 7 })];
      await expect(
        store.sessions.append(agent.sessionId, [{ role: 'user', content: 'x' }], { expectedRevision: revision + 1, updatedAt: 1, usage }),
      ).rejects.toBeInstanceOf(StoreConflictError);
      expect(await store.usage.list({ agentId: 'a1' })).toEqual([]);
      await store.sessions.append(agent.sessionId, [{ role: 'user', content: 'x' }], { expectedRevision: revision, updatedAt: 1, usage });
      expect(await store.usage.list({ agentId: 'a1' })).toEqual(usage);
    });

    it('sessions.append() and save() record the events they are given in the same transaction, and none when refused', async () => {
      const agent = await createAgent('a1');
      const revision = await store.sessions.save(sessionOf(agent, { messages: [] }));
      const finished = { at: 6_000, type: 'turn-finish', agentId: 'a1', data: { model: 'openai:gpt-4o', iterations: 1 } };
      const before = await store.events.append({ at: 5_000, type: 'agent-spawn', agentId: 'a1', data: {} });
      await expect(
        store.sessions.append(agent.sessionId, [{ role: 'user', content: 'x' }], { expectedRevision: revision + 1, updatedAt: 1, events: [finished] }),
      ).rejects.toBeInstanceOf(StoreConflictError);
      expect((await store.events.list()).map((event) => event.type)).toEqual(['agent-spawn']);
      const next = await store.sessions.append(agent.sessionId, [{ role: 'user', content: 'x' }], {
        expectedRevision: revision,
        updatedAt: 1,
        events: [finished],
      });
      await store.sessions.save(sessionOf(agent, { messages: [] }), { expectedRevision: next, events: [{ ...finished, at: 7_000, type: 'turn-cancel' }] });
      const events = await store.events.list({ after: before });
      expect(events.map(({ at, type, agentId, data }) => ({ at, type, agentId, data }))).toEqual([finished, { ...finished, at: 7_000, type: 'turn-cancel' }]);
      // Numbered after what was appended before, in order.
      expect(events[0]?.seq).toBeGreaterThan(before);
      expect(events[1]?.seq).toBeGreaterThan(events[0]?.seq ?? Infinity);
    });

    it('sessions.save() with a stale expected revision is refused and writes nothing', async () => {
      const agent = await createAgent('a1');
      const revision = await store.sessions.save(sessionOf(agent, { messages: [{ role: 'user', content: 'one' }] }));
      await expect(store.sessions.save(sessionOf(agent, { messages: [] }), { expectedRevision: revision + 5 })).rejects.toBeInstanceOf(StoreConflictError);
      expect((await store.sessions.get(agent.sessionId))?.messages).toEqual([{ role: 'user', content: 'one' }]);
    });

    it('sessions.listByAgent() returns only that agent’s sessions, oldest first', async () => {
      await createAgent('a1', { createdAt: 5_000 });
      await createAgent('a2');
      await store.sessions.save({ id: 'newest', agentId: 'a1', messages: [], createdAt: 9_000, updatedAt: 9_000 });
      await store.sessions.save({ id: 'oldest', agentId: 'a1', messages: [], createdAt: 1_000, updatedAt: 1_000 });

      expect((await store.sessions.listByAgent('a1')).map((session) => session.id)).toEqual(['oldest', 'session-a1', 'newest']);
      expect(await store.sessions.listByAgent('nobody')).toEqual([]);
    });

    it('sessions.save() refuses a session of an unknown agent with StoreNotFoundError', async () => {
      const attempt = store.sessions.save({ id: 's1', agentId: 'nobody', messages: [], createdAt: 1, updatedAt: 1 });

      await expect(attempt).rejects.toBeInstanceOf(StoreNotFoundError);
      await expect(attempt).rejects.toThrow('agent "nobody" does not exist');
      expect(await store.sessions.get('s1')).toBeUndefined();
    });

    it('sessions.delete() removes the session and ignores an unknown id', async () => {
      const agent = await createAgent('a1');

      await store.sessions.delete(agent.sessionId);
      await store.sessions.delete('nothing');

      expect(await store.sessions.get(agent.sessionId)).toBeUndefined();
      expect(await store.agents.get('a1')).toBeDefined();
    });
  });
}
