import type { Clock, UsageRepository } from '../contracts/index.ts';
import { QuotaExceededError } from '../errors/index.ts';
import { formatCount } from '../runtime/index.ts';
import type { CallSpend, Reservation } from './budget-ledger.ts';

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

/** One agent's spending in the window, oldest first, with its running totals, and what calls under way hold. */
interface Window {
  spends: Spend[];
  tokens: number;
  costUsd: number;
  reservedTokens: number;
  reservedCostUsd: number;
}

/**
 * Counts each agent's tokens and cost over a rolling hour and refuses work past its limits: a
 * turn when it starts ({@link QuotaTracker.check}) and each model call before it is made
 * ({@link QuotaTracker.reserve}, through the budget ledger). Counts live in memory, seeded from
 * the usage log the first time an agent is checked, so a restart does not reset a quota and a
 * turn does not query the database; the totals are kept as spending comes and leaves, so a check
 * does not add up the hour again.
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
    let window = this.#current(agentId);
    if (window === undefined) {
      const since = this.#clock.now() - QUOTA_WINDOW_MS;
      const records = await this.#usage.list({ agentId, since });
      // Another call may have seeded it meanwhile: that one holds its reservations.
      window = this.#windows.get(agentId);
      if (window === undefined) {
        window = { spends: [], tokens: 0, costUsd: 0, reservedTokens: 0, reservedCostUsd: 0 };
        for (const record of records) push(window, { at: record.at, tokens: record.inputTokens + record.outputTokens, costUsd: record.costUsd });
        this.#windows.set(agentId, window);
      }
    }
    return this.#current(agentId) ?? window;
  }

  /** The agent's window, its spending older than the hour dropped; undefined until it is seeded. */
  #current(agentId: string): Window | undefined {
    const window = this.#windows.get(agentId);
    if (window === undefined) return undefined;
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
   * Refuses work when a limit is reached (spending in the window and calls under way).
   * @throws {QuotaExceededError} saying what was used, the limit and when it frees up.
   */
  async check(agentId: string, agentName: string, limits: QuotaLimits): Promise<void> {
    this.#refuseSpent(await this.#window(agentId), agentName, limits);
  }

  #refuseSpent(window: Window, agentName: string, limits: QuotaLimits): void {
    const tokens = window.tokens + window.reservedTokens;
    if (limits.maxTokensPerHour > 0 && tokens >= limits.maxTokensPerHour) {
      const freeAt = this.#freeAt(window.spends, tokens, limits.maxTokensPerHour, (spend) => spend.tokens);
      this.#refuse(
        agentName,
        'max_tokens_per_hour',
        'tokens',
        formatCount(tokens),
        formatCount(limits.maxTokensPerHour),
        freeAt,
        tokens,
        limits.maxTokensPerHour,
      );
    }
    const costUsd = window.costUsd + window.reservedCostUsd;
    if (limits.maxCostPerHour > 0 && costUsd >= limits.maxCostPerHour) {
      const freeAt = this.#freeAt(window.spends, costUsd, limits.maxCostPerHour, (spend) => spend.costUsd);
      this.#refuse(
        agentName,
        'max_cost_per_hour',
        'USD',
        `$${costUsd.toFixed(4)}`,
        `$${limits.maxCostPerHour.toFixed(2)}`,
        freeAt,
        costUsd,
        limits.maxCostPerHour,
      );
    }
  }

  /**
   * Holds `estimate` (at most what is left under each limit) for one model call of the agent, to
   * be settled with what the call spent (added to the window then) or released. A call is refused
   * only when nothing is left, so the hour ends at most one call's worth past a limit.
   * @throws {QuotaExceededError} as {@link QuotaTracker.check} does.
   */
  reserve(agentId: string, agentName: string, limits: QuotaLimits, estimate: CallSpend): Reservation | Promise<Reservation> {
    // Seeded once per agent from the usage log; after that a reservation waits for nothing.
    const current = this.#current(agentId);
    if (current === undefined) return this.#window(agentId).then(() => this.reserve(agentId, agentName, limits, estimate));
    return this.#hold(agentId, current, agentName, limits, estimate);
  }

  #hold(agentId: string, window: Window, agentName: string, limits: QuotaLimits, estimate: CallSpend): Reservation {
    this.#refuseSpent(window, agentName, limits);
    const left = (limit: number, used: number): number => (limit > 0 ? Math.max(0, limit - used) : Number.POSITIVE_INFINITY);
    const heldTokens = Math.min(estimate.inputTokens + estimate.outputTokens, left(limits.maxTokensPerHour, window.tokens + window.reservedTokens));
    const heldCostUsd = Math.min(estimate.costUsd, left(limits.maxCostPerHour, window.costUsd + window.reservedCostUsd));
    window.reservedTokens += heldTokens;
    window.reservedCostUsd += heldCostUsd;
    let open = true;
    const close = (): boolean => {
      if (!open) return false;
      open = false;
      window.reservedTokens -= heldTokens;
      window.reservedCostUsd -= heldCostUsd;
      return true;
    };
    return {
      settle: (spent) => {
        // A window forgotten meanwhile (the agent was killed) is not brought back.
        if (close() && this.#windows.get(agentId) === window)
          push(window, { at: this.#clock.now(), tokens: spent.inputTokens + spent.outputTokens, costUsd: spent.costUsd });
      },
      release: () => {
        close();
      },
    };
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

  #refuse(agentName: string, field: string, unit: string, usedText: string, limitText: string, freeAt: number, used: number, limit: number): never {
    const minutes = Math.max(1, Math.ceil((freeAt - this.#clock.now()) / 60_000));
    const retryAt = new Date(freeAt).toISOString();
    throw new QuotaExceededError(
      `agent "${agentName}" has used ${usedText} of its ${limitText} ${unit} per hour; it frees up at ${retryAt} (in ${minutes} min); the limit is [resources].${field} in its manifest`,
      { details: { agent: agentName, budget: `[resources].${field}`, unit, used, limit, retryAt } },
    );
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
