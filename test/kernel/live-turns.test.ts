import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import { eventIdOf, type FollowedEvent, LiveTurn, LiveTurns, parseEventId } from '../../src/kernel/live-turns.ts';
import type { AgentEvent } from '../../src/runtime/index.ts';

/** What a follower has once the turn has ended. */
async function followed(turn: LiveTurn, after?: string): Promise<FollowedEvent[]> {
  const all: FollowedEvent[] = [];
  for await (const item of turn.follow(after === undefined ? undefined : parseEventId(after))) all.push(item);
  return all;
}

const textDelta = (text: string): AgentEvent => ({ type: 'text-delta', text });

describe('a live turn numbers its events so that a follower can go on after the last one it had', () => {
  it('gives the rest of a stretch of text a follower had the start of, and no more', async () => {
    const turn = new LiveTurn('a1', undefined, 'hi', 0, { turnId: 't-1', epoch: 'e1', shown: true });
    const hel = textDelta('Hel');
    turn.emit({ type: 'run-start', runId: 'r', agentId: 'a1', agentName: 'x' });
    turn.emit(hel);
    turn.emit(textDelta('lo'));
    turn.emit(textDelta(' world'));
    turn.end('finished');
    expect(eventIdOf(hel)).toBe('t-1:e1:2');
    expect(await followed(turn, 't-1:e1:2')).toEqual([{ id: 't-1:e1:4', event: { type: 'text-delta', text: 'lo world' } }]);
    expect(await followed(turn, 't-1:e1:3')).toEqual([{ id: 't-1:e1:4', event: { type: 'text-delta', text: ' world' } }]);
    expect(await followed(turn, 't-1:e1:4')).toEqual([]);
    expect((await followed(turn)).map((item) => ('id' in item ? item.id : 'rewind'))).toEqual(['t-1:e1:1', 't-1:e1:4']);
  });

  it('goes on after the events its journal saved under a new epoch, announces no saved call twice, and rewinds a follower whose event was not saved', async () => {
    const before = new LiveTurn('a1', undefined, 'hi', 0, { turnId: 't-1', epoch: 'e1', shown: true });
    before.emit({ type: 'tool-call', toolCallId: 'c1', toolName: 'file_write', input: {} });
    const saved = before.unsaved()?.entries ?? [];
    before.emit(textDelta('lost'));

    const after = new LiveTurn('a1', undefined, 'hi', 0, { turnId: 't-1', epoch: 'e2', shown: true, saved });
    after.emit({ type: 'tool-call', toolCallId: 'c1', toolName: 'file_write', input: {} });
    after.emit(textDelta('Done.'));
    after.end('finished');
    expect(await followed(after, 't-1:e1:1')).toEqual([{ id: 't-1:e2:2', event: { type: 'text-delta', text: 'Done.' } }]);
    const rewound = await followed(after, 't-1:e1:2');
    expect(rewound[0]).toEqual({ rewind: expect.stringContaining('the daemon restarted') as string });
    expect(rewound.slice(1)).toEqual([
      { id: 't-1:e1:1', event: { type: 'tool-call', toolCallId: 'c1', toolName: 'file_write', input: {} } },
      { id: 't-1:e2:2', event: { type: 'text-delta', text: 'Done.' } },
    ]);
  });

  it('saves no events while no client was shown any, then all of them once one follows the turn', async () => {
    const turn = new LiveTurn('a1', undefined, 'hi', 0, { turnId: 't-3', epoch: 'e1', shown: false });
    turn.emit({ type: 'run-start', runId: 'r', agentId: 'a1', agentName: 'x' });
    turn.emit({ type: 'tool-call', toolCallId: 'c1', toolName: 'file_read', input: {} });
    // No one holds an id of these events: nothing to come back to after a restart.
    expect(turn.unsaved()).toBeUndefined();
    const following = followed(turn);
    turn.emit(textDelta('Read it.'));
    expect(turn.unsaved()?.entries.map((entry) => entry.seq)).toEqual([1, 2, 3]);
    turn.end('finished');
    expect((await following).map((item) => ('id' in item ? item.id : 'rewind'))).toEqual(['t-3:e1:1', 't-3:e1:2', 't-3:e1:3']);
  });

  it('follows the turn a client had events of while it waits behind another turn of its session, not the one that runs', async () => {
    // Before a restart: turn t-2 had shown a tool call when the daemon died.
    const before = new LiveTurn('a1', undefined, 'second', 0, { turnId: 't-2', epoch: 'e1', shown: true });
    before.emit({ type: 'tool-call', toolCallId: 'c1', toolName: 'file_read', input: {} });
    const saved = before.unsaved()?.entries ?? [];
    // After it: both turns of the session resume, t-1 first; t-2 waits behind it.
    const live = new LiveTurns();
    const first = live.open('a1', undefined, 'first', 0, { turnId: 't-1', epoch: 'e2', shown: true });
    first.emit({ type: 'run-start', runId: 'r1', agentId: 'a1', agentName: 'clerk' });
    const second = live.open('a1', undefined, 'second', 0, { turnId: 't-2', epoch: 'e2', shown: true, saved });
    const all: FollowedEvent[] = [];
    const following = (async () => {
      for await (const item of live.follow({ id: 'a1', name: 'clerk' }, undefined, parseEventId('t-2:e1:1'), 0)) all.push(item);
    })();
    first.end('finished');
    live.close(first, 0);
    second.emit({ type: 'tool-call', toolCallId: 'c1', toolName: 'file_read', input: {} });
    second.emit(textDelta('Read it.'));
    second.end('finished');
    await following;
    expect(all).toEqual([{ id: 't-2:e2:2', event: { type: 'text-delta', text: 'Read it.' } }]);
  });

  it('keeps for its window a turn no client here was shown whose events clients of other nodes may hold (a cluster), and forgets one nobody could', async () => {
    const live = new LiveTurns();
    const shared = live.open('a1', undefined, 'hi', 0, { turnId: 't-1', epoch: 'e1', shown: false, shared: true });
    const alone = live.open('a1', 'principal:k', 'hi', 0, { turnId: 't-2', epoch: 'e1', shown: false });
    for (const turn of [shared, alone]) {
      turn.emit(textDelta('Done.'));
      turn.end('finished', {
        type: 'run-finish',
        result: { text: 'Done.', usage: { inputTokens: 1, outputTokens: 1 }, iterations: 1, costUsd: 0, model: 'm' },
      });
      live.close(turn, 1_000);
    }
    // A client of another node had "Done." from the journal; its stream broke before the end, and it came here.
    const all: FollowedEvent[] = [];
    for await (const item of live.follow({ id: 'a1', name: 'clerk' }, undefined, parseEventId('t-1:e1:1'), 2_000)) all.push(item);
    expect(all.map((item) => ('id' in item ? `${item.id} ${item.event.type}` : 'rewind'))).toEqual(['t-1:e1:2 run-finish']);
    expect(() => live.follow({ id: 'a1', name: 'clerk' }, 'principal:k', parseEventId('t-2:e1:1'), 2_000)).toThrow(/has ended/);
  });
  it('keeps a turn shown here for its window while a stream of turns nobody here was shown ends on a cluster, keeping the last 50 of those', async () => {
    const clock = createFakeClock();
    const live = new LiveTurns();
    const end = (turn: LiveTurn): void => {
      turn.emit(textDelta('Done.'));
      turn.end('finished', {
        type: 'run-finish',
        result: { text: 'Done.', usage: { inputTokens: 1, outputTokens: 1 }, iterations: 1, costUsd: 0, model: 'm' },
      });
      live.close(turn, clock.now());
    };
    // A browser was shown a turn; its stream broke just before the end.
    end(live.open('a1', undefined, 'hi', clock.now(), { turnId: 'shown', epoch: 'e1', shown: true }));
    // Then 250 unstreamed turns (a channel's, a schedule's) end, three a second: every journaled turn is shared on PostgreSQL.
    for (let index = 0; index < 250; index += 1) {
      await clock.advance(333);
      end(live.open('a2', undefined, 'ping', clock.now(), { turnId: `bot-${index}`, epoch: 'e1', shown: false, shared: true }));
    }
    // The browser comes back with its Last-Event-ID some 90 s after the end, within the two minutes: it gets the end.
    await clock.advance(7_000);
    const all: FollowedEvent[] = [];
    for await (const item of live.follow({ id: 'a1', name: 'clerk' }, undefined, parseEventId('shown:e1:1'), clock.now())) all.push(item);
    expect(all.map((item) => ('id' in item ? `${item.id} ${item.event.type}` : 'rewind'))).toEqual(['shown:e1:2 run-finish']);
    // Of the others, the last 50 are kept.
    const followable = (turnId: string): boolean => live.followHere('a2', undefined, turnId, parseEventId(`${turnId}:e1:1`), clock.now()) !== undefined;
    expect([followable('bot-199'), followable('bot-200'), followable('bot-249')]).toEqual([false, true, true]);
  });
});
