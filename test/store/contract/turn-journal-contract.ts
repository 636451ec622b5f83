import { describe, expect, it } from 'vitest';
import type { TurnJournalRecord } from '../../../src/contracts/index.ts';
import { StoreConflictError, StoreNotFoundError } from '../../../src/errors/index.ts';
import { createAgentIn, sessionOf, type StoreContext } from './fixtures.ts';

const opened = (id: string, agentId: string, overrides: Partial<TurnJournalRecord> = {}): Omit<TurnJournalRecord, 'state' | 'outcome' | 'steps'> => ({
  id,
  agentId,
  sessionId: `session-${agentId}`,
  conversation: null,
  request: { message: 'hello — ünïcode', caller: { kind: 'owner' } },
  idempotencyKey: null,
  receivedAt: 1_000,
  ...overrides,
});

/** The turn journal part of the Store contract (decision 0045). */
export function describeTurnJournalContract(context: StoreContext): void {
  describe('turn journal', () => {
    it('keeps a running turn with its steps in order, events committed with a step', async () => {
      const { store } = context;
      await createAgentIn(store, 'a1');
      await store.turns.open(opened('t1', 'a1'));
      await store.turns.step('t1', [
        { kind: 'model', at: 1_001, data: { response: [{ role: 'assistant', content: 'x' }] } },
        { kind: 'tool-start', at: 1_002, data: { toolCallId: 'c1' } },
      ]);
      await store.turns.step('t1', [{ kind: 'tool-result', at: 1_003, data: { toolCallId: 'c1', text: 'ok' } }], {
        events: [{ at: 1_003, type: 'tool-finish', agentId: 'a1', data: { tool: 'file_read' } }],
      });
      const turn = await store.turns.get('t1');
      expect(turn).toEqual({
        ...opened('t1', 'a1'),
        state: 'running',
        outcome: null,
        steps: [
          { kind: 'model', at: 1_001, data: { response: [{ role: 'assistant', content: 'x' }] } },
          { kind: 'tool-start', at: 1_002, data: { toolCallId: 'c1' } },
          { kind: 'tool-result', at: 1_003, data: { toolCallId: 'c1', text: 'ok' } },
        ],
      });
      expect((await store.events.list({ type: 'tool-finish' })).map((event) => event.data)).toEqual([{ tool: 'file_read' }]);
      expect((await store.turns.running()).map((record) => [record.id, record.steps.length])).toEqual([['t1', 3]]);
    });

    it("keeps the events its stream showed as `stream` steps, in order with the others, until the turn's commit drops them (decision 0059)", async () => {
      const { store } = context;
      const agent = await createAgentIn(store, 'a1');
      const shown = { entries: [{ first: 1, seq: 2, epoch: 'e1', event: { type: 'text-delta', text: 'Héllo' }, ends: [2, 5] }] };
      await store.turns.step(
        't1',
        [
          { kind: 'tool-start', at: 1_001, data: { toolCallId: 'c1' } },
          { kind: 'stream', at: 1_001, data: shown },
        ],
        { open: opened('t1', 'a1') },
      );
      await store.turns.step('t1', [
        { kind: 'tool-result', at: 1_002, data: { toolCallId: 'c1', text: 'ok' } },
        { kind: 'stream', at: 1_002, data: { entries: [] } },
      ]);
      expect((await store.turns.running())[0]?.steps.map((step) => step.kind)).toEqual(['tool-start', 'stream', 'tool-result', 'stream']);
      expect((await store.turns.get('t1'))?.steps[1]).toEqual({ kind: 'stream', at: 1_001, data: shown });
      await store.sessions.save(sessionOf(agent, { messages: [], updatedAt: 2_000 }), { closeTurn: { turnId: 't1', outcome: { status: 'finished' } } });
      expect(await store.turns.get('t1')).toBeUndefined();
    });

    it('keeps the approval request a call waits for as a step of its turn', async () => {
      const { store } = context;
      await createAgentIn(store, 'a1');
      await store.turns.step('t1', [{ kind: 'approval', at: 1_002, data: { toolCallId: 'c1', approvalId: 'r1' } }], { open: opened('t1', 'a1') });
      expect((await store.turns.running()).map((record) => record.steps)).toEqual([
        [{ kind: 'approval', at: 1_002, data: { toolCallId: 'c1', approvalId: 'r1' } }],
      ]);
    });

    it('lists running turns oldest first, and a step of no running turn is refused', async () => {
      const { store } = context;
      await createAgentIn(store, 'a1');
      await createAgentIn(store, 'a2');
      await store.turns.open(opened('late', 'a1', { receivedAt: 2_000 }));
      await store.turns.open(opened('early', 'a2', { receivedAt: 1_500, conversation: 'principal:k' }));
      expect((await store.turns.running()).map((turn) => [turn.id, turn.conversation])).toEqual([
        ['early', 'principal:k'],
        ['late', null],
      ]);
      await expect(store.turns.step('nope', [{ kind: 'model', at: 1, data: {} }])).rejects.toBeInstanceOf(StoreNotFoundError);
      await expect(store.turns.open(opened('t9', 'ghost'))).rejects.toBeInstanceOf(StoreNotFoundError);
    });

    it("finds the oldest running turn of one agent's session without its steps, and reads a turn's steps again from a number on (decision 0059)", async () => {
      const { store } = context;
      const agent = await createAgentIn(store, 'a1');
      await createAgentIn(store, 'a2');
      await store.turns.open(opened('other-agent', 'a2', { receivedAt: 500 }));
      await store.turns.open(opened('other-session', 'a1', { receivedAt: 600, conversation: 'principal:k' }));
      await store.turns.open(opened('keyed-done', 'a1', { receivedAt: 700, idempotencyKey: 'k' }));
      await store.turns.finish({ turnId: 'keyed-done', outcome: { status: 'finished' } }, 800);
      // Received at the same instant: the one recorded first is the older.
      await store.turns.open(opened('first', 'a1', { receivedAt: 1_000 }));
      await store.turns.open(opened('second', 'a1', { receivedAt: 1_000 }));
      await store.turns.step('first', [
        { kind: 'model', at: 1_001, data: { response: [] } },
        { kind: 'stream', at: 1_001, data: { entries: ['one'] } },
      ]);
      const { nodeId, ...found } = (await store.turns.runningOn('a1', null)) ?? { nodeId: undefined };
      expect(found).toEqual({ ...opened('first', 'a1'), state: 'running', outcome: null });
      // The node that recorded it holds it, where nodes lease their turns (PostgreSQL); none does on SQLite.
      expect(nodeId).toBe(context.origin ?? null);
      expect((await store.turns.runningOn('a1', 'principal:k'))?.id).toBe('other-session');
      expect(await store.turns.runningOn('a2', 'principal:k')).toBeUndefined();

      await store.turns.step('first', [
        { kind: 'tool-start', at: 1_002, data: { toolCallId: 'c1' } },
        { kind: 'stream', at: 1_002, data: { entries: ['two'] } },
      ]);
      const read = await store.turns.stepsSince('first', 1, 'stream');
      expect(read).toEqual({
        turn: { ...opened('first', 'a1'), state: 'running', outcome: null },
        steps: [
          { seq: 1, kind: 'stream', at: 1_001, data: { entries: ['one'] } },
          { seq: 3, kind: 'stream', at: 1_002, data: { entries: ['two'] } },
        ],
      });
      expect((await store.turns.stepsSince('first', 3))?.steps.map((step) => [step.seq, step.kind])).toEqual([[3, 'stream']]);
      expect((await store.turns.stepsSince('first', 4))?.steps).toEqual([]);
      expect(await store.turns.stepsSince('nope', 0)).toBeUndefined();

      await store.sessions.save(sessionOf(agent, { messages: [], updatedAt: 2_000 }), { closeTurn: { turnId: 'first', outcome: { status: 'finished' } } });
      expect((await store.turns.runningOn('a1', null))?.id).toBe('second');
      expect((await store.turns.stepsSince('keyed-done', 0))?.turn).toMatchObject({ state: 'done', outcome: { status: 'finished' } });
    });

    it("closes with its session's commit: forgotten without a key, kept done with its outcome with one", async () => {
      const { store } = context;
      const agent = await createAgentIn(store, 'a1');
      await store.turns.open(opened('plain', 'a1'));
      await store.turns.open(opened('keyed', 'a1', { idempotencyKey: 'k-1' }));
      await store.turns.step('keyed', [{ kind: 'model', at: 1_001, data: {} }]);
      await store.sessions.save(sessionOf(agent, { messages: [{ role: 'user', content: 'hi' }], updatedAt: 3_000 }), {
        closeTurn: { turnId: 'plain', outcome: { status: 'finished' } },
      });
      await store.sessions.append(agent.sessionId, [{ role: 'user', content: 'again' }], {
        updatedAt: 4_000,
        closeTurn: { turnId: 'keyed', outcome: { status: 'finished', text: 'done' } },
      });
      expect(await store.turns.get('plain')).toBeUndefined();
      expect(await store.turns.byKey('a1', 'k-1')).toEqual({
        ...opened('keyed', 'a1', { idempotencyKey: 'k-1' }),
        state: 'done',
        outcome: { status: 'finished', text: 'done' },
        steps: [],
      });
      expect(await store.turns.running()).toEqual([]);
      await expect(store.turns.step('keyed', [{ kind: 'model', at: 1, data: {} }])).rejects.toBeInstanceOf(StoreNotFoundError);
      // The key stays taken while the turn is remembered, then is freed by a prune.
      await expect(store.turns.open(opened('again', 'a1', { idempotencyKey: 'k-1' }))).rejects.toBeInstanceOf(StoreConflictError);
      expect(await store.turns.prune(4_000)).toBe(0);
      expect(await store.turns.prune(4_001)).toBe(1);
      await store.turns.open(opened('again', 'a1', { idempotencyKey: 'k-1' }));
      expect((await store.turns.byKey('a1', 'k-1'))?.id).toBe('again');
    });

    it('forgets every keyed turn that ended before the instant, however many, and keeps the rest', async () => {
      const { store } = context;
      await createAgentIn(store, 'a1');
      // More finished turns than one statement of the prune takes on SQLite, received and ended in order.
      for (let index = 0; index < 250; index += 1) {
        await store.turns.open(opened(`old-${index}`, 'a1', { idempotencyKey: `old-${index}`, receivedAt: 1_000 + index }));
        await store.turns.finish({ turnId: `old-${index}`, outcome: { status: 'finished' } }, 2_000 + index);
      }
      // Received before the instant but still running, or ended after it: kept.
      await store.turns.open(opened('long', 'a1', { idempotencyKey: 'long', receivedAt: 1_100 }));
      await store.turns.open(opened('slow', 'a1', { idempotencyKey: 'slow', receivedAt: 1_200 }));
      await store.turns.finish({ turnId: 'slow', outcome: { status: 'finished' } }, 9_000);
      await store.turns.open(opened('new', 'a1', { idempotencyKey: 'new', receivedAt: 5_000 }));
      await store.turns.finish({ turnId: 'new', outcome: { status: 'finished' } }, 5_001);

      expect(await store.turns.prune(2_240)).toBe(240);
      expect(await store.turns.byKey('a1', 'old-239')).toBeUndefined();
      expect((await store.turns.byKey('a1', 'old-240'))?.state).toBe('done');
      expect((await store.turns.byKey('a1', 'long'))?.state).toBe('running');
      expect(await store.turns.prune(6_000)).toBe(11);
      expect((await store.turns.running()).map((turn) => turn.id)).toEqual(['long']);
      expect((await store.turns.byKey('a1', 'slow'))?.state).toBe('done');
      expect(await store.turns.byKey('a1', 'new')).toBeUndefined();
    });

    it('closes a turn that ended without a session commit', async () => {
      const { store } = context;
      await createAgentIn(store, 'a1');
      await store.turns.open(opened('plain', 'a1'));
      await store.turns.open(opened('keyed', 'a1', { idempotencyKey: 'k' }));
      await store.turns.step('keyed', [{ kind: 'model', at: 1, data: {} }]);
      await store.turns.finish({ turnId: 'plain', outcome: { status: 'failed' } }, 2_000);
      await store.turns.finish({ turnId: 'keyed', outcome: { status: 'failed', reason: 'suspended' } }, 2_000);
      expect(await store.turns.get('plain')).toBeUndefined();
      expect(await store.turns.get('keyed')).toMatchObject({ state: 'done', outcome: { status: 'failed', reason: 'suspended' }, steps: [] });
    });

    it('records a turn with its first step in one write', async () => {
      const { store } = context;
      await createAgentIn(store, 'a1');
      await store.turns.step('t1', [{ kind: 'model', at: 1_001, data: { text: 'x' } }], {
        open: opened('t1', 'a1'),
        events: [{ at: 1_001, type: 'tool-finish', agentId: 'a1', data: {} }],
      });
      expect(await store.turns.get('t1')).toEqual({
        ...opened('t1', 'a1'),
        state: 'running',
        outcome: null,
        steps: [{ kind: 'model', at: 1_001, data: { text: 'x' } }],
      });
      await expect(store.turns.step('t2', [{ kind: 'model', at: 1, data: {} }], { open: opened('t2', 'ghost') })).rejects.toBeInstanceOf(StoreNotFoundError);
      expect(await store.turns.get('t2')).toBeUndefined();
    });

    it('goes with its agent', async () => {
      const { store } = context;
      await createAgentIn(store, 'a1');
      await store.turns.open(opened('t1', 'a1', { idempotencyKey: 'k' }));
      await store.turns.step('t1', [{ kind: 'model', at: 1, data: {} }]);
      await store.agents.delete(['a1']);
      expect(await store.turns.get('t1')).toBeUndefined();
      expect(await store.turns.running()).toEqual([]);
    });
  });
}
