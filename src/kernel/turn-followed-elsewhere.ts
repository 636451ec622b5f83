import type { Clock, NumberedTurnStep, Store, TurnJournalHead } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';
import type { KernelEvent } from './event-bus.ts';
import { endedLately, endOf } from './followed-turn-end.ts';
import {
  type EventId,
  eventId,
  eventsAfter,
  type FollowedEvent,
  holdsEvent,
  type RunningTurnView,
  runningTurnView,
  type StreamEntry,
  type StreamStepData,
} from './live-turns.ts';
import { PushQueue } from './push-queue.ts';
import { readRequest } from './turn-journal.ts';

/**
 * How often the journal of a turn running on another node is read again while a client here
 * follows it, when no event of its agent came first: each commit of the turn publishes events its
 * node relays (a tool call's, the turn's end), which wake the follower at once; this is the fallback.
 */
export const FOLLOW_ELSEWHERE_POLL_MS = 3_000;

/** What {@link followElsewhere} needs from the kernel. */
export interface FollowElsewhereParts {
  store: Store;
  clock: Clock;
  /** Subscribes to the kernel's events, other nodes' among them (their relay): one of the turn's agent has its journal read again at once. */
  subscribe(listener: (event: KernelEvent) => void): () => void;
  /** Follows turn `turnId` as this node runs it (it took it over) or ran it lately, after `after`; undefined when it does not. */
  here(turnId: string, after: EventId | undefined): AsyncIterable<FollowedEvent> | undefined;
  /** Aborts when the kernel shuts down: a follower with no signal of its own (the Kernel API's) stops then. */
  closing: AbortSignal;
}

/**
 * Follows a turn the journal holds running on another node (a cluster: decision 0059, amended):
 * the turn `after` is an event of, or without it the oldest running turn on that session of the
 * agent. The follower gets the events its node saved with each step it recorded (the same ids as
 * there), the steps after those it read read again at every event of its agent this node hears
 * and every {@link FOLLOW_ELSEWHERE_POLL_MS}; once this node runs the turn (it took it over), its
 * events as they come; once the turn ended elsewhere, the rest of its text and its end, from the
 * session. It stops when `signal` aborts (the client left) or the kernel shuts down. A client that
 * comes back with an event of a turn that ended elsewhere within the last two minutes gets its end
 * (see `endedLately`); `where` names the session of the agent it asks about.
 * @returns undefined when the journal holds no such running turn, and no such turn ended lately.
 */
export async function followElsewhere(
  parts: FollowElsewhereParts,
  where: { agentId: string; sessionId: string; conversation: string | undefined },
  after: EventId | undefined,
  signal: AbortSignal | undefined,
): Promise<AsyncIterable<FollowedEvent> | undefined> {
  const { agentId, sessionId } = where;
  const session = where.conversation ?? null;
  // Its steps are read for a follower only: `GET …/session` reads the turn alone (`runningElsewhere`).
  const turnId = after?.turnId ?? (await parts.store.turns.runningOn(agentId, session))?.id;
  const read = turnId === undefined ? undefined : await parts.store.turns.stepsSince(turnId, 0, 'stream');
  const ours = read !== undefined && read.turn.agentId === agentId && read.turn.conversation === session;
  if (ours && read.turn.state === 'running') return journalEvents(parts, read.turn, read.steps, after, signal);
  if (after === undefined) return undefined;
  // A client back after the end, with an event of the turn: its end, from the session, while its node keeps its events.
  const ended = await endedLately(parts, { id: after.turnId, agentId, sessionId }, ours ? read.turn : undefined);
  if (ended === undefined) return undefined;
  const queue = new PushQueue<FollowedEvent>();
  for (const event of ended) queue.push(event);
  queue.close();
  return queue;
}

/**
 * The turn the journal holds running on that session of the agent, as `GET …/turn` shows it (on a
 * cluster, one another node runs; its `run_id` is the turn's id): the oldest, when several are.
 * One row read, at its index, without its steps.
 */
export async function runningElsewhere(store: Store, agentId: string, conversation: string | undefined): Promise<RunningTurnView | undefined> {
  const turn = await store.turns.runningOn(agentId, conversation ?? null);
  return turn === undefined ? undefined : runningTurnView(turn.id, readRequest(turn.request)?.message ?? '', turn.receivedAt);
}

/**
 * How long a cancel waits at most for a turn the journal leases to this very node to run here: it
 * took the turn over (decision 0061) and is resuming it; each {@link RESUMING_HERE_POLL_MS} it looks again.
 */
export const RESUMING_HERE_WAIT_MS = 2_000;
export const RESUMING_HERE_POLL_MS = 50;

/** A node's lease on a running turn when the kernel is not told it (`[cluster] turn_lease_seconds`' default). */
export const DEFAULT_TURN_LEASE_MS = 15_000;

/**
 * How soon a cancel refused for a turn another node is to take over may be asked again (its
 * `Retry-After`): once the turn's lease lapsed, within `leaseMs`, and the next look for such turns
 * (every second) took it over.
 */
const afterTakeover = (leaseMs: number): number => Math.ceil(leaseMs / 1000) + 1;

/** What {@link cancelElsewhere} needs from the kernel. */
export interface CancelElsewhereParts<T> {
  store: Store;
  clock: Clock;
  /** The node `id` when it runs now, with how it is shown. */
  find(id: string): Promise<{ name: string; url: string | null } | undefined>;
  /** This node's id, as the journal leases turns to it. */
  self: string;
  /** How long a node holds a running turn without renewing its lease: a refusal to try again says when. */
  leaseMs: number;
  /** The turn of that session running (or waiting) here now, if any. */
  here(): T | undefined;
  /** Aborts when the kernel shuts down: a turn resuming here waited for is waited for no longer. */
  closing: AbortSignal;
}

/**
 * Why this node does not cancel the turn of that session of the agent another node runs (the
 * journal holds it running, leased to that node): which node, and to cancel it there; undefined
 * when the journal holds no running turn there. A cancel stops a turn in the memory of its node.
 * A turn leased to this very node (taken over, and not running here yet) is waited for, at most
 * {@link RESUMING_HERE_WAIT_MS} on the kernel's clock: `{ here }` once it runs here, to cancel;
 * the kernel shutting down meanwhile ends the wait (it will not resume here).
 */
export async function cancelElsewhere<T>(
  parts: CancelElsewhereParts<T>,
  agent: { id: string; name: string },
  conversation: string | undefined,
): Promise<LoomError | { here: T } | undefined> {
  const turn = await parts.store.turns.runningOn(agent.id, conversation ?? null);
  if (turn === undefined) return undefined;
  if (turn.nodeId === parts.self) {
    for (const deadline = parts.clock.now() + RESUMING_HERE_WAIT_MS; parts.clock.now() < deadline;) {
      const slept = await parts.clock.sleep(RESUMING_HERE_POLL_MS, { signal: parts.closing }).then(
        () => true,
        () => false,
      );
      if (!slept)
        return new LoomError(
          'TURN_ELSEWHERE',
          'user',
          `cannot cancel the turn of agent "${agent.name}": this node is shutting down, so turn "${turn.id}", which it took over (decision 0061), will not resume here; the node that takes it over once its lease lapses can cancel it; try again in a few seconds`,
          { details: { agent: agent.name, turnId: turn.id, retryAfterSeconds: afterTakeover(parts.leaseMs) }, isRetryable: true },
        );
      const here = parts.here();
      if (here !== undefined) return { here };
    }
    // Still not running here: it ended meanwhile, or its resumption is slow.
    const still = await parts.store.turns.runningOn(agent.id, conversation ?? null);
    if (still?.id !== turn.id || still.nodeId !== parts.self) return undefined;
    return new LoomError(
      'TURN_ELSEWHERE',
      'user',
      `cannot cancel the turn of agent "${agent.name}" yet: turn "${turn.id}" is resuming on this node, which took it over (decision 0061); try again in a few seconds`,
      { details: { agent: agent.name, turnId: turn.id, resuming: true, retryAfterSeconds: RESUMING_HERE_WAIT_MS / 1000 }, isRetryable: true },
    );
  }
  const node = turn.nodeId === null ? undefined : await parts.find(turn.nodeId);
  const where =
    node === undefined
      ? 'on a node that no longer answers: another node takes it over once its lease lapses (decision 0061), and can cancel it then; try again in a few seconds'
      : `on node "${node.name}"${node.url === null ? '' : ` (${node.url})`}: cancel it there, with the same request`;
  // A turn whose node no longer answers may be cancelled here or elsewhere once it is taken over: asked again then.
  return new LoomError('TURN_ELSEWHERE', 'user', `cannot cancel the turn of agent "${agent.name}" on this node: turn "${turn.id}" runs ${where}`, {
    details: {
      agent: agent.name,
      turnId: turn.id,
      ...(node === undefined ? { retryAfterSeconds: afterTakeover(parts.leaseMs) } : { node: node.name, url: node.url }),
    },
    isRetryable: node === undefined,
  });
}

/** The stream entries the `stream` steps `steps` saved, in order. */
const entriesOf = (steps: readonly NumberedTurnStep[]): StreamEntry[] => steps.flatMap((step) => (step.data as unknown as StreamStepData).entries ?? []);

/** The events of turn `turn` (its `stream` steps so far `steps`) after `after`, as {@link followElsewhere} gives them. */
async function* journalEvents(
  parts: FollowElsewhereParts,
  turn: TurnJournalHead,
  steps: readonly NumberedTurnStep[],
  after: EventId | undefined,
  signal: AbortSignal | undefined,
): AsyncGenerator<FollowedEvent> {
  const entries = entriesOf(steps);
  // The number of the next step to read.
  let next = (steps.at(-1)?.seq ?? -1) + 1;
  // The last event given (none yet: from the start).
  let last: EventId | undefined;
  if (after !== undefined && holdsEvent(entries, after)) last = after;
  else if (after !== undefined)
    yield {
      rewind: `event "${eventId(after.turnId, after)}" is not among the events saved of this turn, which runs on another node (a node saves them with each step of the turn it records; one that stopped took those it had not saved with it): here it is from the start`,
    };
  // Aborted to read the journal again at once: by an event of the agent, the client leaving, the kernel stopping.
  let wake = new AbortController();
  const stop = (): void => wake.abort();
  const left = (): boolean => signal?.aborted === true || parts.closing.aborted;
  signal?.addEventListener('abort', stop);
  parts.closing.addEventListener('abort', stop);
  const unsubscribe = parts.subscribe((event) => {
    if (event.agentId === turn.agentId) wake.abort();
  });
  try {
    while (!left()) {
      // Taken over by this node (or ended here lately): followed as this node runs it, from the last event given.
      const here = parts.here(turn.id, last);
      if (here !== undefined) {
        yield* here;
        return;
      }
      yield* eventsAfter(turn.id, entries, last?.seq ?? 0);
      const newest = entries.at(-1);
      if (newest !== undefined && newest.seq > (last?.seq ?? 0)) last = { turnId: turn.id, epoch: newest.epoch, seq: newest.seq };
      await parts.clock.sleep(FOLLOW_ELSEWHERE_POLL_MS, { signal: wake.signal }).catch(() => undefined);
      if (left()) return;
      if (wake.signal.aborted) wake = new AbortController();
      const read = await parts.store.turns.stepsSince(turn.id, next, 'stream');
      if (read?.turn.state === 'running') {
        entries.push(...entriesOf(read.steps));
        next = (read.steps.at(-1)?.seq ?? next - 1) + 1;
        continue;
      }
      // It ended: here, when this node had taken it over (its events keep their ids), else elsewhere.
      const ended = parts.here(turn.id, last);
      yield* ended ?? (await endOf(parts.store, turn, read?.turn, entries, last));
      return;
    }
  } finally {
    unsubscribe();
    signal?.removeEventListener('abort', stop);
    parts.closing.removeEventListener('abort', stop);
  }
}
