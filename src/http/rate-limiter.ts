/** The outcome of {@link RateLimiter.take}. */
export type RateDecision = { allowed: true } | { allowed: false; retryAfterMs: number };

/** Entries are swept once the map holds this many clients, so idle clients do not pile up. */
const SWEEP_THRESHOLD = 10_000;

const MINUTE_MS = 60_000;

/**
 * A GCRA (generic cell rate algorithm) limiter: each client may spend `perMinute` cost units
 * per minute, in bursts of up to a minute's worth. It keeps one number per client, the
 * theoretical arrival time (TAT): a request of cost `c` moves it `c` emission intervals on,
 * and is refused when that would put it more than the burst allowance ahead of now.
 *
 * @example
 * const limiter = new RateLimiter(500, () => clock.now());
 * limiter.take('key:ci', 30); // { allowed: true }
 */
export class RateLimiter {
  readonly #intervalMs: number;
  readonly #burstMs: number;
  readonly #now: () => number;
  readonly #tats = new Map<string, number>();

  constructor(perMinute: number, now: () => number) {
    this.#intervalMs = MINUTE_MS / perMinute;
    this.#burstMs = MINUTE_MS;
    this.#now = now;
  }

  /** Spends `cost` units of `client`'s allowance, or says how long until it could. */
  take(client: string, cost: number): RateDecision {
    const now = this.#now();
    if (this.#tats.size >= SWEEP_THRESHOLD) this.#sweep(now);
    const tat = Math.max(this.#tats.get(client) ?? now, now);
    const next = tat + cost * this.#intervalMs;
    const ahead = next - now;
    if (ahead > this.#burstMs) return { allowed: false, retryAfterMs: ahead - this.#burstMs };
    this.#tats.set(client, next);
    return { allowed: true };
  }

  #sweep(now: number): void {
    for (const [client, tat] of this.#tats) if (tat <= now) this.#tats.delete(client);
  }
}
