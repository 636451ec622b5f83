import type { UsageRecord } from '../contracts/index.ts';

/** Tokens (input and output) and dollars: what an account of spending counts. */
export interface Spent {
  tokens: number;
  costUsd: number;
}

/** What `usage` (a usage record, or a total of some) counts for: its tokens in and out, and its price. */
export function spentOf(usage: { inputTokens: number; outputTokens: number; costUsd: number }): Spent {
  return { tokens: usage.inputTokens + usage.outputTokens, costUsd: usage.costUsd };
}

/** What a call made here spent, and when it settled. */
interface Unlogged extends Spent {
  at: number;
}

/** One account's part in the reads of the log. */
interface Share {
  /** What calls made here have spent that this node has not written to the usage log yet, oldest first. */
  unlogged: Unlogged[];
  /** What this node has written to the usage log of the account's spending, in all. */
  logged: Spent;
  /** The number of the last read of the log the account took (an older read answering later is not taken). */
  read: number;
  /** The last read taken: when it was made, and the log's total less what this node had written when it was made. */
  last?: { at: number; base: Spent };
}

/** How often an account is read from the log: at every call, or at most once per `maxAgeMs` of `now`. */
export interface ReadEvery {
  now: () => number;
  maxAgeMs: number;
}

/**
 * Accounts of spending (an agent's hour, a family's life) kept on a store other nodes share
 * (decision 0040, "On a cluster the log is read at every call"): before each reservation, an
 * account's total is read from the usage log, which holds what every node has committed, and is
 * that total plus what this node's calls have spent that it has not written yet (a turn writes its
 * usage when it commits; {@link SharedTotals.logged} says when). What this node writes while the
 * log is read may be in the total or not: it is counted (twice until the next read, if it is),
 * never missed. A read answered after a later read of the same account is not taken. Alone, an
 * account is read once and needs none of this.
 *
 * What is not written yet is kept call by call, with when it settled, for an account over a window
 * (an hour): a call whose turn never commits (its commit failed) leaves the window as a spend kept
 * in memory alone does, an hour after it settled.
 */
export class SharedTotals {
  readonly #covers: (record: UsageRecord) => Iterable<string>;
  readonly #every: ReadEvery | undefined;
  readonly #shares = new Map<string, Share>();
  #reads = 0;

  /**
   * `covers` gives the accounts a usage record counts in (the caller's, its ancestors'). With
   * `every`, a total asked within `maxAgeMs` of the account's last read is that read's, with what
   * this node has spent since: the log is not read again.
   */
  constructor(covers: (record: UsageRecord) => Iterable<string>, every?: ReadEvery) {
    this.#covers = covers;
    this.#every = every;
  }

  /**
   * The account's total: what `read` gives (the log's, one statement) and what this node spent that
   * is not in the log, settled at `since` or later (all by default); undefined when a later read of
   * the account has answered meanwhile (its total stands).
   */
  async total(account: string, read: () => Promise<Spent>, since = 0): Promise<Spent | undefined> {
    let share = this.#shares.get(account);
    if (share === undefined) {
      share = { unlogged: [], logged: { tokens: 0, costUsd: 0 }, read: 0 };
      this.#shares.set(account, share);
    }
    const now = this.#every?.now();
    let base: Spent;
    if (now !== undefined && share.last !== undefined && now >= share.last.at && now - share.last.at < (this.#every?.maxAgeMs ?? 0)) base = share.last.base;
    else {
      const number = (this.#reads += 1);
      const before = { ...share.logged };
      const logged = await read();
      if (share.read > number) return undefined;
      share.read = number;
      base = { tokens: logged.tokens - before.tokens, costUsd: logged.costUsd - before.costUsd };
      if (now !== undefined) share.last = { at: now, base };
    }
    const total = { tokens: base.tokens + share.logged.tokens, costUsd: base.costUsd + share.logged.costUsd };
    // Older spending has left the account's window, written or not, as a spend kept in memory leaves it.
    if (share.unlogged.some((spent) => spent.at < since)) share.unlogged = share.unlogged.filter((spent) => spent.at >= since);
    for (const spent of share.unlogged) {
      total.tokens += spent.tokens;
      total.costUsd += spent.costUsd;
    }
    return total;
  }

  /** Counts `spent` (a call made here, settled at `at`) in the account until this node writes it to the log. */
  settled(account: string, spent: Spent, at = 0): void {
    this.#shares.get(account)?.unlogged.push({ ...spent, at });
  }

  /** Tells the accounts that `records` (usage of calls made here) are in the usage log now, so that the next read does not count them twice. */
  logged(records: readonly UsageRecord[]): void {
    if (this.#shares.size === 0) return;
    for (const record of records) {
      const spent = spentOf(record);
      for (const account of this.#covers(record)) {
        const share = this.#shares.get(account);
        if (share === undefined) continue;
        // What it wrote is what its oldest calls not written yet spent.
        take(share.unlogged, 'tokens', spent.tokens);
        take(share.unlogged, 'costUsd', spent.costUsd);
        while (share.unlogged[0]?.tokens === 0 && share.unlogged[0].costUsd === 0) share.unlogged.shift();
        share.logged.tokens += spent.tokens;
        share.logged.costUsd += spent.costUsd;
      }
    }
  }

  /** Forgets an account (its agent was killed). */
  forget(account: string): void {
    this.#shares.delete(account);
  }
}

/** Takes `amount` of `key` from `unlogged`, oldest first. */
function take(unlogged: Unlogged[], key: keyof Spent, amount: number): void {
  let left = amount;
  for (const spent of unlogged) {
    if (left <= 0) return;
    const taken = Math.min(spent[key], left);
    spent[key] -= taken;
    left -= taken;
  }
}
