import type { Clock, Store, TurnJournalHead } from '../contracts/index.ts';
import { LoomError, turnCancelledAs } from '../errors/index.ts';
import type { AgentEvent, TurnResult } from '../runtime/index.ts';
import { ENDED_TURN_WINDOW_MS } from './ended-turns.ts';
import { errorEvent } from './event-stream.ts';
import { type EventId, eventsAfter, type FollowedEvent, type StreamEntry } from './live-turns.ts';
import { resultOf } from './turn-commit.ts';
import { committedTurnOf } from './turn-record.ts';

/** A turn, by its id, and the session of the agent it ran on. */
export type TurnPlace = Pick<TurnJournalHead, 'id' | 'agentId' | 'sessionId'>;

/** The text of the `text-delta` events of `entries` up to event number `seq`, as a follower was shown it. */
function textUpTo(entries: readonly StreamEntry[], seq: number): string {
  let text = '';
  for (const entry of entries) {
    if (entry.first > seq || entry.event.type !== 'text-delta') continue;
    text += entry.seq <= seq ? entry.event.text : entry.event.text.slice(0, entry.ends?.[seq - entry.first] ?? 0);
  }
  return text;
}

/** How a turn ended, as a follower of another node's turn is told it: its text when known (`said`). */
interface Ending {
  status: 'finished' | 'cancelled' | 'failed' | 'unknown';
  result?: TurnResult;
  reason?: string;
  said?: string;
}

/** The turn `turn` as its session's stored messages keep it (see `committedTurnOf`). */
async function committedOf(store: Store, turn: TurnPlace): Promise<ReturnType<typeof committedTurnOf>> {
  return committedTurnOf((await store.sessions.get(turn.sessionId))?.messages ?? [], turn.id);
}

/**
 * How turn `turn` ended: as its journal keeps it done (`done`, a turn with a key), else as its
 * session's stored messages keep it (`committed`, read only then: a keyed turn that finished keeps
 * its result in its journal). A keyed turn that did not finish keeps no text in its journal: its
 * text is read from the session, when it still holds the turn.
 */
async function endingOf(turn: TurnPlace, done: TurnJournalHead | undefined, committedTurn: () => Promise<ReturnType<typeof committedTurnOf>>): Promise<Ending> {
  const outcome = done?.state === 'done' ? done.outcome : null;
  if (outcome?.['status'] === 'finished' && outcome['result'] !== null && outcome['result'] !== undefined) {
    const result = outcome['result'] as unknown as TurnResult;
    return { status: 'finished', result, said: result.text };
  }
  const committed = await committedTurn();
  const status = outcome?.['status'] ?? committed?.record.status;
  const reason = typeof outcome?.['reason'] === 'string' ? outcome['reason'] : (committed?.record.reason ?? undefined);
  const known = { ...(reason === undefined ? {} : { reason }), ...(committed === undefined ? {} : { said: committed.text }) };
  if (status === 'cancelled' || status === 'failed') return { status, ...known };
  if (status !== 'finished' || committed === undefined) return { status: 'unknown' };
  const { record, text } = committed;
  const model = record.model ?? '';
  // Its result as the turn's own was made: the record keeps the sums of its model calls' usage.
  const usage = [
    { agentId: turn.agentId, at: record.finishedAt, model, inputTokens: record.inputTokens, outputTokens: record.outputTokens, costUsd: record.costUsd },
  ];
  return { status, result: resultOf(usage, text, record.steps.filter((step) => step.kind === 'model').length, model), said: text };
}

/**
 * The events that end turn `turn` for its follower, shown the text `shown` (undefined: not known
 * here): what its text said after that, then `run-finish` or `error`. When `shown` is not the start
 * of the text the turn committed, or is not known, `rewind` (saying `why`), then every event of
 * `entries` but text, then the whole text. When the text is not known (the session no longer holds
 * the turn), the end alone. Without an id: no node keeps these events.
 */
function endEvents(ending: Ending, turnId: string, entries: readonly StreamEntry[], shown: string | undefined, why: string): FollowedEvent[] {
  const { status, result, reason, said } = ending;
  let final: AgentEvent;
  if (result !== undefined) final = { type: 'run-finish', result };
  // Its reason is the message the turn ended with on its node (naming who cancelled it), as its clients there got it.
  else if (status === 'cancelled') final = errorEvent(turnCancelledAs(reason));
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
  const text = (value: string): FollowedEvent[] => (value === '' ? [] : [{ event: { type: 'text-delta', text: value } }]);
  if (said === undefined) return [{ event: final }];
  if (shown !== undefined && said.startsWith(shown)) return [...text(said.slice(shown.length)), { event: final }];
  return [{ rewind: why }, ...eventsAfter(turnId, entries, 0).filter((event) => event.event.type !== 'text-delta'), ...text(said), { event: final }];
}

/**
 * The end of turn `turn`, which ended on another node (its journal `done`, with a key; or gone),
 * as its follower, shown `entries` up to `last`, gets it: what its text said after what the
 * follower was shown (said after the last step its node saved), then `run-finish` or `error`. When
 * what it was shown is not the start of the text the turn committed (a model call that failed
 * before its fallback answered; a turn taken over that said it again), `rewind`, then every event
 * saved but text, then the whole text. When the text is not known (the session no longer holds
 * the turn), the end alone.
 */
export async function endOf(
  store: Store,
  turn: TurnPlace,
  done: TurnJournalHead | undefined,
  entries: readonly StreamEntry[],
  last: EventId | undefined,
): Promise<FollowedEvent[]> {
  return endEvents(
    await endingOf(turn, done, () => committedOf(store, turn)),
    turn.id,
    entries,
    textUpTo(entries, last?.seq ?? 0),
    'the text this turn committed on another node is not what its saved events showed (a model call failed before another answered, or the turn was said again where it went on): here it is again',
  );
}

/**
 * The end of turn `turn` for a client that comes back with one of its events after it ended, to a
 * node that does not keep its events (another node; the turn's own once restarted, or once it let
 * them go for later ones), at most {@link ENDED_TURN_WINDOW_MS} ago by the end its session's record
 * keeps (the window the turn's node keeps them in): `rewind`, its whole text, then `run-finish` or
 * `error`, from its session (a keyed turn's result from its journal, `done`). What the client was
 * shown is not known here, so it is given the text again: the events the turn's node saved went
 * with the turn's commit. Undefined when the session does not hold the turn, or it ended longer ago.
 */
export async function endedLately(
  parts: { store: Store; clock: Clock },
  turn: TurnPlace,
  done: TurnJournalHead | undefined,
): Promise<FollowedEvent[] | undefined> {
  const committed = await committedOf(parts.store, turn);
  // The end its record keeps is on the clock of the node that ran the turn, now on this node's: their skew shifts the window.
  if (committed === undefined || parts.clock.now() - committed.record.finishedAt >= ENDED_TURN_WINDOW_MS) return undefined;
  return endEvents(
    await endingOf(turn, done, () => Promise.resolve(committed)),
    turn.id,
    [],
    undefined,
    "this node does not hold the events this turn showed: here is the turn's whole reply",
  );
}
