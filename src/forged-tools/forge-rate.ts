import type { Clock, Store, ToolAgent } from '../contracts/index.ts';
import type { ForgingAgent } from './engine-options.ts';
import type { EventOutcome, EventSubject } from './engine-state.ts';
import type { ForgeOutcome } from './forged-tool-view.ts';

/** The window `[emergent].max_forge_attempts_per_hour` counts over. */
export const FORGE_RATE_WINDOW_MS = 60 * 60 * 1000;

/** The audit outcome of a forge refused by the rate: it is not counted as an attempt itself. */
const RATE_LIMITED = 'rate-limited';

/** Audit records read per page when counting an agent's recent forge attempts. */
const ATTEMPT_PAGE = 200;

/** The name a forge request gives, as far as it can be read before the request is checked. */
export function nameOfRequest(value: unknown): string {
  return value !== null && typeof value === 'object' && typeof (value as { name?: unknown }).name === 'string' ? (value as { name: string }).name : '(unnamed)';
}

/** What {@link ForgeRate} is built from. */
export interface ForgeRateParts {
  /** The audit log the attempts are counted from. */
  store: Pick<Store, 'events'>;
  clock: Clock;
  /** The live agent with this id (its `[emergent]` settings hold the limit). */
  agent(agentId: string): ForgingAgent | undefined;
  /** Records an event about a forge in the audit log (one refused by the rate, outcome `rate-limited`). */
  publish(subject: EventSubject, what: EventOutcome): Promise<void>;
}

/** One forge attempt: the agent, the request as given (for its name), who asked, and how it came. */
export interface ForgeAttempt {
  agent: ToolAgent;
  raw: unknown;
  by: string;
  origin: 'forged' | 'imported';
}

/**
 * Each agent's `[emergent].max_forge_attempts_per_hour`: forges under way in this process count
 * until their own audit entry is written, and rate checks take turns, so two forges at once
 * cannot both take the last attempt of the hour.
 */
export class ForgeRate {
  readonly #parts: ForgeRateParts;
  /** Forges of each agent under way in this process, not yet in the audit log: they count as attempts too. */
  readonly #underWay = new Map<string, number>();
  /** Rate checks take turns, so two forges at once cannot both take the last attempt of the hour. */
  #turn: Promise<unknown> = Promise.resolve();

  constructor(parts: ForgeRateParts) {
    this.#parts = parts;
  }

  /**
   * Runs one forge attempt within its agent's rate: past it the attempt is refused before any work
   * (audited as `rate-limited`, naming the limit and when the next attempt is allowed); otherwise it
   * counts as under way until its own audit entry is written. An agent that may not forge at all
   * is left to `work` to refuse.
   */
  async attempt(attempt: ForgeAttempt, work: () => Promise<ForgeOutcome>): Promise<ForgeOutcome> {
    const { agent } = attempt;
    const { clock } = this.#parts;
    const settings = this.#parts.agent(agent.id)?.emergent;
    if (settings === undefined || !settings.enabled) return work();
    const limit = settings.max_forge_attempts_per_hour;
    const check = this.#turn.then(async (): Promise<string | undefined> => {
      if (limit === 0)
        return `agent "${agent.name}" may not forge tools: its [emergent].max_forge_attempts_per_hour is 0; raise it in its manifest to let it forge`;
      const times = await this.#recentAttempts(agent.id, limit);
      const oldest = times[limit - 1];
      if (oldest === undefined) {
        this.#underWay.set(agent.id, (this.#underWay.get(agent.id) ?? 0) + 1);
        return undefined;
      }
      const next = oldest + FORGE_RATE_WINDOW_MS;
      const minutes = Math.max(1, Math.ceil((next - clock.now()) / 60_000));
      return `agent "${agent.name}" has made ${limit} forge attempts in the last hour, its [emergent].max_forge_attempts_per_hour (refused attempts count too); the next attempt is allowed at ${new Date(next).toISOString()} (in ${minutes} min)`;
    });
    this.#turn = check.catch(() => undefined);
    const refusal = await check;
    if (refusal !== undefined) {
      const subject = { agentId: agent.id, agentName: agent.name, name: nameOfRequest(attempt.raw), id: null };
      await this.#parts.publish(subject, {
        type: 'tool-forge',
        outcome: RATE_LIMITED,
        reason: `request: ${refusal}`,
        provenance: { by: attempt.by, origin: attempt.origin },
      });
      return { ok: false, stage: 'request', reason: refusal };
    }
    try {
      return await work();
    } finally {
      const left = (this.#underWay.get(agent.id) ?? 1) - 1;
      if (left === 0) this.#underWay.delete(agent.id);
      else this.#underWay.set(agent.id, left);
    }
  }

  /**
   * When the agent's counted forge attempts of the last hour were made, newest first: those under
   * way here, then those in the audit log (every forge, registered or refused at any stage, records
   * one `tool-forge` entry; one refused by the rate itself is not counted). Read from the store, so
   * the count survives a restart and covers every node sharing it. Stops at `enough`.
   */
  async #recentAttempts(agentId: string, enough: number): Promise<number[]> {
    const { store, clock } = this.#parts;
    const now = clock.now();
    const since = now - FORGE_RATE_WINDOW_MS;
    const times: number[] = Array.from({ length: this.#underWay.get(agentId) ?? 0 }, () => now);
    let before: number | undefined;
    while (times.length < enough) {
      const page = await store.events.list({ agentId, type: 'tool-forge', order: 'desc', limit: ATTEMPT_PAGE, ...(before === undefined ? {} : { before }) });
      for (const record of page) {
        if (record.at <= since) return times;
        if (record.data['outcome'] !== RATE_LIMITED) times.push(record.at);
      }
      const last = page.at(-1);
      if (page.length < ATTEMPT_PAGE || last === undefined) return times;
      before = last.seq;
    }
    return times;
  }
}
