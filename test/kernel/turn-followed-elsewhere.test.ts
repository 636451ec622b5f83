/**
 * `followElsewhere`: a turn another node of a cluster runs, followed from the journal that node
 * writes (decision 0059, amended), on a SQLite store and a fake clock; "node A" is a live turn
 * whose saved events the test commits as its node would.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ModelMessage } from 'ai';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import type { JsonObject, JsonValue, Store } from '../../src/contracts/index.ts';
import { turnCancelledBy } from '../../src/errors/index.ts';
import type { KernelEvent } from '../../src/kernel/event-bus.ts';
import { type FollowedEvent, LiveTurn, parseEventId } from '../../src/kernel/live-turns.ts';
import {
  cancelElsewhere,
  type CancelElsewhereParts,
  FOLLOW_ELSEWHERE_POLL_MS,
  followElsewhere,
  type FollowElsewhereParts,
  RESUMING_HERE_POLL_MS,
  RESUMING_HERE_WAIT_MS,
} from '../../src/kernel/turn-followed-elsewhere.ts';
import { ENDED_TURN_WINDOW_MS } from '../../src/kernel/ended-turns.ts';
import { sealTurn, type TurnRecord } from '../../src/kernel/turn-record.ts';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { openSqliteStore, type SqliteStore } from '../../src/store/index.ts';
import { createAgentIn } from '../store/contract/fixtures.ts';
import { waitFor } from '../support/wait-for.ts';

let clock: FakeClock;
let store: SqliteStore;
let listeners: Set<(event: KernelEvent) => void>;
let closing: AbortController;
/** The turns this node runs (took over) or ran lately, by id: what `here` follows. */
let hereTurns: Map<string, LiveTurn>;
/** The steps each read of the journal after the first asked for, as `[turn id, from]`. */
let reads: [string, number][];
/** The sessions the follower read, by id. */
let sessionReads: string[];

beforeEach(async () => {
  clock = createFakeClock();
  store = openSqliteStore({ path: ':memory:' });
  await createAgentIn(store, 'a1');
  listeners = new Set();
  closing = new AbortController();
  hereTurns = new Map();
  reads = [];
  sessionReads = [];
});

afterEach(() => store.close());

/** What the follower needs, the store's reads again recorded. */
function parts(): FollowElsewhereParts {
  const stepsSince: Store['turns']['stepsSince'] = (turnId, from, kind) => {
    reads.push([turnId, from]);
    return store.turns.stepsSince(turnId, from, kind);
  };
  const turns = new Proxy(store.turns, {
    get: (target, key) => {
      if (key === 'stepsSince') return stepsSince;
      const value: unknown = Reflect.get(target, key);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  const sessions = new Proxy(store.sessions, {
    get: (target, key) => {
      const value: unknown = Reflect.get(target, key);
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      return key !== 'get'
        ? method
        : (id: string) => {
            sessionReads.push(id);
            return method(id);
          };
    },
  });
  const recorded = { turns, sessions };
  return {
    store: new Proxy(store, { get: (target, key) => (key in recorded ? recorded[key as keyof typeof recorded] : (Reflect.get(target, key) as unknown)) }),
    clock,
    subscribe: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    here: (turnId, after) => hereTurns.get(turnId)?.follow(after),
    closing: closing.signal,
  };
}

/** This node hears an event of the agent (another node's, relayed). */
function hear(): void {
  for (const listener of [...listeners])
    listener({ type: 'tool-finish', at: clock.now(), agentId: 'a1', name: 'agent-a1', tool: 'http_request', durationMs: 1 });
}

/** Turn `id` as node A runs it: recorded running on the main session of agent a1. */
async function runOnA(id: string, idempotencyKey: string | null = null): Promise<LiveTurn> {
  await store.turns.open({
    id,
    agentId: 'a1',
    sessionId: 'session-a1',
    conversation: null,
    request: { message: 'place the order', caller: { kind: 'owner' } },
    idempotencyKey,
    receivedAt: clock.now(),
  });
  return new LiveTurn('a1', undefined, 'place the order', clock.now(), { turnId: id, epoch: 'nodeA', shown: false, shared: true });
}

/** Node A commits a step of `turn`, with the events its stream showed since the last. */
async function commitOnA(turn: LiveTurn): Promise<void> {
  const stream = turn.unsaved();
  await store.turns.step(turn.turnId, [
    { kind: 'model', at: clock.now(), data: {} },
    ...(stream === undefined ? [] : [{ kind: 'stream' as const, at: clock.now(), data: stream as unknown as JsonObject }]),
  ]);
}

/** Why a cancelled turn of node A ended, as its node keeps it: the message its own client got. */
const cancelledByAdmin = turnCancelledBy('"admin"').message;

/** Node A commits turn `id` to the session as `status`, having said `text`, and closes its journal with `outcome`. */
async function sealOnA(id: string, status: TurnRecord['status'], text: string, outcome: JsonObject): Promise<void> {
  const user: ModelMessage = { role: 'user', content: 'place the order' };
  const record: TurnRecord = {
    id,
    status,
    reason: status === 'finished' ? null : cancelledByAdmin,
    startedAt: 0,
    finishedAt: clock.now(),
    model: 'openai/gpt-4o',
    inputTokens: 30,
    outputTokens: 7,
    costUsd: 0.5,
    steps: [
      { kind: 'model', model: 'openai/gpt-4o', inputTokens: 10, outputTokens: 3, costUsd: 0.2, startedAt: 0, latencyMs: 1 },
      { kind: 'model', model: 'openai/gpt-4o', inputTokens: 20, outputTokens: 4, costUsd: 0.3, startedAt: 0, latencyMs: 1 },
    ],
  };
  const ending = status === 'finished' ? { status } : { status, reason: cancelledByAdmin };
  const messages = sealTurn([user, { role: 'assistant', content: text }], user, 0, record, ending);
  await store.sessions.save(
    { id: 'session-a1', agentId: 'a1', messages: messages as unknown as JsonValue[], createdAt: 0, updatedAt: clock.now(), conversation: null },
    { closeTurn: { turnId: id, outcome } },
  );
}

/** A follower's events as they come, and whether it has ended. */
function collect(events: AsyncIterable<FollowedEvent>): { got: FollowedEvent[]; done: Promise<void> } {
  const got: FollowedEvent[] = [];
  const done = (async () => {
    for await (const event of events) got.push(event);
  })();
  return { got, done };
}

const start = (turnId: string): AgentEvent => ({ type: 'run-start', runId: turnId, agentId: 'a1', agentName: 'agent-a1' });
const call: AgentEvent = { type: 'tool-call', toolCallId: 'c1', toolName: 'http_request', input: {} };
const result: AgentEvent = { type: 'tool-result', toolCallId: 'c1', toolName: 'http_request', text: 'placed', isError: false };
const said = (text: string): AgentEvent => ({ type: 'text-delta', text });
const shown = (events: readonly FollowedEvent[]): string[] =>
  events.map((item) => ('rewind' in item ? 'rewind' : `${item.id ?? '-'} ${item.event.type}${item.event.type === 'text-delta' ? ` ${item.event.text}` : ''}`));

/** The main session of agent a1, where node A runs its turns. */
const MAIN = { agentId: 'a1', sessionId: 'session-a1', conversation: undefined };

async function follow(after?: string, signal?: AbortSignal): Promise<{ got: FollowedEvent[]; done: Promise<void> }> {
  const events = await followElsewhere(parts(), MAIN, after === undefined ? undefined : parseEventId(after), signal);
  if (events === undefined) throw new Error('no turn to follow');
  return collect(events);
}

describe('a turn another node runs, followed from its journal', () => {
  it('shows each step as its node commits it, reading only the steps after those read, at an event of the agent or after the poll; then the rest of its text and its end from the session', async () => {
    const onA = await runOnA('t1');
    onA.emit(start('t1'));
    onA.emit(call);
    await commitOnA(onA);
    const follower = await follow();
    await waitFor('the saved steps', () => follower.got.length === 2);

    onA.emit(result);
    await commitOnA(onA);
    hear();
    await waitFor('the step read at the event', () => follower.got.length === 3 && clock.pending() === 1);
    onA.emit(said('The order'));
    await commitOnA(onA);
    // No event heard: read at the poll, not before.
    await clock.advance(FOLLOW_ELSEWHERE_POLL_MS - 1);
    expect(follower.got).toHaveLength(3);
    await clock.advance(1);
    await waitFor('the step read at the poll', () => follower.got.length === 4);

    onA.emit(said(' is placed.'));
    await sealOnA('t1', 'finished', 'The order is placed.', { status: 'finished' });
    hear();
    await follower.done;
    expect(shown(follower.got)).toEqual([
      't1:nodeA:1 run-start',
      't1:nodeA:2 tool-call',
      't1:nodeA:3 tool-result',
      't1:nodeA:4 text-delta The order',
      '- text-delta  is placed.',
      '- run-finish',
    ]);
    expect(follower.got.at(-1)).toMatchObject({
      event: { result: { text: 'The order is placed.', iterations: 2, usage: { inputTokens: 30, outputTokens: 7 }, costUsd: 0.5, model: 'openai/gpt-4o' } },
    });
    // Each read after the first asked for the steps after the last one read (model and stream steps alternate).
    expect(reads).toEqual([
      ['t1', 0],
      ['t1', 2],
      ['t1', 4],
      ['t1', 6],
    ]);
    expect(listeners.size).toBe(0);
  });

  it('stops, and unsubscribes, when its client leaves or the kernel shuts down', async () => {
    const onA = await runOnA('t1');
    onA.emit(start('t1'));
    await commitOnA(onA);
    const client = new AbortController();
    const leaving = await follow(undefined, client.signal);
    const staying = await follow();
    await waitFor('both followers to wait', () => leaving.got.length === 1 && staying.got.length === 1 && clock.pending() === 2);

    client.abort();
    await leaving.done;
    expect(listeners.size).toBe(1);
    expect(clock.pending()).toBe(1);
    // A follower of the Kernel API has no signal of its own: the kernel's shutdown ends it.
    closing.abort();
    await staying.done;
    expect(listeners.size).toBe(0);
    expect(clock.pending()).toBe(0);
  });

  it("ends a cancelled turn with the rest of its text from the session and TURN_CANCELLED, its key's journal keeping no text", async () => {
    const onA = await runOnA('t1', 'order-1');
    onA.emit(start('t1'));
    onA.emit(said('Half'));
    await commitOnA(onA);
    const follower = await follow();
    await waitFor('the saved steps', () => follower.got.length === 2);
    await sealOnA('t1', 'cancelled', 'Half a reply', { status: 'cancelled', reason: cancelledByAdmin });
    hear();
    await follower.done;
    expect(shown(follower.got).slice(2)).toEqual(['- text-delta  a reply', '- error']);
    // The message a client on node A got.
    expect(follower.got.at(-1)).toMatchObject({ event: { code: 'TURN_CANCELLED', message: cancelledByAdmin } });
  });

  it('ends a failed keyed turn the session no longer holds with TURN_FAILED alone: its text is not known', async () => {
    const onA = await runOnA('t1', 'order-1');
    onA.emit(start('t1'));
    onA.emit(said('Half'));
    await commitOnA(onA);
    const follower = await follow();
    await waitFor('the saved steps', () => follower.got.length === 2);
    await store.turns.finish({ turnId: 't1', outcome: { status: 'failed', reason: 'the model is down' } }, clock.now());
    hear();
    await follower.done;
    expect(shown(follower.got).slice(2)).toEqual(['- error']);
    expect(follower.got.at(-1)).toMatchObject({ event: { code: 'TURN_FAILED', message: 'the turn failed: the model is down' } });
  });

  it('ends a turn with an Idempotency-Key with the result its journal keeps, without reading the session', async () => {
    const onA = await runOnA('t1', 'order-1');
    onA.emit(start('t1'));
    await commitOnA(onA);
    const follower = await follow();
    await waitFor('the saved steps', () => follower.got.length === 1);
    const kept = { text: 'Placed.', usage: { inputTokens: 3, outputTokens: 1 }, iterations: 1, costUsd: 0.1, model: 'openai/gpt-4o' };
    await store.turns.finish({ turnId: 't1', outcome: { status: 'finished', result: kept } }, clock.now());
    hear();
    await follower.done;
    expect(shown(follower.got).slice(1)).toEqual(['- text-delta Placed.', '- run-finish']);
    expect(follower.got.at(-1)).toMatchObject({ event: { type: 'run-finish', result: kept } });
    // Its journal has all of its end: the session (which may be long) is not read.
    expect(sessionReads).toEqual([]);
  });

  it("rewinds a client whose event was not saved, and one shown text the turn's committed text does not start with, then gives it all again", async () => {
    const onA = await runOnA('t1');
    onA.emit(start('t1'));
    onA.emit(said('Hel'));
    onA.emit(call);
    await commitOnA(onA);
    // An event node A said after its last commit, then died with: not in the journal.
    const lost = await follow('t1:nodeA:9');
    await waitFor('the turn from its start', () => lost.got.length === 4);
    expect(shown(lost.got)).toEqual(['rewind', 't1:nodeA:1 run-start', 't1:nodeA:2 text-delta Hel', 't1:nodeA:3 tool-call']);

    // The first model failed after "Hel"; its fallback said it all differently.
    await sealOnA('t1', 'finished', 'Hi there.', { status: 'finished' });
    hear();
    await lost.done;
    expect(shown(lost.got).slice(4)).toEqual(['rewind', 't1:nodeA:1 run-start', 't1:nodeA:3 tool-call', '- text-delta Hi there.', '- run-finish']);
  });

  it('gives a client back after the turn ended elsewhere its whole reply again and its end, for two minutes; then nothing', async () => {
    const onA = await runOnA('t1');
    onA.emit(start('t1'));
    onA.emit(call);
    onA.emit(result);
    await commitOnA(onA);
    onA.emit(said('The order'));
    // A client of node A was shown "The order" (event 4), then its stream broke; node A ended the turn, its journal gone with it.
    await sealOnA('t1', 'finished', 'The order is placed.', { status: 'finished' });
    expect(await store.turns.get('t1')).toBeUndefined();

    await clock.advance(ENDED_TURN_WINDOW_MS - 1);
    const back = await follow('t1:nodeA:4');
    await back.done;
    // What it was shown is not known here (the stream node A saved went with its commit): the reply from the start.
    expect(shown(back.got)).toEqual(['rewind', '- text-delta The order is placed.', '- run-finish']);
    expect(back.got[0]).toEqual({ rewind: "this node does not hold the events this turn showed: here is the turn's whole reply" });
    expect(back.got.at(-1)).toMatchObject({ event: { result: { text: 'The order is placed.', iterations: 2, usage: { inputTokens: 30, outputTokens: 7 } } } });

    // Node A keeps the turn's events two minutes after its end; so long, and no longer, is it told here.
    await clock.advance(1);
    expect(await followElsewhere(parts(), MAIN, parseEventId('t1:nodeA:4'), undefined)).toBeUndefined();
  });

  it('tells a client back after a cancelled turn with a key ended elsewhere who cancelled it, its text from the session; an id of no turn of the session gets nothing', async () => {
    const onA = await runOnA('t1', 'order-1');
    onA.emit(start('t1'));
    onA.emit(said('Half'));
    await commitOnA(onA);
    await sealOnA('t1', 'cancelled', 'Half a reply', { status: 'cancelled', reason: cancelledByAdmin });
    expect(await store.turns.get('t1')).toMatchObject({ state: 'done' });

    const back = await follow('t1:nodeA:2');
    await back.done;
    expect(shown(back.got)).toEqual(['rewind', '- text-delta Half a reply', '- error']);
    expect(back.got.at(-1)).toMatchObject({ event: { code: 'TURN_CANCELLED', message: cancelledByAdmin } });
    // Of another session of the agent, or of no turn at all: nothing to tell.
    expect(
      await followElsewhere(parts(), { ...MAIN, sessionId: 'session-other', conversation: 'other' }, parseEventId('t1:nodeA:2'), undefined),
    ).toBeUndefined();
    expect(await followElsewhere(parts(), MAIN, parseEventId('t9:nodeA:2'), undefined)).toBeUndefined();
  });

  it('goes on as this node runs the turn once it took it over, nothing repeated, and keeps the ids of the events it said here when it ended before the next read', async () => {
    const onA = await runOnA('t1');
    onA.emit(start('t1'));
    onA.emit(call);
    await commitOnA(onA);
    const follower = await follow();
    await waitFor('the saved steps', () => follower.got.length === 2);

    // Node A died; this node took the turn over from the steps it saved, said more, and ended it.
    const saved = (await store.turns.get('t1'))?.steps.flatMap((step) => (step.kind === 'stream' ? ((step.data as { entries: [] }).entries ?? []) : []));
    const here = new LiveTurn('a1', undefined, 'place the order', 0, { turnId: 't1', epoch: 'nodeB', shown: true, saved: saved ?? [] });
    here.emit(result);
    here.emit(said('Placed.'));
    here.end('finished', {
      type: 'run-finish',
      result: { text: 'Placed.', usage: { inputTokens: 1, outputTokens: 1 }, iterations: 2, costUsd: 0, model: 'm' },
    });
    await sealOnA('t1', 'finished', 'Placed.', { status: 'finished' });
    hereTurns.set('t1', here);
    hear();
    await follower.done;
    expect(shown(follower.got)).toEqual([
      't1:nodeA:1 run-start',
      't1:nodeA:2 tool-call',
      't1:nodeB:3 tool-result',
      't1:nodeB:4 text-delta Placed.',
      't1:nodeB:5 run-finish',
    ]);
  });
});

describe('a cancel on a cluster of a turn the journal leases to this very node', () => {
  /** What `cancelElsewhere` needs, the journal leasing running turns to node "node-b" (this node), and `here` the turn running here once there is one. */
  function cancelParts(here: () => string | undefined): CancelElsewhereParts<string> {
    const runningOn: Store['turns']['runningOn'] = async (agentId, conversation) => {
      const turn = await store.turns.runningOn(agentId, conversation);
      return turn === undefined ? undefined : { ...turn, nodeId: 'node-b' };
    };
    const turns = new Proxy(store.turns, {
      get: (target, key) => (key === 'runningOn' ? runningOn : (Reflect.get(target, key) as unknown)),
    });
    return {
      store: new Proxy(store, { get: (target, key) => (key === 'turns' ? turns : (Reflect.get(target, key) as unknown)) }),
      clock,
      find: (id) => Promise.resolve({ name: id, url: `http://${id}.example:4200` }),
      self: 'node-b',
      leaseMs: 15_000,
      here,
      closing: closing.signal,
    };
  }

  it('waits for the turn it took over to run here and gives it to cancel, not naming this node as elsewhere', async () => {
    await runOnA('t1');
    const resumed: { turn?: string } = {};
    const cancel = cancelElsewhere(
      cancelParts(() => resumed.turn),
      { id: 'a1', name: 'agent-a1' },
      undefined,
    );
    // The node resumes the turn it took over a moment later.
    await clock.advance(RESUMING_HERE_POLL_MS);
    resumed.turn = 'the live turn';
    await clock.advance(RESUMING_HERE_POLL_MS);
    expect(await cancel).toEqual({ here: 'the live turn' });
  });

  it('answers, after a bounded wait on its clock, that the turn is resuming here and to try again, while it is not running here yet', async () => {
    await runOnA('t1');
    const asked = clock.now();
    let answer: unknown;
    void cancelElsewhere(
      cancelParts(() => undefined),
      { id: 'a1', name: 'agent-a1' },
      undefined,
    ).then((value) => (answer = value));
    while (answer === undefined) await clock.advance(RESUMING_HERE_POLL_MS);
    expect(clock.now() - asked).toBeLessThanOrEqual(RESUMING_HERE_WAIT_MS + RESUMING_HERE_POLL_MS);
    expect(answer).toMatchObject({
      code: 'TURN_ELSEWHERE',
      isRetryable: true,
      message:
        'cannot cancel the turn of agent "agent-a1" yet: turn "t1" is resuming on this node, which took it over (decision 0061); try again in a few seconds',
      details: { turnId: 't1', resuming: true },
    });
  });

  it('stops waiting when the kernel shuts down, saying the turn will not resume here and to try again', async () => {
    await runOnA('t1');
    const cancel = cancelElsewhere(
      cancelParts(() => undefined),
      { id: 'a1', name: 'agent-a1' },
      undefined,
    );
    await clock.advance(RESUMING_HERE_POLL_MS);
    await waitFor('the cancel to wait again', () => clock.pending() === 1);
    const stopped = clock.now();
    closing.abort();
    expect(await cancel).toMatchObject({
      code: 'TURN_ELSEWHERE',
      isRetryable: true,
      message:
        'cannot cancel the turn of agent "agent-a1": this node is shutting down, so turn "t1", which it took over (decision 0061), will not resume here; the node that takes it over once its lease lapses can cancel it; try again in a few seconds',
    });
    expect(clock.now()).toBe(stopped);
    expect(clock.pending()).toBe(0);
  });
});
