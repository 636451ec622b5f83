import type { Clock, UsageRecord, UsageRepository } from '../contracts/index.ts';
import { QuotaExceededError } from '../errors/index.ts';
import { formatCount } from '../runtime/index.ts';
import type { CallSpend, Reservation } from './budget-ledger.ts';
import { SharedTotals, type Spent, spentOf, type UnloggedSpend } from './shared-totals.ts';

/** The window quotas are counted over. */
export const QUOTA_WINDOW_MS = 60 * 60 * 1000;

/** On a shared store, how many of an agent's oldest rows of the hour a refusal reads first to say when it frees. */
const OLDEST_ROWS = 100;
/**
 * On a shared store, how long an agent's hour read from the log stands before a call reads it
 * again: every agent has a quota (1,000,000 tokens an hour by default), so reading at every call
 * would add a statement to every call of every turn on a cluster.
 */
export const QUOTA_READ_EVERY_MS = 1000;

/** An agent's hourly limits; 0 means no limit. */
export interface QuotaLimits {
  maxTokensPerHour: number;
  maxCostPerHour: number;
}

interface Spend extends Spent {
  at: number;
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
 * does not add up the hour again. On a store other nodes share (`shared`), a check or a reservation
 * reads the agent's hour from the log first, at most once a second per agent and node
 * ({@link QUOTA_READ_EVERY_MS}), so that what the other nodes' turns have committed counts
 * (decision 0040): the window is then the log's total, with what this node's calls spent that it
 * has not written yet ({@link SharedTotals}).
 */
export class QuotaTracker {
  readonly #clock: Clock;
  readonly #usage: UsageRepository;
  /** On a store other nodes share: the windows' totals read from the log (none alone). */
  readonly #shared: SharedTotals | undefined;
  readonly #windows = new Map<string, Window>();

  constructor(clock: Clock, usage: UsageRepository, options: { shared?: boolean } = {}) {
    this.#clock = clock;
    this.#usage = usage;
    this.#shared =
      options.shared === true ? new SharedTotals((record) => [record.agentId], { now: () => clock.now(), maxAgeMs: QUOTA_READ_EVERY_MS }) : undefined;
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
        for (const record of records) push(window, { at: record.at, ...spentOf(record) });
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

  /**
   * On a store other nodes share: the agent's window as the usage log holds it (one statement, the
   * sums of its rows of the hour, from the `agent_id, at` index; a read less than
   * {@link QUOTA_READ_EVERY_MS} old stands), with what this node's calls spent that it has not written yet. A window that has reached a limit is refused, saying when
   * it frees from its oldest rows in the log.
   * @throws {QuotaExceededError} as {@link QuotaTracker.check} does.
   */
  async #read(shared: SharedTotals, agentId: string, agentName: string, limits: QuotaLimits): Promise<Window> {
    let window = this.#windows.get(agentId);
    if (window === undefined) {
      window = { spends: [], tokens: 0, costUsd: 0, reservedTokens: 0, reservedCostUsd: 0 };
      this.#windows.set(agentId, window);
    }
    const since = this.#clock.now() - QUOTA_WINDOW_MS + 1;
    const current = window;
    const total = await shared.total(agentId, () => this.#usage.totals({ since, agentId }).then(spentOf), {
      since,
      refuses: (spent) => reached({ ...current, ...spent }, limits),
    });
    if (total !== undefined) Object.assign(window, total);
    if (reached(window, limits)) this.#refuseSpent({ ...window, spends: await this.#oldest(agentId, since, window, limits) }, agentName, limits);
    return window;
  }

  /**
   * The agent's oldest spending in the log since `since`, as much as `window` must lose to fall
   * under its limits: its first rows (most refusals need one or two), all of them when those do not do.
   */
  async #oldest(agentId: string, since: number, window: Window, limits: QuotaLimits): Promise<Spend[]> {
    const read = async (limit?: number): Promise<Spend[]> => {
      const records = await this.#usage.list({ agentId, since, ...(limit === undefined ? {} : { limit }) });
      return records.map((record) => ({ at: record.at, ...spentOf(record) }));
    };
    const first = await read(OLDEST_ROWS);
    const rest = { ...window, tokens: window.tokens - sum(first, (spend) => spend.tokens), costUsd: window.costUsd - sum(first, (spend) => spend.costUsd) };
    return first.length < OLDEST_ROWS || !reached(rest, limits) ? first : read();
  }

  /** Tells the windows that this node wrote `records` to the usage log (see `SharedTotals.logged`). Nothing to do alone. */
  logged(records: readonly UsageRecord[]): void {
    this.#shared?.logged(records);
  }

  /**
   * Refuses work when a limit is reached (spending in the window and calls under way).
   * @throws {QuotaExceededError} saying what was used, the limit and when it frees up.
   */
  async check(agentId: string, agentName: string, limits: QuotaLimits): Promise<void> {
    const window = this.#shared === undefined ? await this.#window(agentId) : await this.#read(this.#shared, agentId, agentName, limits);
    this.#refuseSpent(window, agentName, limits);
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
   * Holds `estimate` (at most what is left under each limit) for one model call of the agent in a
   * piece of work, to be settled with what the call spent (added to the window then; on a shared
   * store, counted in `work` until it is written to the usage log) or released. A call is refused
   * only when nothing is left, so the hour ends at most one call's worth past a limit.
   * @throws {QuotaExceededError} as {@link QuotaTracker.check} does.
   */
  reserve(agentId: string, agentName: string, limits: QuotaLimits, estimate: CallSpend, work: UnloggedSpend): Reservation | Promise<Reservation> {
    if (this.#shared !== undefined)
      return this.#read(this.#shared, agentId, agentName, limits).then((window) => this.#hold(agentId, window, agentName, limits, estimate, work));
    // Seeded once per agent from the usage log; after that a reservation waits for nothing.
    const current = this.#current(agentId);
    if (current === undefined) return this.#window(agentId).then(() => this.reserve(agentId, agentName, limits, estimate, work));
    return this.#hold(agentId, current, agentName, limits, estimate, work);
  }

  #hold(agentId: string, window: Window, agentName: string, limits: QuotaLimits, estimate: CallSpend, work: UnloggedSpend): Reservation {
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
        if (!close() || this.#windows.get(agentId) !== window) return;
        // On a shared store the next read counts it, with the log's total, until this node writes it there.
        if (this.#shared === undefined) push(window, { at: this.#clock.now(), ...spentOf(spent) });
        else this.#shared.settled(agentId, spentOf(spent), work, this.#clock.now());
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
    this.#shared?.forget(agentId);
  }
}

/** Whether the window has reached a limit (its spending with what calls under way hold). */
function reached(window: Window, limits: QuotaLimits): boolean {
  return (
    (limits.maxTokensPerHour > 0 && window.tokens + window.reservedTokens >= limits.maxTokensPerHour) ||
    (limits.maxCostPerHour > 0 && window.costUsd + window.reservedCostUsd >= limits.maxCostPerHour)
  );
}

function sum(spends: readonly Spend[], amount: (spend: Spend) => number): number {
  return spends.reduce((total, spend) => total + amount(spend), 0);
}

function push(window: Window, spend: Spend): void {
  window.spends.push(spend);
  window.tokens += spend.tokens;
  window.costUsd += spend.costUsd;
}
