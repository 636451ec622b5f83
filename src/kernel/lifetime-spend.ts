import type { UsageRepository } from '../contracts/index.ts';
import { QuotaExceededError } from '../errors/index.ts';
import type { Budget, CallSpend, Reservation } from './budget-ledger.ts';

/** The manifest field of the lifetime cap, for messages and `details.budget`. */
export const LIFETIME_SPEND_FIELD = '[capabilities].econ_spend';

/** A cap in dollars as the manifest gives it, to the cent at least: $10.00, $0.035, $0.00001 (never rounded to $0.0000). */
function dollars(usd: number): string {
  return usd.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 20, useGrouping: false });
}

/** What one agent and its descendants have spent since it was spawned, and what their calls under way hold. */
interface Account {
  spentUsd: number;
  reservedUsd: number;
}

/** An agent whose cap a call draws from: the caller or one of its ancestors. */
export interface CapHolder {
  id: string;
  name: string;
  /** Its own lineage, its id and `/`: where its descendants' usage records are found (see `UsageRecord.lineage`). */
  descendants: string;
}

/**
 * The `lineage` of an agent's usage records: `ancestors` (its parent first, as `AgentEntry.ancestors`
 * holds them) from the root down, each id followed by `/`; empty for an agent no agent spawned.
 * Of an agent and its ancestors (`[agent, ...agent.ancestors]`), where its descendants' records are
 * found (`CapHolder.descendants`). The one place a lineage is written.
 */
export function lineageOf(ancestors: readonly { id: string }[]): string {
  return ancestors.reduceRight((lineage, ancestor) => `${lineage}${ancestor.id}/`, '');
}

/**
 * Each agent's spending in USD over its whole life, with the spending of every agent it spawned
 * and they spawned in turn (every usage record of theirs, killed agents' included), held to its
 * `[capabilities].econ_spend` as a hard cap: a model call of the agent or of a descendant whose
 * estimated cost (its prompt and `max_tokens` at the model's price) is more than what is left is
 * refused before it is sent, so the family never spends past the cap by more than an estimate
 * falls short. A model with no known price costs nothing here, as in the usage log. Seeded from
 * the usage log (the agent's records and those under its lineage) the first time a call draws
 * from it, so a restart does not reset it.
 */
export class LifetimeSpend {
  readonly #usage: UsageRepository;
  readonly #accounts = new Map<string, Account>();

  constructor(usage: UsageRepository) {
    this.#usage = usage;
  }

  /** `holder`'s lifetime cap as a budget of the ledger, for a call of agent `caller` (the holder or a descendant). */
  budget(holder: CapHolder, maxUsd: number, caller: string): Budget {
    return { reserve: (estimate) => this.#reserve(holder, maxUsd, caller, estimate) };
  }

  /**
   * The cap of `ancestor`, an agent above `caller` that this kernel does not hold (its stored
   * manifest did not validate at start): not known, so it refuses every call (decision 0040).
   */
  unknown(ancestor: { id: string; name: string }, caller: string): Budget {
    return {
      reserve: () => {
        throw new QuotaExceededError(
          `agent "${caller}" may not call a model: it descends from agent "${ancestor.name}" (${ancestor.id}), which is not loaded (its stored manifest did not validate when Loom started; the daemon's log says why), so the ${LIFETIME_SPEND_FIELD} cap in its manifest, which covers what agent "${caller}" spends, is not known: the agents under it call no model until it loads again`,
          { details: { agent: caller, budget: LIFETIME_SPEND_FIELD, capOf: ancestor.name, unloaded: ancestor.id } },
        );
      },
    };
  }

  /** Forgets an agent (killed): its ancestors' accounts keep what it spent. */
  forget(agentId: string): void {
    this.#accounts.delete(agentId);
  }

  #reserve(holder: CapHolder, maxUsd: number, caller: string, estimate: CallSpend): Reservation | Promise<Reservation> {
    const account = this.#accounts.get(holder.id);
    if (account !== undefined) return this.#hold(account, holder, maxUsd, caller, estimate);
    return this.#usage.totals({ since: 0, agentId: holder.id, descendants: holder.descendants }).then((totals) => {
      // Another call may have seeded it meanwhile: that one holds its reservation.
      const seeded = this.#accounts.get(holder.id) ?? { spentUsd: totals.costUsd, reservedUsd: 0 };
      this.#accounts.set(holder.id, seeded);
      return this.#hold(seeded, holder, maxUsd, caller, estimate);
    });
  }

  #hold(account: Account, holder: CapHolder, maxUsd: number, caller: string, estimate: CallSpend): Reservation {
    const committed = account.spentUsd + account.reservedUsd;
    const left = Math.max(0, maxUsd - committed);
    if (estimate.costUsd > left) {
      const own = holder.name === caller;
      const whose = own ? 'its manifest' : `the manifest of agent "${holder.name}", which agent "${caller}" descends from`;
      throw new QuotaExceededError(
        `agent "${holder.name}" may spend $${dollars(maxUsd)} in its life, with the agents it spawns, and has spent $${account.spentUsd.toFixed(4)}${account.reservedUsd > 0 ? ` (with $${account.reservedUsd.toFixed(4)} held by calls under way)` : ''}; the next model call${own ? '' : ` of agent "${caller}"`} would cost about $${estimate.costUsd.toFixed(4)}; the cap is ${LIFETIME_SPEND_FIELD} in ${whose}`,
        {
          details: {
            agent: caller,
            budget: LIFETIME_SPEND_FIELD,
            ...(own ? {} : { capOf: holder.name }),
            unit: 'USD',
            used: account.spentUsd,
            limit: maxUsd,
            estimate: estimate.costUsd,
          },
        },
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
        if (close() && this.#accounts.get(holder.id) === account) account.spentUsd += spent.costUsd;
      },
      release: () => {
        close();
      },
    };
  }
}
