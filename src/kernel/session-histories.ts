import type { ModelMessage } from 'ai';
import type { Clock, EventRecord, Store, TurnJournalClose, UsageRecord } from '../contracts/index.ts';
import { StoreConflictError, StoreNotFoundError } from '../errors/index.ts';
import { estimateHistoryTokens } from '../runtime/index.ts';

/** How many sessions' histories a kernel keeps in memory between turns. */
export const HISTORY_CACHE_LIMIT = 1_000;

/**
 * Attempts to save a turn: compared with the revision it started from; then, when another writer
 * saved the session meanwhile, appended after it behind the session's row lock; a third only when
 * the session went meanwhile and the turn starts it again.
 */
const SAVE_ATTEMPTS = 3;

/** A session's history as a turn starts from it. */
export interface SessionHistory {
  revision: number;
  createdAt: number;
  /** Never mutated: a turn builds a new array from it. */
  messages: ModelMessage[];
  /**
   * How many leading messages the turn that wrote them found to make a well-formed history (0
   * when unknown, as for a history read from the store): the next turn's repair checks only the rest.
   */
  wellFormed: number;
  /** The estimated tokens of `messages`, once counted (see `SessionHistories.tokensOf`). */
  tokens?: number;
}

/** Whether `messages` starts with exactly the message objects of `prefix`. */
function startsWithAll(messages: readonly ModelMessage[], prefix: readonly ModelMessage[]): boolean {
  if (messages.length < prefix.length) return false;
  for (let index = 0; index < prefix.length; index += 1) if (messages[index] !== prefix[index]) return false;
  return true;
}

/** Reads a stored history loosely: anything that is not a message with a role is dropped (session repair does the rest). */
function readHistory(messages: readonly unknown[] | undefined): ModelMessage[] {
  return (messages ?? []).filter(
    (message): message is ModelMessage => typeof message === 'object' && message !== null && 'role' in message && 'content' in message,
  );
}

/**
 * Sessions' histories for turns. Recent ones stay in memory with the revision they were read or
 * written at, so a turn re-reads a session only when someone else saved it since (one cheap
 * query). Saves are compare-and-swap on the revision: when another writer saved the session in
 * between, the turn's own messages are appended to the newer history instead of overwriting it,
 * so no acknowledged message is lost.
 */
export class SessionHistories {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #cache = new Map<string, SessionHistory>();

  constructor(store: Store, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  #remember(sessionId: string, history: SessionHistory): void {
    this.#cache.delete(sessionId);
    this.#cache.set(sessionId, history);
    if (this.#cache.size > HISTORY_CACHE_LIMIT) this.#cache.delete(this.#cache.keys().next().value ?? '');
  }

  /** The estimated tokens of a history's messages: counted once, then kept with it. */
  tokensOf(history: SessionHistory): number {
    history.tokens ??= estimateHistoryTokens(history.messages);
    return history.tokens;
  }

  /** The current history of a session (empty when it has none). */
  async load(sessionId: string): Promise<SessionHistory> {
    const revision = await this.#store.sessions.revision(sessionId);
    const cached = this.#cache.get(sessionId);
    if (cached !== undefined && cached.revision === revision) return cached;
    // Read after the revision: a save slipping in between makes the next turn read again.
    const session = await this.#store.sessions.get(sessionId);
    const loaded = { revision: revision ?? 0, createdAt: session?.createdAt ?? this.#clock.now(), messages: readHistory(session?.messages), wellFormed: 0 };
    this.#remember(sessionId, loaded);
    return loaded;
  }

  /**
   * Saves `messages` as the session's history, expecting it to still be at `base`'s revision.
   * When it is not (another writer, perhaps another node, saved it meanwhile), `added` (this
   * turn's own messages) is appended after whatever the session holds by then, the session's row
   * locked first in the store, so that append cannot meet another writer's: the turn is kept,
   * its messages together, after the other writer's. The turn's `usage` and `events` (its audit
   * record) commit in the same transaction, and its journal closes with them (`closeTurn`).
   * `wellFormed` leading messages of `messages` are known to make a well-formed history.
   */
  async save(
    target: { sessionId: string; agentId: string; conversation?: string | undefined },
    base: SessionHistory,
    messages: ModelMessage[],
    added: readonly ModelMessage[],
    options: { usage?: readonly UsageRecord[]; events?: readonly Omit<EventRecord, 'seq'>[]; wellFormed?: number; closeTurn?: TurnJournalClose } = {},
  ): Promise<void> {
    const { usage, events, closeTurn } = options;
    const written = {
      ...(usage === undefined ? {} : { usage }),
      ...(events === undefined ? {} : { events }),
      ...(closeTurn === undefined ? {} : { closeTurn }),
    };
    let expected = base;
    let next = messages;
    let known = options.wellFormed ?? 0;
    let conflicted = false;
    for (let attempt = 1; ; attempt += 1) {
      try {
        if (conflicted) {
          // After whatever another writer saved, behind the session's row lock: no compare to fail.
          await this.#store.sessions.append(target.sessionId, added as never[], { updatedAt: this.#clock.now(), ...written });
          // The history it now holds is the other writer's and this turn's: the next turn reads it.
          this.#cache.delete(target.sessionId);
          return;
        }
        // A turn that only added messages appends them; one that rewrote history (compaction,
        // repairs) saves it whole.
        // A session not stored yet (a new conversation's) is created whole.
        const appended = expected.revision > 0 && startsWithAll(next, expected.messages);
        const updatedAt = this.#clock.now();
        const revision = appended
          ? await this.#store.sessions.append(target.sessionId, next.slice(expected.messages.length) as never[], {
              expectedRevision: expected.revision,
              updatedAt,
              ...written,
            })
          : await this.#store.sessions.save(
              {
                id: target.sessionId,
                agentId: target.agentId,
                messages: next as never[],
                createdAt: expected.createdAt,
                updatedAt,
                conversation: target.conversation ?? null,
              },
              { expectedRevision: expected.revision, ...written },
            );
        // A history that grew by the turn's messages is counted from what was known of it before.
        const tokens =
          appended && expected.tokens !== undefined ? estimateHistoryTokens(next, { count: expected.messages.length, tokens: expected.tokens }) : undefined;
        this.#remember(target.sessionId, {
          revision,
          createdAt: expected.createdAt,
          messages: next,
          wellFormed: known,
          ...(tokens === undefined ? {} : { tokens }),
        });
        return;
      } catch (error) {
        if (attempt >= SAVE_ATTEMPTS) throw error;
        this.#cache.delete(target.sessionId);
        if (error instanceof StoreConflictError && !conflicted) {
          conflicted = true;
        } else if (error instanceof StoreNotFoundError && conflicted) {
          // The session went meanwhile (its conversation was reset): the turn starts it again.
          conflicted = false;
          expected = await this.load(target.sessionId);
          next = [...expected.messages, ...added];
          known = 0;
        } else {
          throw error;
        }
      }
    }
  }

  /** Forgets a session (its agent was killed). */
  forget(sessionId: string): void {
    this.#cache.delete(sessionId);
  }
}
