/**
 * How long a turn's events are kept after it ended, for a client whose stream broke just before
 * the end to get the rest with its `Last-Event-ID` (decision 0059); and how many ended turns at most.
 */
export const ENDED_TURN_WINDOW_MS = 2 * 60 * 1000;
const ENDED_TURNS_KEPT = 200;
/**
 * How many ended turns at most that no client here was shown and clients of other nodes may have
 * been (on PostgreSQL every journaled turn: a channel's, a schedule's, an A2A task's): kept apart
 * from those shown here, so that a stream of them does not push those out before their window ends.
 */
const ENDED_SHARED_TURNS_KEPT = 50;

/** A turn that ended lately, with when it is forgotten. */
interface Ended<T> {
  turn: T;
  until: number;
}

/**
 * Turns that ended lately, each kept {@link ENDED_TURN_WINDOW_MS} for a follower that comes back
 * with one of its event ids: those a client here was shown, and apart from them (fewer) those only
 * clients of other nodes may have been.
 */
export class EndedTurns<T extends { turnId: string }> {
  readonly #shown = new Map<string, Ended<T>>();
  readonly #shared = new Map<string, Ended<T>>();

  /** Keeps `turn`, ended at `now`: `shown` when a client here was shown it. */
  keep(turn: T, shown: boolean, now: number): void {
    this.prune(now);
    const [ended, kept] = shown ? [this.#shown, ENDED_TURNS_KEPT] : [this.#shared, ENDED_SHARED_TURNS_KEPT];
    ended.set(turn.turnId, { turn, until: now + ENDED_TURN_WINDOW_MS });
    for (const oldest of ended.keys()) {
      if (ended.size <= kept) break;
      ended.delete(oldest);
    }
  }

  /** The turn `turnId` when it is still kept at `now`. */
  get(turnId: string, now: number): T | undefined {
    this.prune(now);
    return (this.#shown.get(turnId) ?? this.#shared.get(turnId))?.turn;
  }

  /** Forgets the turns whose window is over at `now`. */
  prune(now: number): void {
    for (const ended of [this.#shown, this.#shared]) {
      // Kept in the order they ended, each for the same window: the first one still kept ends the pruning.
      for (const [turnId, { until }] of ended) {
        if (until > now) break;
        ended.delete(turnId);
      }
    }
  }
}
