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

/** One agent's spending in the window, oldest first, with its running totals. */
interface Window {
  spends: Spend[];
  tokens: number;
  costUsd: number;
}

/**
 * Counts each agent's tokens and cost over a rolling hour and refuses work past its limits.
 * Counts live in memory, seeded from the usage log the first time an agent is checked, so a
 * restart does not reset a quota and a turn does not query the database; the totals are kept as
 * spending comes and leaves, so a check does not add up the hour again.
 */
export class QuotaTracker {
  readonly #clock: Clock;
  readonly #usage: UsageRepository;
  readonly #windows = new Map<string, Window>();

  constructor(clock: Clock, usage: UsageRepository) {
    this.#clock = clock;
    this.#usage = usage;
  }

  async #window(agentId: string): Promise<Window> {
    let window = this.#windows.get(agentId);
    if (window === undefined) {
      const since = this.#clock.now() - QUOTA_WINDOW_MS;
      const records = await this.#usage.list({ agentId, since });
      window = { spends: [], tokens: 0, costUsd: 0 };
      for (const record of records) push(window, { at: record.at, tokens: record.inputTokens + record.outputTokens, costUsd: record.costUsd });
      this.#windows.set(agentId, window);
    }
    const cutoff = this.#clock.now() - QUOTA_WINDOW_MS;
    while (window.spends.length > 0 && (window.spends[0]?.at ?? 0) <= cutoff) {
      const gone = window.spends.shift() as Spend;
      window.tokens -= gone.tokens;
      window.costUsd -= gone.costUsd;
    }
    // An empty window owes nothing (no rounding left over from the subtractions).
    if (window.spends.length === 0) {
      window.tokens = 0;
      window.costUsd = 0;
    }
    return window;
  }

  /** What the agent used in the current window. */
  async used(agentId: string): Promise<{ tokens: number; costUsd: number }> {
    const window = await this.#window(agentId);
    return { tokens: window.tokens, costUsd: window.costUsd };
  }

  /**
   * @throws {QuotaExceededError} saying what was used, the limit and when it frees up.
   */
  async check(agentId: string, agentName: string, limits: QuotaLimits): Promise<void> {
    const window = await this.#window(agentId);
    if (limits.maxTokensPerHour > 0 && window.tokens >= limits.maxTokensPerHour) {
      const freeAt = this.#freeAt(window.spends, window.tokens, limits.maxTokensPerHour, (spend) => spend.tokens);
      this.#refuse(agentName, 'tokens', formatCount(window.tokens), formatCount(limits.maxTokensPerHour), freeAt, window.tokens, limits.maxTokensPerHour);
    }
    if (limits.maxCostPerHour > 0 && window.costUsd >= limits.maxCostPerHour) {
      const freeAt = this.#freeAt(window.spends, window.costUsd, limits.maxCostPerHour, (spend) => spend.costUsd);
      this.#refuse(agentName, 'USD', `$${window.costUsd.toFixed(4)}`, `$${limits.maxCostPerHour.toFixed(2)}`, freeAt, window.costUsd, limits.maxCostPerHour);
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
    push(await this.#window(agentId), { at: this.#clock.now(), tokens, costUsd });
  }

  /** Forgets an agent (killed). */
  forget(agentId: string): void {
    this.#windows.delete(agentId);
  }
}

function push(window: Window, spend: Spend): void {
  window.spends.push(spend);
  window.tokens += spend.tokens;
  window.costUsd += spend.costUsd;
}
