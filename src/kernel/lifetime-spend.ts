import type { UsageRepository } from '../contracts/index.ts';
import { QuotaExceededError } from '../errors/index.ts';
import type { Budget, CallSpend, Reservation } from './budget-ledger.ts';

/** The manifest field of the lifetime cap, for messages and `details.budget`. */
export const LIFETIME_SPEND_FIELD = '[capabilities].econ_spend';

/** One agent's spending since it was spawned, and what calls under way hold. */
interface Account {
  spentUsd: number;
  reservedUsd: number;
}

/**
 * Each agent's spending in USD over its whole life (every usage record it has), held to its
 * `[capabilities].econ_spend` as a hard cap: a model call whose estimated cost (its prompt and
 * `max_tokens` at the model's price) is more than what is left is refused before it is sent, so
 * the agent never spends past the cap by more than an estimate falls short. A model with no known
 * price costs nothing here, as in the usage log. Seeded from the usage log the first time an
 * agent calls, so a restart does not reset it.
 */
export class LifetimeSpend {
  readonly #usage: UsageRepository;
  readonly #accounts = new Map<string, Account>();

  constructor(usage: UsageRepository) {
    this.#usage = usage;
  }

  /** The agent's lifetime cap as a budget of the ledger. */
  budget(agentId: string, agentName: string, maxUsd: number): Budget {
    return { reserve: (estimate) => this.#reserve(agentId, agentName, maxUsd, estimate) };
  }

  /** Forgets an agent (killed). */
  forget(agentId: string): void {
    this.#accounts.delete(agentId);
  }

  #reserve(agentId: string, agentName: string, maxUsd: number, estimate: CallSpend): Reservation | Promise<Reservation> {
    const account = this.#accounts.get(agentId);
    if (account !== undefined) return this.#hold(account, agentId, agentName, maxUsd, estimate);
    return this.#usage.totals({ since: 0, agentId }).then((totals) => {
      // Another call may have seeded it meanwhile: that one holds its reservation.
      const seeded = this.#accounts.get(agentId) ?? { spentUsd: totals.costUsd, reservedUsd: 0 };
      this.#accounts.set(agentId, seeded);
      return this.#hold(seeded, agentId, agentName, maxUsd, estimate);
    });
  }

  #hold(account: Account, agentId: string, agentName: string, maxUsd: number, estimate: CallSpend): Reservation {
    const committed = account.spentUsd + account.reservedUsd;
    const left = Math.max(0, maxUsd - committed);
    if (estimate.costUsd > left) {
      throw new QuotaExceededError(
        `agent "${agentName}" may spend $${maxUsd.toFixed(2)} in its life and has spent $${account.spentUsd.toFixed(4)}${account.reservedUsd > 0 ? ` (with $${account.reservedUsd.toFixed(4)} held by calls under way)` : ''}; the next model call would cost about $${estimate.costUsd.toFixed(4)}; the cap is ${LIFETIME_SPEND_FIELD} in its manifest`,
        { details: { agent: agentName, budget: LIFETIME_SPEND_FIELD, unit: 'USD', used: account.spentUsd, limit: maxUsd, estimate: estimate.costUsd } },
      );
    }
    account.reservedUsd += estimate.costUsd;
    let open = true;
    const close = (): boolean => {
      if (!open) return false;
      open = false;
      account.reservedUsd -= estimate.costUsd;
      return true;
    };
    return {
      settle: (spent) => {
        if (close() && this.#accounts.get(agentId) === account) account.spentUsd += spent.costUsd;
      },
      release: () => {
        close();
      },
    };
  }
}
