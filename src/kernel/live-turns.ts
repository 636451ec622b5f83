import type { AgentEvent } from '../runtime/index.ts';
import { PushQueue } from './push-queue.ts';
import type { TurnStatus } from './turn-record.ts';

/** The turn an agent runs on a session now, as the API shows it. Times are ISO 8601. */
export interface RunningTurnView {
  /** The run's id once it started; null while it waits behind another turn of the agent. */
  run_id: string | null;
  message: string;
  received_at: string;
  state: 'running' | 'queued';
}

/** How a cancelled turn ended: `cancelled`, or `finished`/`failed` when it ended before the cancel took. */
export interface CancelledTurnView {
  agent: string;
  run_id: string | null;
  status: TurnStatus;
}

type Listener = (event: AgentEvent | undefined) => void;

/**
 * One turn on a session of an agent, from the moment it was accepted until it is committed: its
 * events so far (text deltas joined), so that a client that left can follow it again, and the
 * controller that cancels it.
 */
export class LiveTurn {
  readonly agentId: string;
  /** The conversation whose session it runs on; undefined for the agent's main session. */
  readonly conversation: string | undefined;
  readonly message: string;
  readonly receivedAt: number;
  readonly controller = new AbortController();
  runId: string | undefined;
  status: TurnStatus | undefined;
  readonly #events: AgentEvent[] = [];
  readonly #listeners = new Set<Listener>();
  readonly #ended: Promise<TurnStatus>;
  #resolve!: (status: TurnStatus) => void;

  constructor(agentId: string, conversation: string | undefined, message: string, receivedAt: number) {
    this.agentId = agentId;
    this.conversation = conversation;
    this.message = message;
    this.receivedAt = receivedAt;
    this.#ended = new Promise((resolve) => (this.#resolve = resolve));
  }

  /** Resolves with how the turn ended, once what it did is committed. */
  get ended(): Promise<TurnStatus> {
    return this.#ended;
  }

  /** Keeps an event of the turn and hands it to its followers. */
  emit(event: AgentEvent): void {
    if (this.status !== undefined) return;
    if (event.type === 'run-start') this.runId = event.runId;
    const last = this.#events.at(-1);
    // One text event per stretch of text: a follower needs the text, not each token.
    if (event.type === 'text-delta' && last?.type === 'text-delta') this.#events[this.#events.length - 1] = { type: 'text-delta', text: last.text + event.text };
    else this.#events.push(event);
    for (const listener of this.#listeners) listener(event);
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

  /** The turn's events so far, then the rest as they come, until it ends. */
  async *follow(): AsyncGenerator<AgentEvent> {
    // The events so far and the subscription are taken in the same tick: none is missed or repeated.
    const queue = new PushQueue<AgentEvent>();
    for (const event of this.#events) queue.push(event);
    const listener: Listener = (event) => (event === undefined ? queue.close() : queue.push(event));
    if (this.status === undefined) this.#listeners.add(listener);
    else queue.close();
    try {
      yield* queue;
    } finally {
      this.#listeners.delete(listener);
    }
  }

  view(): RunningTurnView {
    return { run_id: this.runId ?? null, message: this.message, received_at: new Date(this.receivedAt).toISOString(), state: this.runId === undefined ? 'queued' : 'running' };
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

  /** Registers a turn just accepted on the session of `conversation` (the main one when undefined); call `close` when it has ended. */
  open(agentId: string, conversation: string | undefined, message: string, receivedAt: number): LiveTurn {
    const turn = new LiveTurn(agentId, conversation, message, receivedAt);
    const key = sessionKey(agentId, conversation);
    const list = this.#bySession.get(key);
    if (list === undefined) this.#bySession.set(key, [turn]);
    else list.push(turn);
    return turn;
  }

  /** Forgets a turn that ended. */
  close(turn: LiveTurn): void {
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

  /** The turn on that session of the agent that runs now, else the first one waiting. */
  current(agentId: string, conversation?: string): LiveTurn | undefined {
    const list = this.#bySession.get(sessionKey(agentId, conversation)) ?? [];
    return list.find((turn) => turn.runId !== undefined) ?? list[0];
  }
}
