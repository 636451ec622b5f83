import { PRIORITIES } from '../manifest/index.ts';

/** An agent's `priority`. */
export type Priority = (typeof PRIORITIES)[number];

/**
 * How many times a waiter may be passed over before it counts one priority higher: a `low` call
 * waits behind at most `3 × AGING_GRANTS` later calls of higher priority, so none starves.
 */
export const AGING_GRANTS = 4;

interface Waiter {
  rank: number;
  passedOver: number;
  grant: () => void;
}

/**
 * A fixed number of slots (the daemon's concurrent model calls, `[models].max_concurrent_calls`)
 * handed out by priority: when every slot is taken, the next free one goes to the waiting call of
 * the highest priority (critical > high > normal > low), first come first served among equals.
 * Each time a waiter is passed over it ages; every {@link AGING_GRANTS} times it counts one
 * priority higher.
 */
export class PriorityGate {
  readonly #slots: number;
  #taken = 0;
  readonly #waiting: Waiter[] = [];

  /** @throws {RangeError} when `slots` is not a positive integer. */
  constructor(slots: number) {
    if (!Number.isSafeInteger(slots) || slots < 1) throw new RangeError(`a priority gate needs a positive whole number of slots, got ${slots}`);
    this.#slots = slots;
  }

  /** Whether a call asking now would wait: every slot is taken, or others wait already. */
  get full(): boolean {
    return this.#taken >= this.#slots || this.#waiting.length > 0;
  }

  /** Calls waiting for a slot now. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Resolves with the release of a slot once one is given to this caller; rejects with the
   * signal's reason when `signal` aborts first (its place in the queue is given up).
   */
  acquire(priority: Priority, signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.#taken < this.#slots && this.#waiting.length === 0) {
      this.#taken += 1;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        const at = this.#waiting.indexOf(waiter);
        if (at !== -1) this.#waiting.splice(at, 1);
        reject(signal?.reason instanceof Error ? signal.reason : new Error('the model call was cancelled while it waited for a slot', { cause: signal?.reason }));
      };
      const waiter: Waiter = {
        rank: PRIORITIES.indexOf(priority),
        passedOver: 0,
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.#releaser());
        },
      };
      this.#waiting.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** A release that frees the slot once, however often it is called. */
  #releaser(): () => void {
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#taken -= 1;
      this.#next();
    };
  }

  #next(): void {
    while (this.#taken < this.#slots && this.#waiting.length > 0) {
      const score = (waiter: Waiter): number => waiter.rank + Math.floor(waiter.passedOver / AGING_GRANTS);
      let chosen = 0;
      this.#waiting.forEach((waiter, index) => {
        if (score(waiter) > score(this.#waiting[chosen] as Waiter)) chosen = index;
      });
      const [waiter] = this.#waiting.splice(chosen, 1) as [Waiter];
      // Those that came before it and were left waiting were passed over.
      for (const other of this.#waiting.slice(0, chosen)) other.passedOver += 1;
      this.#taken += 1;
      waiter.grant();
    }
  }
}
