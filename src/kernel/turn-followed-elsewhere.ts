import type { Clock, JsonObject, Store, TurnJournalRecord } from '../contracts/index.ts';
import { LoomError, TurnCancelledError } from '../errors/index.ts';
import type { AgentEvent, TurnResult } from '../runtime/index.ts';
import type { KernelEvent } from './event-bus.ts';
import { errorEvent } from './event-stream.ts';
import { type EventId, eventsAfter, type FollowedEvent, holdsEvent, type RunningTurnView, type StreamEntry } from './live-turns.ts';
import { readRequest, savedStreamOf } from './turn-journal.ts';
import { committedTurnOf } from './turn-record.ts';

/** How often the journal of a turn running on another node is read again while a client here follows it, when no event of its agent came first. */
export const FOLLOW_ELSEWHERE_POLL_MS = 500;

/** What {@link followElsewhere} needs from the kernel. */
export interface FollowElsewhereParts {
  store: Store;
  clock: Clock;
  /** Subscribes to the kernel's events, other nodes' among them (their relay): one of the turn's agent has its journal read again at once. */
  subscribe(listener: (event: KernelEvent) => void): () => void;
  /** Follows turn `turnId` as this node runs it (it took it over) or ran it lately, after `after`; undefined when it does not. */
  here(turnId: string, after: EventId | undefined): AsyncIterable<FollowedEvent> | undefined;
}

/**
 * Follows a turn the journal holds running on another node (a cluster: decision 0059, amended):
 * the turn `after` is an event of, or without it the oldest running turn on that session of the
 * agent. The follower gets the events its node saved with each step it recorded (the same ids as
 * there), read again at every event of its agent this node hears and every
 * {@link FOLLOW_ELSEWHERE_POLL_MS}; once this node runs the turn (it took it over), its events as
 * they come; once the turn ended elsewhere, the rest of its text and its end, from the session.
 * It stops when `signal` aborts (the client left).
 * @returns undefined when the journal holds no such running turn.
 */
export async function followElsewhere(
  parts: FollowElsewhereParts,
  agentId: string,
  conversation: string | undefined,
  after: EventId | undefined,
  signal: AbortSignal | undefined,
): Promise<AsyncIterable<FollowedEvent> | undefined> {
  const record = await journaledTurn(parts.store, agentId, conversation, after?.turnId);
  return record === undefined ? undefined : journalEvents(parts, record, after, signal);
}

/**
 * The turn the journal holds running on that session of the agent, as `GET …/turn` shows it (on a
 * cluster, one another node runs; its `run_id` is the turn's id): the oldest, when several are.
 */
export async function runningElsewhere(store: Store, agentId: string, conversation: string | undefined): Promise<RunningTurnView | undefined> {
  const record = await journaledTurn(store, agentId, conversation, undefined);
  if (record === undefined) return undefined;
  return { run_id: record.id, message: readRequest(record.request)?.message ?? '', received_at: new Date(record.receivedAt).toISOString(), state: 'running' };
}

/** The running turn `turnId` of the journal on that session of the agent, or without it the oldest one there; undefined when there is none. */
async function journaledTurn(
  store: Store,
  agentId: string,
  conversation: string | undefined,
  turnId: string | undefined,
): Promise<TurnJournalRecord | undefined> {
  const session = conversation ?? null;
  const record =
    turnId === undefined
      ? (await store.turns.running()).find((turn) => turn.agentId === agentId && turn.conversation === session)
      : await store.turns.get(turnId);
  return record?.state === 'running' && record.agentId === agentId && record.conversation === session ? record : undefined;
}

/** The events of `first` after `after`, as {@link followElsewhere} gives them. */
async function* journalEvents(
  parts: FollowElsewhereParts,
  first: TurnJournalRecord,
  after: EventId | undefined,
  signal: AbortSignal | undefined,
): AsyncGenerator<FollowedEvent> {
  let record = first;
  // The last event given (none yet: from the start).
  let last: EventId | undefined;
  if (after !== undefined && holdsEvent(savedStreamOf(record), after)) last = after;
  else if (after !== undefined)
    yield {
      rewind: `event "${after.turnId}:${after.epoch}:${after.seq}" is not among the events saved of this turn, which runs on another node (a node saves them with each step of the turn it records; one that stopped took those it had not saved with it): here it is from the start`,
    };
  let wake = new AbortController();
  const unsubscribe = parts.subscribe((event) => {
    if (event.agentId === record.agentId) wake.abort();
  });
  try {
    for (;;) {
      // Taken over by this node (or ended here lately): followed as this node runs it, from the last event given.
      const here = parts.here(record.id, last);
      if (here !== undefined) {
        yield* here;
        return;
      }
      const entries = savedStreamOf(record);
      yield* eventsAfter(record.id, entries, last?.seq ?? 0);
      const newest = entries.at(-1);
      if (newest !== undefined && newest.seq > (last?.seq ?? 0)) last = { turnId: record.id, epoch: newest.epoch, seq: newest.seq };
      await parts.clock
        .sleep(FOLLOW_ELSEWHERE_POLL_MS, { signal: signal === undefined ? wake.signal : AbortSignal.any([signal, wake.signal]) })
        .catch(() => undefined);
      if (signal?.aborted === true) return;
      if (wake.signal.aborted) wake = new AbortController();
      const now = await parts.store.turns.get(record.id);
      if (now?.state === 'running') {
        record = now;
        continue;
      }
      yield* await endOf(parts.store, record, now, textUpTo(entries, last?.seq ?? 0));
      return;
    }
  } finally {
    unsubscribe();
  }
}

/** The text of the `text-delta` events of `entries` up to event number `seq`, as a follower was shown it. */
function textUpTo(entries: readonly StreamEntry[], seq: number): string {
  let text = '';
  for (const entry of entries) {
    if (entry.first > seq || entry.event.type !== 'text-delta') continue;
    text += entry.seq <= seq ? entry.event.text : entry.event.text.slice(0, entry.ends?.[seq - entry.first] ?? 0);
  }
  return text;
}

/**
 * The end of turn `record`, which ended on another node (its journal `done`, with a key; or gone),
 * as its follower gets it: what its text said after `shown` (said after the last step its node
 * saved), then `run-finish` or `error`. Without an id: no node keeps these events.
 */
async function endOf(store: Store, record: TurnJournalRecord, done: TurnJournalRecord | undefined, shown: string): Promise<FollowedEvent[]> {
  const ending = done?.outcome ?? sessionOutcome((await store.sessions.get(record.sessionId))?.messages ?? [], record.id);
  const status = ending?.['status'];
  const result = status === 'finished' ? (ending?.['result'] as unknown as TurnResult | null) : undefined;
  const said = result?.text ?? (typeof ending?.['text'] === 'string' ? ending['text'] : '');
  const rest = said.startsWith(shown) ? said.slice(shown.length) : '';
  const reason = typeof ending?.['reason'] === 'string' ? ending['reason'] : undefined;
  let final: AgentEvent;
  if (result !== undefined && result !== null) final = { type: 'run-finish', result };
  else if (status === 'cancelled') final = errorEvent(new TurnCancelledError(`the turn was cancelled: ${reason ?? 'no reason was given'}`));
  else
    final = errorEvent(
      new LoomError(
        'TURN_FAILED',
        'system',
        status === 'failed'
          ? `the turn failed: ${reason ?? 'no reason was given'}`
          : 'the turn ended on another node without a reply in the session (it was stopped before it could commit one)',
      ),
    );
  return [...(rest === '' ? [] : [{ event: { type: 'text-delta', text: rest } as AgentEvent }]), { event: final }];
}

/** How turn `turnId` ended as the session's `messages` keep it, in the shape of a journal's outcome (and its text); undefined when they do not hold it. */
function sessionOutcome(messages: readonly unknown[], turnId: string): JsonObject | undefined {
  const committed = committedTurnOf(messages, turnId);
  if (committed === undefined) return undefined;
  const { record, text } = committed;
  if (record.status !== 'finished') return { status: record.status, reason: record.reason ?? '', text };
  const result: TurnResult = {
    text,
    usage: { inputTokens: record.inputTokens, outputTokens: record.outputTokens },
    iterations: record.steps.filter((step) => step.kind === 'model').length,
    costUsd: record.costUsd,
    model: record.model ?? '',
  };
  return { status: 'finished', result: result as unknown as JsonObject };
}
