import type { UsageRecord, UsageRepository } from '../contracts/index.ts';
import { CapabilityDeniedError, QuotaExceededError } from '../errors/index.ts';
import type { UnheldAgent } from './agent-restorer.ts';
import { type Budget, type CallSpend, joined, type Reservation } from './budget-ledger.ts';
import { SharedTotals, type Spent, spentOf, type UnloggedSpend } from './shared-totals.ts';

/** The manifest field of the lifetime cap, for messages and `details.budget`. */
export const LIFETIME_SPEND_FIELD = '[capabilities].econ_spend';

/**
 * Dollars to the cent at least, never rounded to nothing ($0.00001, not $0.0000), to `digits`
 * significant digits: 12 by default, a cap as the manifest gives it ($10.00, $0.035); fewer for a
 * sum or an estimate of prices, so that float's noise does not show ($0.03, not $0.030000000000000002).
 */
function dollars(usd: number, digits = 12): string {
  return Number(usd.toPrecision(digits)).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 20, useGrouping: false });
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

/** A cap a call draws from: its holder and its dollars. */
export interface Cap extends CapHolder {
  maxUsd: number;
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
 * from it, so a restart does not reset it. On a store other nodes share (`shared`), each call
 * reads the family's total from the log again first, so that what the other nodes' turns have
 * committed counts (decision 0040): the account is then the log's total, with what this node's
 * calls spent that it has not written yet ({@link SharedTotals}).
 */
export class LifetimeSpend {
  readonly #usage: UsageRepository;
  /** On a store other nodes share: the accounts' totals read from the log (none alone). */
  readonly #shared: SharedTotals | undefined;
  readonly #accounts = new Map<string, Account>();

  constructor(usage: UsageRepository, options: { shared?: boolean } = {}) {
    this.#usage = usage;
    // A record counts in its caller's account and in those of the agents above it (its lineage: `root/…/parent/`).
    this.#shared =
      options.shared === true ? new SharedTotals((record) => [record.agentId, ...(record.lineage ?? '').split('/').filter((id) => id !== '')]) : undefined;
  }

  /**
   * The lifetime caps of `caps` (the caller's own first, then its ancestors' up its line) as one
   * budget of the ledger, for the calls of agent `caller` in a piece of work: a call holds its
   * estimate in each or in none, the first that refuses naming itself. Their totals are read from
   * the log together, in one statement (at each call on a shared store, the first time alone). On
   * a shared store, what the calls spend counts in `work` until it is written to the usage log.
   */
  budget(caps: readonly Cap[], caller: string, work: UnloggedSpend): Budget {
    return { reserve: (estimate) => this.#reserve(caps, caller, estimate, work) };
  }

  /**
   * The cap of `ancestor`, an agent above `caller` that this kernel does not hold, when it cannot
   * be read: its stored manifest does not validate and its `econ_spend` does not read as dollars
   * (`stored`, skipped at start or when this node would have adopted it), or nothing is known of
   * it here. It refuses every call, as a capability refused (decision 0040): waiting does not help.
   */
  unknown(ancestor: { id: string; name: string }, caller: string, stored: UnheldAgent | undefined): Budget {
    const which = `agent "${ancestor.name}" (${ancestor.id})`;
    const why =
      stored === undefined
        ? `${which}, which this node does not hold (it has not adopted it from the store), so the ${LIFETIME_SPEND_FIELD} cap in its manifest, which covers what agent "${caller}" spends, is not known; restart this node so that it reads every stored agent again`
        : `${which}, which was ${stored.skipped === 'start' ? 'skipped when Loom started' : 'not adopted on this node'} because its stored manifest does not validate (the daemon's log says why), and whose ${LIFETIME_SPEND_FIELD} there, which caps what agent "${caller}" spends, is not a number of dollars; ${stored.skipped === 'start' ? 'correct the stored manifest, or run the Loom version that stored it, and restart Loom' : 'run this node on the Loom version of the node that stored it, or correct the stored manifest'}`;
    return {
      reserve: () => {
        throw new CapabilityDeniedError(`agent "${caller}" may not call a model: it descends from ${why}`, {
          details: {
            agent: caller,
            budget: LIFETIME_SPEND_FIELD,
            capOf: ancestor.name,
            unloaded: ancestor.id,
            ...(stored === undefined ? {} : { skipped: stored.skipped }),
          },
        });
      },
    };
  }

  /** Forgets an agent (killed): its ancestors' accounts keep what it spent. */
  forget(agentId: string): void {
    this.#accounts.delete(agentId);
    this.#shared?.forget(agentId);
  }

  /**
   * Tells the accounts that this node wrote `records` to the usage log (see `SharedTotals.logged`).
   * Nothing to do alone.
   */
  logged(records: readonly UsageRecord[]): void {
    this.#shared?.logged(records);
  }

  #reserve(caps: readonly Cap[], caller: string, estimate: CallSpend, work: UnloggedSpend): Reservation | Promise<Reservation> {
    if (this.#shared !== undefined) return this.#reserveShared(this.#shared, caps, caller, estimate, work);
    const accounts = caps.map((cap) => this.#accounts.get(cap.id));
    if (accounts.every((account) => account !== undefined)) return this.#holdAll(caps, accounts, caller, estimate, work);
    const unread = caps.filter((_, index) => accounts[index] === undefined);
    return this.#read(unread).then((totals) => {
      const seeded = caps.map((cap) => {
        // Another call may have seeded it meanwhile: that one holds its reservation.
        const account = this.#accounts.get(cap.id) ?? { spentUsd: (totals[unread.indexOf(cap)] as Spent).costUsd, reservedUsd: 0 };
        this.#accounts.set(cap.id, account);
        return account;
      });
      return this.#holdAll(caps, seeded, caller, estimate, work);
    });
  }

  /** The totals of the families of `caps` in the usage log, in one statement. */
  async #read(caps: readonly CapHolder[]): Promise<Spent[]> {
    const totals = await this.#usage.familyTotals(caps.map((cap) => ({ agentId: cap.id, descendants: cap.descendants })));
    if (totals.length !== caps.length) throw new Error(`the usage log answered ${totals.length} totals for ${caps.length} families`);
    return totals.map(spentOf);
  }

  /** On a store other nodes share: the families' totals read from the log at every call, then held as alone. */
  async #reserveShared(shared: SharedTotals, caps: readonly Cap[], caller: string, estimate: CallSpend, work: UnloggedSpend): Promise<Reservation> {
    const accounts = caps.map((cap) => {
      const account = this.#accounts.get(cap.id) ?? { spentUsd: 0, reservedUsd: 0 };
      this.#accounts.set(cap.id, account);
      return account;
    });
    const asked = caps.map((cap, index) => ({
      account: cap.id,
      cap,
      refuses: (spent: Spent) => refuses(cap.maxUsd, spent.costUsd + (accounts[index] as Account).reservedUsd, estimate),
    }));
    const totals = await shared.totals(asked, (read) => this.#read(read.map(({ cap }) => cap)));
    totals.forEach((total, index) => {
      if (total !== undefined) (accounts[index] as Account).spentUsd = total.costUsd;
    });
    return this.#holdAll(caps, accounts, caller, estimate, work);
  }

  /** Holds `estimate` in the account of each cap (`accounts`, in the same order), or in none: the first that refuses throws. */
  #holdAll(caps: readonly Cap[], accounts: readonly (Account | undefined)[], caller: string, estimate: CallSpend, work: UnloggedSpend): Reservation {
    const held: Reservation[] = [];
    try {
      caps.forEach((cap, index) => held.push(this.#hold(accounts[index] as Account, cap, cap.maxUsd, caller, estimate, work)));
    } catch (error) {
      for (const reservation of held) reservation.release();
      throw error;
    }
    return joined(held);
  }

  #hold(account: Account, holder: CapHolder, maxUsd: number, caller: string, estimate: CallSpend, work: UnloggedSpend): Reservation {
    if (refuses(maxUsd, account.spentUsd + account.reservedUsd, estimate)) {
      const own = holder.name === caller;
      const whose = own ? 'its manifest' : `the manifest of agent "${holder.name}", which agent "${caller}" descends from`;
      throw new QuotaExceededError(
        `agent "${holder.name}" may spend $${dollars(maxUsd)} in its life, with the agents it spawns, and has spent $${dollars(account.spentUsd, 6)}${account.reservedUsd > 0 ? ` (with $${dollars(account.reservedUsd, 6)} held by calls under way)` : ''}; the next model call${own ? '' : ` of agent "${caller}"`} would cost about $${dollars(estimate.costUsd, 3)}; the cap is ${LIFETIME_SPEND_FIELD} in ${whose}`,
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
        if (!close() || this.#accounts.get(holder.id) !== account) return;
        account.spentUsd += spent.costUsd;
        this.#shared?.settled(holder.id, spentOf(spent), work);
      },
      release: () => {
        close();
      },
    };
  }
}

/** Whether a cap of `maxUsd` refuses a call estimated at `estimate` when `committed` is spent or held by calls under way. */
function refuses(maxUsd: number, committed: number, estimate: CallSpend): boolean {
  return estimate.costUsd > Math.max(0, maxUsd - committed);
}
