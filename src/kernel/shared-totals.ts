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
  /** The work of this node whose calls spent in the account and that it has not written to the usage log yet. */
  unlogged: Set<UnloggedSpend>;
  /** What this node has written to the usage log of the account's spending, in all. */
  logged: Spent;
  /** The number of the last read of the log the account took (an older read answering later is not taken). */
  read: number;
  /** The last read taken. */
  last?: LogRead;
}

/** A read of an account's total from the log. */
interface LogRead {
  /** When it was made. */
  at: number;
  /** The log's total less what this node had written when it was made. */
  base: Spent;
  /** Whether this node wrote to the log while it was read: the total may hold that twice. */
  doubtful: boolean;
}

/** An account whose total is asked, and whether that total would refuse the call (then read again when in doubt). */
interface Asked {
  account: string;
  refuses?: (total: Spent) => boolean;
}

/** How often an account is read from the log: at every call, or at most once per `maxAgeMs` of `now`. */
export interface ReadEvery {
  now: () => number;
  maxAgeMs: number;
}

/**
 * What one piece of work of this node (a turn, a call outside one, a workflow running in the
 * background) has spent through it that is not in the usage log yet: each call's spending, counted
 * in every account the call drew from ({@link SharedTotals.settled}) until the work writes it
 * ({@link UnloggedSpend.written}) or ends ({@link UnloggedSpend.end}). Kept by the work, not by the
 * account, so that writing a turn takes out what its own calls spent here: not what another node
 * spent on the turn before it was taken over here, nor what another turn of the account spent.
 */
export class UnloggedSpend {
  /** Its calls' spending in each account they drew from, oldest first. */
  readonly #spends = new Map<Share, Unlogged[]>();
  #ended = false;

  /** Counts `spent` in `share` (by {@link SharedTotals}) until it is written or the work ends; nothing once it ended. */
  count(share: Share, spent: Unlogged): void {
    if (this.#ended) return;
    const spends = this.#spends.get(share);
    if (spends !== undefined) spends.push(spent);
    else {
      this.#spends.set(share, [spent]);
      share.unlogged.add(this);
    }
  }

  /** Adds to `total` what the work's calls spent in `share` (by {@link SharedTotals}), those settled at `since` or later. */
  addTo(total: Spent, share: Share, since: number): void {
    for (const spent of this.#spends.get(share) ?? []) {
      if (spent.at < since) continue;
      total.tokens += spent.tokens;
      total.costUsd += spent.costUsd;
    }
  }

  /**
   * Tells the accounts that `records` (usage of the work's calls, one call's each) are in the usage
   * log now: what they spent is no longer counted here, taken from the work's oldest calls (a work
   * that writes as it goes, call by call: a workflow).
   */
  written(records: readonly UsageRecord[]): void {
    const spent = { tokens: 0, costUsd: 0 };
    for (const record of records) {
      const { tokens, costUsd } = spentOf(record);
      spent.tokens += tokens;
      spent.costUsd += costUsd;
    }
    for (const [share, spends] of this.#spends) {
      take(spends, 'tokens', spent.tokens);
      take(spends, 'costUsd', spent.costUsd);
      while (spends[0]?.tokens === 0 && spends[0].costUsd === 0) spends.shift();
      if (spends.length > 0) continue;
      this.#spends.delete(share);
      share.unlogged.delete(this);
    }
  }

  /**
   * The work ended: its usage is written (its turn committed, or recorded alone), or will not be
   * by this node (its commit was refused: another node took the turn over; or failed). What is left
   * is no longer counted here, nor anything its calls settle later: an estimate of a call cut off
   * that its record counts otherwise, a call that wrote no record.
   */
  end(): void {
    this.#ended = true;
    for (const share of this.#spends.keys()) share.unlogged.delete(this);
    this.#spends.clear();
  }
}

/**
 * Accounts of spending (an agent's hour, a family's life) kept on a store other nodes share
 * (decision 0040, "On a cluster the log is read at every call"): before each reservation, an
 * account's total is read from the usage log, which holds what every node has committed, at every
 * call (a family's life) or at most once per {@link ReadEvery.maxAgeMs} (an agent's hour: once a
 * second per agent and node, the read standing meanwhile), and is that total plus what this node's
 * work has spent that it has not written yet (each piece of work keeps its own: {@link UnloggedSpend}). What this node writes while the log is read may be in the
 * total or not: it is counted (twice until the next read, if it is), never missed, and a total that
 * would refuse is read once more first. A read answered after a later read of the same account is
 * not taken. Alone, an account is read once and needs none of this.
 *
 * What is not written yet is kept call by call, with when it settled, so that an account over a
 * window (an hour) counts only what settled within it.
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
   * is not in the log, settled at `options.since` or later (all by default); undefined when a later
   * read of the account has answered meanwhile (its total stands). A total that `options.refuses`
   * (it would refuse the call) is read again first when this node wrote to the log while it was read.
   */
  async total(account: string, read: () => Promise<Spent>, options: { since?: number; refuses?: (total: Spent) => boolean } = {}): Promise<Spent | undefined> {
    const [total] = await this.totals(
      [{ account, ...(options.refuses === undefined ? {} : { refuses: options.refuses }) }],
      async () => [await read()],
      options.since,
    );
    return total;
  }

  /**
   * The totals of several accounts, as {@link total} gives each, those to read from the log read
   * together: `read` is given those of `asked` and answers their totals in that order, in one statement
   * (the caps of a caller's line: its own and its ancestors'). So are those read again.
   */
  async totals<A extends Asked>(asked: readonly A[], read: (accounts: readonly A[]) => Promise<Spent[]>, since = 0): Promise<(Spent | undefined)[]> {
    const shares = asked.map(({ account }) => this.#share(account));
    const now = this.#every?.now();
    const taken = shares.map(({ last }) =>
      now !== undefined && last !== undefined && now >= last.at && now - last.at < (this.#every?.maxAgeMs ?? 0) ? last : undefined,
    );
    const readAgain = async (indexes: number[]): Promise<void> => {
      if (indexes.length === 0) return;
      const reads = await this.#read(
        indexes.map((index) => shares[index] as Share),
        () => read(indexes.map((index) => asked[index] as A)),
        now,
      );
      indexes.forEach((index, at) => (taken[index] = reads[at]));
    };
    await readAgain(taken.flatMap((last, index) => (last === undefined ? [index] : [])));
    // A commit of this node that landed while the log was read may be in its total twice: not refused on that.
    const total = (index: number): Spent | undefined => {
      const base = taken[index]?.base;
      return base === undefined ? undefined : this.#sum(shares[index] as Share, base, since);
    };
    await readAgain(
      asked.flatMap((account, index) => {
        const spent = total(index);
        return spent !== undefined && taken[index]?.doubtful === true && account.refuses?.(spent) === true ? [index] : [];
      }),
    );
    return asked.map((_, index) => total(index));
  }

  #share(account: string): Share {
    let share = this.#shares.get(account);
    if (share === undefined) {
      share = { unlogged: new Set(), logged: { tokens: 0, costUsd: 0 }, read: 0 };
      this.#shares.set(account, share);
    }
    return share;
  }

  /** Reads the accounts of `shares` from the log, in one statement; for each, undefined when a later read of it answered first. */
  async #read(shares: readonly Share[], read: () => Promise<Spent[]>, now: number | undefined): Promise<(LogRead | undefined)[]> {
    const number = (this.#reads += 1);
    const before = shares.map((share) => ({ ...share.logged }));
    const logged = await read();
    return shares.map((share, index) => {
      const [spent, was] = [logged[index], before[index]];
      if (spent === undefined || was === undefined) throw new Error(`a read of ${shares.length} accounts of spending answered ${logged.length} totals`);
      if (share.read > number) return undefined;
      share.read = number;
      const taken = {
        at: now ?? 0,
        base: { tokens: spent.tokens - was.tokens, costUsd: spent.costUsd - was.costUsd },
        doubtful: share.logged.tokens !== was.tokens || share.logged.costUsd !== was.costUsd,
      };
      if (now !== undefined) share.last = taken;
      return taken;
    });
  }

  /** `base` (a read of the log), what this node has written since and what it has not written yet. */
  #sum(share: Share, base: Spent, since: number): Spent {
    const total = { tokens: base.tokens + share.logged.tokens, costUsd: base.costUsd + share.logged.costUsd };
    for (const work of share.unlogged) work.addTo(total, share, since);
    return total;
  }

  /** Counts `spent` (a call of `work` made here, settled at `at`) in the account until the work writes it to the log or ends. */
  settled(account: string, spent: Spent, work: UnloggedSpend, at = 0): void {
    const share = this.#shares.get(account);
    if (share !== undefined) work.count(share, { ...spent, at });
  }

  /**
   * Tells the accounts that `records` are in the usage log now (written by this node: its own
   * calls, or calls another node made on a turn this one took over), so that a read of the log made
   * before them is not short of them. What this node's work spent is no longer counted when the
   * work says so ({@link UnloggedSpend}).
   */
  logged(records: readonly UsageRecord[]): void {
    if (this.#shares.size === 0) return;
    for (const record of records) {
      const spent = spentOf(record);
      for (const account of this.#covers(record)) {
        const share = this.#shares.get(account);
        if (share === undefined) continue;
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
