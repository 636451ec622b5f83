import type { AgentEvent } from '../runtime/index.ts';
import { TurnNotRunningError } from '../errors/index.ts';
import { EndedTurns } from './ended-turns.ts';
import { PushQueue } from './push-queue.ts';
import type { CancelledTurnView, RunningTurnView } from '../wire/index.ts';
import type { TurnStatus } from './turn-record.ts';

export type { CancelledTurnView, RunningTurnView };

type Listener = (entry: StreamEntry | undefined) => void;

/**
 * One event of a turn's stream as it is kept: numbered in the turn (`seq`), with the run of the
 * turn that emitted it (`epoch`: a turn resumed after a restart runs again under a new one). A
 * stretch of text deltas is kept as one, `first` to `seq`, with the text's length after each.
 */
export interface StreamEntry {
  first: number;
  seq: number;
  epoch: string;
  event: AgentEvent;
  /** For a stretch of text: the text's length after each delta, `first` to `seq`. */
  ends?: number[];
}

/**
 * An event a follower gets, with its id (`Last-Event-ID`); or `rewind` (see {@link LiveTurn.follow}).
 * An event without an id is one a node that did not run the turn tells of its end (see `followElsewhere`).
 */
export type FollowedEvent = { id?: string; event: AgentEvent } | { rewind: string };

/** The stream events not yet saved, as a journal step keeps them (see {@link LiveTurn.unsaved}). */
export interface StreamStepData {
  entries: StreamEntry[];
}

/** The id of an event of a turn's stream: `<turn id>:<epoch>:<seq>`. */
export function eventId(turnId: string, entry: { epoch: string; seq: number }): string {
  return `${turnId}:${entry.epoch}:${entry.seq}`;
}

/** An event id as {@link eventId} writes it; undefined when it is not one. */
export function parseEventId(id: string): { turnId: string; epoch: string; seq: number } | undefined {
  const match = /^(.+):([^:]+):(\d{1,15})$/.exec(id);
  if (match === null) return undefined;
  return { turnId: match[1] as string, epoch: match[2] as string, seq: Number(match[3]) };
}

/** An event of a turn's stream, named by its id's parts. */
export type EventId = NonNullable<ReturnType<typeof parseEventId>>;

/** A turn under way as `GET …/turn` shows it: `runId` once it runs (queued before), on this node or another. */
export function runningTurnView(runId: string | undefined, message: string, receivedAt: number): RunningTurnView {
  return { run_id: runId ?? null, message, received_at: new Date(receivedAt).toISOString(), state: runId === undefined ? 'queued' : 'running' };
}

/** Whether `entries` (a turn's events, in order) hold the event `id` names. */
export function holdsEvent(entries: readonly StreamEntry[], id: EventId): boolean {
  return entries.some((entry) => entry.epoch === id.epoch && entry.first <= id.seq && id.seq <= entry.seq);
}

/**
 * The events of turn `turnId` in `entries` after its event number `from` (every one from 0), each
 * with its id: of a stretch of text the follower has the start of, the rest of it.
 */
export function eventsAfter(turnId: string, entries: readonly StreamEntry[], from: number): { id: string; event: AgentEvent }[] {
  const events: { id: string; event: AgentEvent }[] = [];
  for (const entry of entries) {
    if (entry.seq <= from) continue;
    const id = eventId(turnId, entry);
    if (entry.first <= from && entry.event.type === 'text-delta')
      events.push({ id, event: { type: 'text-delta', text: entry.event.text.slice(entry.ends?.[from - entry.first] ?? 0) } });
    else events.push({ id, event: entry.event });
  }
  return events;
}

/**
 * Follows `turn` after `after` (all of it without), as `LiveTurn.follow` does.
 * @throws {TurnNotRunningError} when `after` is an event of another turn: that one has ended.
 */
function followFrom(turn: LiveTurn, agentName: string, after: EventId | undefined): AsyncIterable<FollowedEvent> {
  if (after !== undefined && after.turnId !== turn.turnId) throw TurnNotRunningError.ended(agentName, eventId(after.turnId, after));
  return turn.follow(after);
}

/** The ids the live turns gave the events they emitted, for a door that streams them as they come (see {@link eventIdOf}). */
const EVENT_IDS = new WeakMap<AgentEvent, { turnId: string; epoch: string; seq: number }>();

/** The id a live turn gave `event` as it emitted it (the SSE `id:` a client reconnects with); undefined for an event no turn emitted. */
export function eventIdOf(event: AgentEvent): string | undefined {
  const id = EVENT_IDS.get(event);
  return id === undefined ? undefined : eventId(id.turnId, id);
}

/**
 * One turn on a session of an agent, from the moment it was accepted until it is committed: its
 * events so far (text deltas joined), each with an id, so that a client that left can follow it
 * again from where it was, and the controller that cancels it. A turn resumed after a restart
 * starts with the events its journal saved (`saved`), and goes on numbering after them.
 */
export class LiveTurn {
  readonly agentId: string;
  /** The conversation whose session it runs on; undefined for the agent's main session. */
  readonly conversation: string | undefined;
  readonly message: string;
  readonly receivedAt: number;
  /** The turn's id: its journal's, when it has one. */
  readonly turnId: string;
  readonly controller = new AbortController();
  runId: string | undefined;
  status: TurnStatus | undefined;
  /** Called when a client first follows the turn while it runs (its caller did not stream it). */
  onShown: (() => void) | undefined;
  readonly #epoch: string;
  readonly #entries: StreamEntry[] = [];
  /** How many of `#entries` the journal has. */
  #saved = 0;
  /**
   * Whether a client has been shown the turn's events (its caller streams it, or someone followed
   * it): until then no one holds an event id to come back with, and the journal saves none.
   */
  #shown: boolean;
  /**
   * Whether its events are saved with the journal's commits though no client here was shown them:
   * on a cluster a client of another node may follow it, from the journal (decision 0059).
   */
  readonly #shared: boolean;
  #seq = 0;
  /** The tool calls the saved events announced: a resumed turn that runs one of them again does not announce it twice. */
  readonly #announced = new Set<string>();
  readonly #listeners = new Set<Listener>();
  readonly #ended: Promise<TurnStatus>;
  #resolve!: (status: TurnStatus) => void;

  constructor(
    agentId: string,
    conversation: string | undefined,
    message: string,
    receivedAt: number,
    stream: { turnId: string; epoch: string; shown: boolean; shared?: boolean; saved?: readonly StreamEntry[] },
  ) {
    this.agentId = agentId;
    this.conversation = conversation;
    this.message = message;
    this.receivedAt = receivedAt;
    this.turnId = stream.turnId;
    this.#epoch = stream.epoch;
    for (const entry of stream.saved ?? []) {
      this.#entries.push(entry);
      this.#seq = Math.max(this.#seq, entry.seq);
      if (entry.event.type === 'tool-call') this.#announced.add(entry.event.toolCallId);
    }
    this.#saved = this.#entries.length;
    this.#shown = stream.shown;
    this.#shared = stream.shared === true;
    this.#ended = new Promise((resolve) => (this.#resolve = resolve));
  }

  /** Whether a client has been shown its events (see `unsaved`). */
  get shown(): boolean {
    return this.#shown;
  }

  /** Whether clients of other nodes may hold its events' ids, read from the journal (see `unsaved`). */
  get shared(): boolean {
    return this.#shared;
  }

  /** Resolves with how the turn ended, once what it did is committed. */
  get ended(): Promise<TurnStatus> {
    return this.#ended;
  }

  /** Keeps an event of the turn, gives it its id and hands it to its followers. */
  emit(event: AgentEvent): void {
    if (this.status !== undefined) return;
    if (event.type === 'tool-call' && this.#announced.has(event.toolCallId)) return;
    if (event.type === 'run-start') this.runId = event.runId;
    this.#seq += 1;
    const seq = this.#seq;
    // The id's text is made when a door asks for it: most events are streamed to no one.
    EVENT_IDS.set(event, { turnId: this.turnId, epoch: this.#epoch, seq });
    const last = this.#entries.at(-1);
    // One text entry per stretch of text not yet saved: a follower needs the text, not each token.
    if (event.type === 'text-delta' && last?.event.type === 'text-delta' && this.#entries.length > this.#saved && last.epoch === this.#epoch) {
      const text = last.event.text + event.text;
      const joined: StreamEntry = {
        first: last.first,
        seq,
        epoch: this.#epoch,
        event: { type: 'text-delta', text },
        ends: [...(last.ends ?? []), text.length],
      };
      this.#entries[this.#entries.length - 1] = joined;
      for (const listener of this.#listeners) listener({ first: seq, seq, epoch: this.#epoch, event });
      return;
    }
    const entry: StreamEntry = { first: seq, seq, epoch: this.#epoch, event, ...(event.type === 'text-delta' ? { ends: [event.text.length] } : {}) };
    this.#entries.push(entry);
    for (const listener of this.#listeners) listener(entry);
  }

  /**
   * The events not yet saved, as a journal step (kind `stream`) to commit with the journal's next
   * step, and from then on taken as saved; undefined when there are none, or when no client has
   * been shown any (they are saved with the first commit after one has) and no other node's may follow it.
   */
  unsaved(): StreamStepData | undefined {
    if ((!this.#shown && !this.#shared) || this.#entries.length === this.#saved) return undefined;
    const entries = this.#entries.slice(this.#saved);
    this.#saved = this.#entries.length;
    return { entries };
  }

  /** Ends the turn (after its commit): `final` is its last event when the flow did not emit one (an error). */
  end(status: TurnStatus, final?: AgentEvent): void {
    if (this.status !== undefined) return;
    if (final !== undefined) this.emit(final);
    this.status = status;
    for (const listener of this.#listeners) listener(undefined);
    this.#listeners.clear();
    this.#resolve(status);
  }

  /** Whether the event `id` names is one the turn still has (one a daemon that died had not saved is not). */
  has(id: EventId): boolean {
    return id.turnId === this.turnId && holdsEvent(this.#entries, id);
  }

  /**
   * The turn's events so far, then the rest as they come, until it ends; with `after` (an event
   * id of this turn), only those after it. When the turn no longer has that event (it was not
   * saved when the daemon stopped; the turn went on from its journal), the follower first gets
   * `rewind`, then every event from the start: what it showed after the last saved one is gone.
   */
  async *follow(after?: EventId): AsyncGenerator<FollowedEvent> {
    // The events so far and the subscription are taken in the same tick: none is missed or repeated.
    const queue = new PushQueue<FollowedEvent>();
    if (!this.#shown) {
      this.#shown = true;
      // What it showed before is saved now: the follower holds those events' ids from here on.
      if (this.status === undefined) this.onShown?.();
    }
    const from = after !== undefined && this.has(after) ? after.seq : 0;
    if (after !== undefined && from === 0)
      queue.push({
        rewind: `the daemon restarted, and event "${eventId(after.turnId, after)}" was said after the last step it saved; the turn goes on from its journal: here it is from the start`,
      });
    for (const event of eventsAfter(this.turnId, this.#entries, from)) queue.push(event);
    const listener: Listener = (entry) => (entry === undefined ? queue.close() : queue.push({ id: eventId(this.turnId, entry), event: entry.event }));
    if (this.status === undefined) this.#listeners.add(listener);
    else queue.close();
    try {
      yield* queue;
    } finally {
      this.#listeners.delete(listener);
    }
  }

  view(): RunningTurnView {
    return runningTurnView(this.runId, this.message, this.receivedAt);
  }
}

/** Turns under way across the kernel: running, and accepted but waiting for their agent. */
export interface TurnCounts {
  running: number;
  queued: number;
}

/** Where live turns are kept: an agent's session, named by its agent and conversation. */
function sessionKey(agentId: string, conversation: string | undefined): string {
  return conversation === undefined ? agentId : `${agentId}\0${conversation}`;
}

/**
 * The turns on agents' sessions that are accepted and not yet committed, per session in the
 * order they run (turns of one agent run one at a time).
 */
export class LiveTurns {
  readonly #bySession = new Map<string, LiveTurn[]>();
  /** Turns that ended lately, kept for a follower that comes back. */
  readonly #ended = new EndedTurns<LiveTurn>();

  /**
   * Follows the turn on that session of the agent: with `after`, the turn it is an event of,
   * while under way (running or queued) or ended lately (the rest of it, then its end); without,
   * the one that runs now.
   * @throws {TurnNotRunningError} when neither is there.
   */
  follow(agent: { id: string; name: string }, conversation: string | undefined, after: EventId | undefined, now: number): AsyncIterable<FollowedEvent> {
    // The turn the client followed, while it is under way: queued behind another one too (turns
    // resumed after a restart wait for each other), not whichever of the session's runs now.
    const own = after === undefined ? undefined : this.followHere(agent.id, conversation, after.turnId, after, now);
    if (own !== undefined) return own;
    const turn = this.current(agent.id, conversation);
    if (turn === undefined)
      throw after === undefined ? new TurnNotRunningError(agent.name, 'follow') : TurnNotRunningError.ended(agent.name, eventId(after.turnId, after));
    return followFrom(turn, agent.name, after);
  }

  /**
   * Follows the turn `turnId` on that session of the agent (after `after`, an event of it, when
   * given) while it is under way here or ended lately (the rest of it, then its end); undefined
   * when it is neither.
   */
  followHere(
    agentId: string,
    conversation: string | undefined,
    turnId: string,
    after: EventId | undefined,
    now: number,
  ): AsyncIterable<FollowedEvent> | undefined {
    const ended = this.#ended.get(turnId, now);
    const turn = ended !== undefined && ended.agentId === agentId && ended.conversation === conversation ? ended : this.find(agentId, conversation, turnId);
    return turn?.follow(after);
  }

  /** Registers a turn just accepted on the session of `conversation` (the main one when undefined), its stream as `LiveTurn` takes it; call `close` when it has ended. */
  open(agentId: string, conversation: string | undefined, message: string, receivedAt: number, stream: ConstructorParameters<typeof LiveTurn>[4]): LiveTurn {
    const turn = new LiveTurn(agentId, conversation, message, receivedAt, stream);
    const key = sessionKey(agentId, conversation);
    const list = this.#bySession.get(key);
    if (list === undefined) this.#bySession.set(key, [turn]);
    else list.push(turn);
    return turn;
  }

  /**
   * Forgets a turn that ended, but for a follower that comes back within `ENDED_TURN_WINDOW_MS`
   * of `now` with one of its event ids (kept only when a client was shown it, or, on a cluster, clients
   * of other nodes may have been: they come back here too, and fewer of those are kept).
   */
  close(turn: LiveTurn, now: number): void {
    // A turn no client was shown, here or elsewhere, has no follower to come back with an event id: nothing to keep.
    if (turn.shown || turn.shared) this.#ended.keep(turn, turn.shown, now);
    else this.#ended.prune(now);
    const key = sessionKey(turn.agentId, turn.conversation);
    const list = this.#bySession.get(key);
    if (list === undefined) return;
    const rest = list.filter((other) => other !== turn);
    if (rest.length === 0) this.#bySession.delete(key);
    else this.#bySession.set(key, rest);
  }

  /** How many turns run now, and how many wait behind another turn of their agent, across every session. */
  counts(): TurnCounts {
    let running = 0;
    let queued = 0;
    for (const list of this.#bySession.values()) {
      for (const turn of list) {
        if (turn.runId === undefined) queued += 1;
        else running += 1;
      }
    }
    return { running, queued };
  }

  /** The turn `turnId` on that session of the agent, while it is under way (running or queued). */
  find(agentId: string, conversation: string | undefined, turnId: string): LiveTurn | undefined {
    return this.#bySession.get(sessionKey(agentId, conversation))?.find((turn) => turn.turnId === turnId);
  }

  /** The turn on that session of the agent that runs now, else the first one waiting. */
  current(agentId: string, conversation?: string): LiveTurn | undefined {
    const list = this.#bySession.get(sessionKey(agentId, conversation)) ?? [];
    return list.find((turn) => turn.runId !== undefined) ?? list[0];
  }
}
