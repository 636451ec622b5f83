import { PRIORITIES } from '../manifest/index.ts';

/** An agent's `priority`. */
export type Priority = (typeof PRIORITIES)[number];

/**
 * How many slots may be given while a call waits before it counts one priority higher: a `low`
 * call waits through at most `3 × AGING_GRANTS` slots given to calls of higher priority, so none
 * starves.
 */
export const AGING_GRANTS = 4;

interface Waiter {
  /** Its priority's place in `PRIORITIES` (low 0 … critical 3). */
  rank: number;
  /** Arrival order, for first come first served among equals. */
  seq: number;
  /** How many slots had been given when it started waiting. */
  grantsAtArrival: number;
  grant: () => void;
}

/**
 * A fixed number of slots (the daemon's concurrent model calls, `[models].max_concurrent_calls`)
 * handed out by priority: when every slot is taken, the next free one goes to the waiting call of
 * the highest priority (critical > high > normal > low), first come first served among equals.
 * A waiting call ages: for every {@link AGING_GRANTS} slots given while it waits, it counts one
 * priority higher. One queue per priority, so a slot is given in constant time.
 */
export class PriorityGate {
  readonly #slots: number;
  #taken = 0;
  #grants = 0;
  #seq = 0;
  /** One first-come-first-served queue per priority; the head of each is its oldest, and so its most aged. */
  readonly #queues: WaiterQueue[] = PRIORITIES.map(() => new WaiterQueue());

  /** @throws {RangeError} when `slots` is not a positive integer. */
  constructor(slots: number) {
    if (!Number.isSafeInteger(slots) || slots < 1) throw new RangeError(`a priority gate needs a positive whole number of slots, got ${slots}`);
    this.#slots = slots;
  }

  /** Calls waiting for a slot now. */
  get waiting(): number {
    return this.#queues.reduce((sum, queue) => sum + queue.size, 0);
  }

  /** Whether a call asking now would wait: every slot is taken, or others wait already. */
  get full(): boolean {
    return this.#taken >= this.#slots || this.waiting > 0;
  }

  /**
   * Resolves with the release of a slot once one is given to this caller; rejects with the
   * signal's reason when `signal` aborts first (its place in the queue is given up).
   */
  acquire(priority: Priority, signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    if (!this.full) {
      this.#taken += 1;
      this.#grants += 1;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const queue = this.#queues[PRIORITIES.indexOf(priority)] as WaiterQueue;
      const onAbort = (): void => {
        queue.remove(waiter);
        reject(
          signal?.reason instanceof Error ? signal.reason : new Error('the model call was cancelled while it waited for a slot', { cause: signal?.reason }),
        );
      };
      const waiter: Waiter = {
        rank: PRIORITIES.indexOf(priority),
        seq: this.#seq++,
        grantsAtArrival: this.#grants,
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.#releaser());
        },
      };
      queue.push(waiter);
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
    const score = (waiter: Waiter): number => waiter.rank + Math.floor((this.#grants - waiter.grantsAtArrival) / AGING_GRANTS);
    while (this.#taken < this.#slots) {
      let best: WaiterQueue | undefined;
      for (const queue of this.#queues) {
        const head = queue.head;
        const current = best?.head;
        if (head === undefined) continue;
        if (current === undefined || score(head) > score(current) || (score(head) === score(current) && head.seq < current.seq)) best = queue;
      }
      const waiter = best?.shift();
      if (waiter === undefined) return;
      this.#taken += 1;
      this.#grants += 1;
      waiter.grant();
    }
  }
}

/** A first-come-first-served queue that takes from its head in constant time. */
class WaiterQueue {
  #items: Waiter[] = [];
  #start = 0;

  get size(): number {
    return this.#items.length - this.#start;
  }

  get head(): Waiter | undefined {
    return this.#items[this.#start];
  }

  push(waiter: Waiter): void {
    this.#items.push(waiter);
  }

  shift(): Waiter | undefined {
    const waiter = this.#items[this.#start];
    if (waiter === undefined) return undefined;
    this.#start += 1;
    // Drop what was taken once it is most of the array.
    if (this.#start > 1024 && this.#start * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#start);
      this.#start = 0;
    }
    return waiter;
  }

  remove(waiter: Waiter): void {
    const at = this.#items.indexOf(waiter, this.#start);
    if (at !== -1) this.#items.splice(at, 1);
  }
}
