import type { Clock, IdGenerator, Logger, Store, TurnJournalOpen, TurnJournalRecord } from '../contracts/index.ts';
import { LoomError, StoreConflictError, turnCancelledAs } from '../errors/index.ts';
import type { TurnResult } from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { Caller } from './agent-runtime.ts';
import { conversationSessionId } from './conversation-session.ts';
import type { SendOptions, TurnSeal } from './message-flow-contract.ts';
import { noEvents } from './open-turn.ts';
import { finishTurn } from './turn-commit.ts';
import { IDEMPOTENCY_KEY_RETENTION_MS, type JournalPlace, requestRecord } from './turn-journal.ts';

/** How often, at most, a running daemon forgets the keys past their retention: when a message with a key comes. */
export const KEY_PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/** How soon a message with a key tries again to forget the old keys after a try failed. */
export const KEY_PRUNE_RETRY_MS = 60 * 1000;

/** What {@link TurnIntake} is built from. */
export interface TurnIntakeParts {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
}

/** A message as it reaches the intake: whom it is to, what it says, who sent it and how. */
export interface IntakeMessage {
  entry: AgentEntry;
  message: string;
  caller: Caller;
  options: SendOptions;
  /** When the message was accepted (a resumed turn's own time). */
  receivedAt: number;
  /** Whether the agent's type has its own steps (a module): those turns are journaled only when acknowledged. */
  module: boolean;
}

/** The session of a conversation of the agent: its main session without one. */
export function sessionOf(agent: AgentEntry, conversation: string | undefined): string {
  return conversation === undefined ? agent.sessionId : conversationSessionId(agent.id, conversation);
}

/** A key is the caller's own: scoped to the conversation it sends in (a key's principal has its own). */
function scopedKey(conversation: string | undefined, idempotencyKey: string): string {
  return conversation === undefined ? idempotencyKey : `${conversation}\n${idempotencyKey}`;
}

/**
 * A message's place in the turn journal before its turn is queued (decision 0045): a resumed
 * turn's own record, a keyed message's record (a retry with its key finds it, and gets the turn it
 * started), an acknowledged message's, or one the turn writes with its first step; and the turns
 * of this process by journal id while they run.
 */
export class TurnIntake {
  readonly #parts: TurnIntakeParts;
  /** Turns of this process by journal id, while they run: a retry with a turn's key waits for it. */
  readonly #inflight = new Map<string, Promise<TurnResult>>();
  /** When this process last set out to forget the keys past their retention (none yet: the first message with a key does). */
  #keysForgottenAt: number | undefined;

  constructor(parts: TurnIntakeParts) {
    this.#parts = parts;
  }

  /**
   * Where the turn of `intake` is journaled (none for a module turn its caller was not told of), or
   * the earlier turn that the message's idempotency key started.
   */
  async journalOf(intake: IntakeMessage): Promise<{ journal: JournalPlace | undefined } | { earlier: TurnJournalRecord }> {
    const { options } = intake;
    const { resume } = options;
    if (resume !== undefined) return { journal: { turnId: resume.id, record: resume } };
    if (!intake.module && options.idempotencyKey !== undefined) {
      const opened = await this.#openKeyed(intake, options.idempotencyKey);
      return 'earlier' in opened ? opened : { journal: opened };
    }
    if (options.acknowledged === true) {
      // Its caller was told it is taken: recorded now, whatever the agent's type (see `SendOptions.acknowledged`).
      const turnId = this.#parts.ids.uuid();
      await this.#parts.store.turns.open(this.#record(turnId, intake, null));
      return { journal: { turnId } };
    }
    if (!intake.module) {
      // Recorded with its first step that could not be done again (see `TurnJournalWriter`).
      const turnId = this.#parts.ids.uuid();
      return { journal: { turnId, pending: () => this.#record(turnId, intake, null) } };
    }
    return { journal: undefined };
  }

  /**
   * A message sent again with the key of `earlier` (a turn of the agent): that turn's reply, once
   * it ends, instead of a new turn. Its record in the audit log is its own turn's.
   * @throws the error it ended with; `TURN_RUNNING` when it runs elsewhere (another node).
   */
  async replay(earlier: TurnJournalRecord, options: SendOptions, seal: TurnSeal | undefined): Promise<TurnResult> {
    if (seal !== undefined) seal.replayed = true;
    const running = this.#inflight.get(earlier.id);
    if (running !== undefined) return finishTurn(await running, options.emit ?? noEvents);
    const outcome = earlier.state === 'done' ? earlier.outcome : null;
    if (outcome === null) {
      throw new LoomError(
        'TURN_RUNNING',
        'user',
        `the message with idempotency key "${earlier.idempotencyKey ?? ''}" started a turn that is still running on another node; retry later`,
      );
    }
    const reason = typeof outcome['reason'] === 'string' ? outcome['reason'] : undefined;
    if (outcome['status'] === 'finished') return finishTurn(outcome['result'] as unknown as TurnResult, options.emit ?? noEvents);
    // Its reason is the message the first request got (a cancel's names who cancelled it): told as it was.
    if (outcome['status'] === 'cancelled') throw turnCancelledAs(reason);
    throw new LoomError('TURN_FAILED', 'system', `the turn this message started failed: ${reason ?? 'it did not finish'}`);
  }

  /**
   * The turn a message with `idempotencyKey` to `entry` in `conversation` started (a retry's
   * `earlier`), without recording one: undefined when the key started none, or its turn is forgotten.
   */
  earlier(entry: AgentEntry, conversation: string | undefined, idempotencyKey: string): Promise<TurnJournalRecord | undefined> {
    return this.#parts.store.turns.byKey(entry.id, scopedKey(conversation, idempotencyKey));
  }

  /** Tracks the turn journaled as `turnId` while it runs (a retry with its key waits for it); the returned function stops. */
  track(turnId: string, running: Promise<TurnResult>): () => void {
    this.#inflight.set(turnId, running);
    return () => this.#inflight.delete(turnId);
  }

  /** Whether the turn journaled as `turnId` runs or is queued in this process. */
  tracks(turnId: string): boolean {
    return this.#inflight.has(turnId);
  }

  /** The journal ids of this process's turns under way or queued. */
  journaled(): string[] {
    return [...this.#inflight.keys()];
  }

  /**
   * Records a message with an idempotency key to an agent that runs the assistant loop in the turn
   * journal before it is queued, so that a retry finds it; a message whose key started a turn
   * already gets that turn.
   */
  async #openKeyed(intake: IntakeMessage, idempotencyKey: string): Promise<JournalPlace | { earlier: TurnJournalRecord }> {
    const { store } = this.#parts;
    const { entry, options } = intake;
    this.#forgetOldKeys();
    const key = scopedKey(options.conversation, idempotencyKey);
    const earlier = await store.turns.byKey(entry.id, key);
    if (earlier !== undefined) return { earlier };
    const turnId = this.#parts.ids.uuid();
    try {
      await store.turns.open(this.#record(turnId, intake, key));
    } catch (error) {
      // The same key sent twice at once: the second gets the first's turn.
      const first = error instanceof StoreConflictError ? await store.turns.byKey(entry.id, key) : undefined;
      if (first === undefined) throw error;
      return { earlier: first };
    }
    return { turnId };
  }

  /**
   * Forgets the turns given a key that ended more than {@link IDEMPOTENCY_KEY_RETENTION_MS} ago,
   * at most once per {@link KEY_PRUNE_INTERVAL_MS}: a daemon that runs for weeks keeps a day of keys,
   * not every key since it started. Beside the message, not in its way: a failure is logged, and
   * a message with a key tries again {@link KEY_PRUNE_RETRY_MS} later.
   */
  #forgetOldKeys(): void {
    const { clock, store, logger } = this.#parts;
    const now = clock.now();
    if (this.#keysForgottenAt !== undefined && now - this.#keysForgottenAt < KEY_PRUNE_INTERVAL_MS) return;
    this.#keysForgottenAt = now;
    store.turns.prune(now - IDEMPOTENCY_KEY_RETENTION_MS).catch((error: unknown) => {
      // Unless another try has started since: then it is that one's.
      if (this.#keysForgottenAt === now) this.#keysForgottenAt = now - KEY_PRUNE_INTERVAL_MS + KEY_PRUNE_RETRY_MS;
      logger.warn({ err: error }, 'could not forget the idempotency keys past their retention; a message with a key tries again in a minute');
    });
  }

  /** A message to an agent as its turn's journal records it (see `TurnJournalOpen`), under `key` (null without one). */
  #record(turnId: string, intake: IntakeMessage, key: string | null): TurnJournalOpen {
    const { entry, message, caller, options, receivedAt } = intake;
    const request = requestRecord({
      message,
      caller,
      ...(options.person === undefined ? {} : { person: options.person }),
      ...(options.door === undefined ? {} : { door: options.door }),
      ...(options.cycle === true ? { cycle: true } : {}),
      ...(options.wake === undefined ? {} : { wake: options.wake }),
      ...(options.model === undefined ? {} : { model: options.model }),
    });
    return {
      id: turnId,
      agentId: entry.id,
      sessionId: sessionOf(entry, options.conversation),
      conversation: options.conversation ?? null,
      request,
      idempotencyKey: key,
      receivedAt,
    };
  }
}
