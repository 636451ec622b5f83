import type { Clock, UsageRepository } from '../contracts/index.ts';
import { QuotaExceededError } from '../errors/index.ts';
import { formatCount } from '../runtime/index.ts';

/** The window quotas are counted over. */
export const QUOTA_WINDOW_MS = 60 * 60 * 1000;

/** An agent's hourly limits; 0 means no limit. */
export interface QuotaLimits {
  maxTokensPerHour: number;
  maxCostPerHour: number;
}

interface Spend {
  at: number;
  tokens: number;
  costUsd: number;
}


/**
 * Counts each agent's tokens and cost over a rolling hour and refuses work past its limits.
 * Counts live in memory, seeded from the usage log the first time an agent is checked, so a
 * restart does not reset a quota and a turn does not query the database.
 */
export class QuotaTracker {
  readonly #clock: Clock;
  readonly #usage: UsageRepository;
  readonly #windows = new Map<string, Spend[]>();

  constructor(clock: Clock, usage: UsageRepository) {
    this.#clock = clock;
    this.#usage = usage;
  }

  async #window(agentId: string): Promise<Spend[]> {
    let window = this.#windows.get(agentId);
    if (window === undefined) {
      const since = this.#clock.now() - QUOTA_WINDOW_MS;
      const records = await this.#usage.list({ agentId, since });
      window = records.map((record) => ({ at: record.at, tokens: record.inputTokens + record.outputTokens, costUsd: record.costUsd }));
      this.#windows.set(agentId, window);
    }
    const cutoff = this.#clock.now() - QUOTA_WINDOW_MS;
    while (window.length > 0 && (window[0]?.at ?? 0) <= cutoff) window.shift();
    return window;
  }

  /** What the agent used in the current window. */
  async used(agentId: string): Promise<{ tokens: number; costUsd: number }> {
    const window = await this.#window(agentId);
    return window.reduce((sum, spend) => ({ tokens: sum.tokens + spend.tokens, costUsd: sum.costUsd + spend.costUsd }), { tokens: 0, costUsd: 0 });
  }

  /**
   * @throws {QuotaExceededError} saying what was used, the limit and when it frees up.
   */
  async check(agentId: string, agentName: string, limits: QuotaLimits): Promise<void> {
    const window = await this.#window(agentId);
    const used = await this.used(agentId);
    if (limits.maxTokensPerHour > 0 && used.tokens >= limits.maxTokensPerHour) {
      const freeAt = this.#freeAt(window, used.tokens, limits.maxTokensPerHour, (spend) => spend.tokens);
      this.#refuse(agentName, 'tokens', formatCount(used.tokens), formatCount(limits.maxTokensPerHour), freeAt, used.tokens, limits.maxTokensPerHour);
    }
    if (limits.maxCostPerHour > 0 && used.costUsd >= limits.maxCostPerHour) {
      const freeAt = this.#freeAt(window, used.costUsd, limits.maxCostPerHour, (spend) => spend.costUsd);
      this.#refuse(agentName, 'USD', `$${used.costUsd.toFixed(4)}`, `$${limits.maxCostPerHour.toFixed(2)}`, freeAt, used.costUsd, limits.maxCostPerHour);
    }
  }

  /** When enough of the oldest spending has left the window for the total to fall under the limit. */
  #freeAt(window: readonly Spend[], total: number, limit: number, amount: (spend: Spend) => number): number {
    let remaining = total;
    for (const spend of window) {
      remaining -= amount(spend);
      if (remaining < limit) return spend.at + QUOTA_WINDOW_MS;
    }
    return this.#clock.now() + QUOTA_WINDOW_MS;
  }

  #refuse(agentName: string, unit: string, usedText: string, limitText: string, freeAt: number, used: number, limit: number): never {
    const minutes = Math.max(1, Math.ceil((freeAt - this.#clock.now()) / 60_000));
    const retryAt = new Date(freeAt).toISOString();
    throw new QuotaExceededError(
      `agent "${agentName}" has used ${usedText} of its ${limitText} ${unit} per hour; it frees up at ${retryAt} (in ${minutes} min)`,
      { details: { agent: agentName, unit, used, limit, retryAt } },
    );
  }

  /** Adds spending at the clock's current time (the caller records it in the usage log). */
  async add(agentId: string, tokens: number, costUsd: number): Promise<void> {
    const window = await this.#window(agentId);
    window.push({ at: this.#clock.now(), tokens, costUsd });
  }

  /** Forgets an agent (killed). */
  forget(agentId: string): void {
    this.#windows.delete(agentId);
  }
}
