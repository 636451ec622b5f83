import type { ModelMessage } from 'ai';
import type { Clock, IdGenerator, JsonValue, Logger, Store, UsageRecord } from '../contracts/index.ts';
import { AgentNotFoundError, AgentStateError, isLoomError } from '../errors/index.ts';
import { modelName } from '../models/index.ts';
import type { AgentEventSink, ModelCallUsage, TurnResult } from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { AgentRuntime } from './agent-runtime.ts';
import { isBudgetRefusal } from './budget-ledger.ts';
import { type LifetimeSpend, lineageOf } from './lifetime-spend.ts';
import { auditRecordOf } from './event-bus.ts';
import type { OpenTurn } from './open-turn.ts';
import type { QuotaTracker } from './quota-tracker.ts';
import type { SessionHistories } from './session-histories.ts';
import type { UnloggedSpend } from './shared-totals.ts';
import { outcomeRecord } from './turn-journal.ts';
import { sealTurn, type TurnEnding } from './turn-record.ts';

/** What {@link TurnCommits} is built from. */
export interface TurnCommitParts {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  /** The message flow's logger: a turn's logger is its child. */
  logger: Logger;
  /** Where a live agent is found. */
  registry: Pick<AgentRegistry, 'find'>;
  /** Checks a turn's quota; told of the usage written, so that an hour read from a shared store's log before it is not short of it. */
  quotas: Pick<QuotaTracker, 'check' | 'logged'>;
  histories: Pick<SessionHistories, 'save'>;
  /** Told of the usage written, so that a cap read from a shared store's log before it is not short of it. */
  lifetime?: Pick<LifetimeSpend, 'logged'> | undefined;
}

/** How a turn is committed: one write of its messages, its record, its usage and (when it has one) its journal's close. */
export interface CommitOptions {
  /** How many leading messages of the session are known to make a well-formed history. */
  wellFormed?: number;
  /** A finished turn's result from its priced usage: its audit record (see `TurnSeal`) commits with it. */
  result?: (usage: readonly UsageRecord[]) => TurnResult;
}

/**
 * The checks a turn repeats when it leaves the queue, the commit that ends it, and the usage of
 * work outside a turn: every turn of the message flow, whatever its agent's type, begins and
 * ends here.
 */
export class TurnCommits {
  readonly #parts: TurnCommitParts;

  constructor(parts: TurnCommitParts) {
    this.#parts = parts;
  }

  /**
   * The checks a turn repeats when it leaves the queue (the agent is live, running, within quota), then `run-start`.
   * @returns the turn's logger.
   * @throws {AgentNotFoundError} {AgentStateError} {QuotaExceededError}
   */
  async begin(entry: AgentEntry, emit: AgentEventSink, purpose: string, turnId?: string): Promise<Logger> {
    const { quotas } = this.#parts;
    if (!this.isLive(entry)) throw new AgentNotFoundError(entry.name);
    if (entry.state !== 'running') throw new AgentStateError(`agent "${entry.name}" is suspended; resume it to ${purpose}`);
    await quotas.check(entry.id, entry.name, {
      maxTokensPerHour: entry.manifest.resources.max_tokens_per_hour,
      maxCostPerHour: entry.manifest.resources.max_cost_per_hour,
    });
    const runId = turnId ?? this.#parts.ids.uuid();
    emit({ type: 'run-start', runId, agentId: entry.id, agentName: entry.name });
    return this.#parts.logger.child({ agentId: entry.id, runId });
  }

  /** Prices every model call of a turn, as usage records for the store. */
  price(runtime: AgentRuntime, entry: AgentEntry, calls: readonly ModelCallUsage[], runLogger: Logger): UsageRecord[] {
    const { clock } = this.#parts;
    // Fixed at its spawn: the same whether its ancestors are held here, killed meanwhile, or not loaded.
    const lineage = lineageOf(entry.ancestors);
    return calls.map((call) => {
      const cost = runtime.costs.estimateCost(call.model.provider, call.model.model, call);
      if (!cost.known) runLogger.debug({ model: modelName(call.model) }, 'no price known for this model; counted as free');
      return {
        agentId: entry.id,
        at: clock.now(),
        model: modelName(call.model),
        inputTokens: call.inputTokens,
        outputTokens: call.outputTokens,
        ...(call.cacheReadTokens === undefined ? {} : { cacheReadTokens: call.cacheReadTokens }),
        ...(call.cacheWriteTokens === undefined ? {} : { cacheWriteTokens: call.cacheWriteTokens }),
        costUsd: cost.costUsd,
        ...(lineage === '' ? {} : { lineage }),
      };
    });
  }

  /**
   * Prices `calls` and records their usage at once (work outside a session's turn; the budget
   * ledger counted each against the quota as it was made). `spend`, what the work's calls spent
   * here that is not written yet, is told of each record written, and ends after, written or not,
   * unless the work `goesOn` (a workflow records each call as it is made).
   */
  async record(
    runtime: AgentRuntime,
    entry: AgentEntry,
    calls: readonly ModelCallUsage[],
    runLogger: Logger,
    spend: UnloggedSpend,
    options: { goesOn?: boolean } = {},
  ): Promise<UsageRecord[]> {
    try {
      const usage = this.price(runtime, entry, calls, runLogger);
      await this.#recordAlone(usage, spend);
      return usage;
    } finally {
      if (options.goesOn !== true) spend.end();
    }
  }

  /**
   * Commits a turn in one write: `session` (its history as the turn leaves it) with the turn's
   * messages, from the user's message on, sealed with its record (see `sealTurn`), and the usage
   * of `calls`, each priced once; merged if another writer saved meanwhile (the budget ledger
   * counted each call against the quota as it was made). `model` answered the turn; null leaves it to the trace (its last model).
   * `options.wellFormed` leading messages of `session` are known to make a well-formed history. A
   * finished turn gives its `options.result`: the turn's audit record (see `TurnSeal`) commits with it.
   * The turn's `spend` ends with the commit when it is written, or refused because another node
   * took the turn over (that node's commit writes its calls); a commit that failed leaves its usage
   * to write alone (see `#failed`, decision 0040).
   * @throws {AgentStateError} when the agent was killed meanwhile: the usage is recorded alone.
   */
  async commit(
    turn: OpenTurn,
    session: readonly ModelMessage[],
    calls: readonly ModelCallUsage[],
    ending: TurnEnding,
    model: string | null,
    options: CommitOptions = {},
  ): Promise<UsageRecord[]> {
    let unwritten: readonly UsageRecord[] | undefined;
    try {
      return await this.#commit(turn, session, calls, ending, model, options, (usage) => (unwritten = usage));
    } finally {
      if (unwritten === undefined) turn.spend.end();
      else await this.#failed(turn, unwritten);
    }
  }

  /**
   * A commit that failed (the database down, a connection lost) wrote nothing: not `usage` either.
   * A turn whose journal was written has it closed by the message flow (`JournalPlace.unwritten`):
   * closed, no node resumes the turn, and this one writes its usage alone; left running, the node
   * that takes it over writes the calls the journal holds. A turn without a journal written has its
   * usage written alone at once. What could not be written stays counted in this node's accounts.
   */
  async #failed(turn: OpenTurn, usage: readonly UsageRecord[]): Promise<void> {
    const { journal } = turn.place;
    const write = async (): Promise<void> => {
      try {
        await this.#recordAlone(usage, turn.spend);
        turn.spend.end();
      } catch (error) {
        turn.logger.warn({ err: error }, 'could not write the usage of a turn whose commit failed: it stays counted on this node');
      }
    };
    if (journal === undefined || journal.pending !== undefined) return write();
    journal.unwritten = async (closed) => {
      if (closed) await write();
      else turn.spend.end();
    };
  }

  async #commit(
    turn: OpenTurn,
    session: readonly ModelMessage[],
    calls: readonly ModelCallUsage[],
    ending: TurnEnding,
    model: string | null,
    options: CommitOptions,
    failed: (usage: readonly UsageRecord[]) => void,
  ): Promise<UsageRecord[]> {
    const { entry, place, userMessage } = turn;
    const usage = this.price(turn.runtime, entry, calls, turn.logger);
    const costs = new Map(calls.map((call, index) => [call, usage[index]?.costUsd ?? 0]));
    const record = turn.trace.record(ending, costs, model);
    const start = session.indexOf(userMessage);
    // A user message merged into an earlier one (by session repair) is no longer its own.
    const sealed = sealTurn(start === -1 ? [userMessage] : session.slice(start), userMessage, place.receivedAt, record, ending);
    const whole = start === -1 ? [...session, ...sealed.slice(1)] : [...session.slice(0, start), ...sealed];
    // Sealing rewrites the turn's messages from the user's on: only what comes before them stays known.
    const wellFormed = Math.min(options.wellFormed ?? 0, start === -1 ? session.length : start);
    const { seal, journal } = place;
    if (seal !== undefined && ending.status === 'cancelled') seal.stopped = true;
    const result = options.result?.(usage);
    const audit = seal === undefined || result === undefined ? undefined : seal.finished(result);
    // The turn's journal closes with its commit: a retry with its key gets how it ended.
    const closeTurn =
      journal === undefined || journal.pending !== undefined
        ? undefined
        : { turnId: journal.turnId, outcome: outcomeRecord(ending, result as unknown as JsonValue) };
    // Killed after its work returned (during a summary, or a module that caught its aborted call): no session is left, its usage still counts.
    if (!this.isLive(entry)) return this.#killedWith(entry, usage);
    try {
      await this.#parts.histories.save({ sessionId: place.sessionId, agentId: entry.id, conversation: place.conversation }, turn.base, whole, sealed, {
        usage,
        wellFormed,
        events: audit === undefined ? [] : [auditRecordOf(audit)],
        ...(closeTurn === undefined ? {} : { closeTurn }),
      });
    } catch (error) {
      // A kill deletes the agent (and its session) from the store before the registry forgets it. A
      // store that cannot say (down) leaves the save's own failure the turn's.
      const gone =
        !this.isLive(entry) ||
        (await this.#parts.store.agents.get(entry.id).then(
          (found) => found === undefined,
          () => false,
        ));
      if (gone) return this.#killedWith(entry, usage, error);
      // Refused because another node took the turn over: that node writes its calls (decision 0040).
      if (!isLoomError(error) || error.code !== 'TURN_TAKEN_OVER') failed(usage);
      throw error;
    }
    this.#logged(usage);
    if (journal !== undefined) journal.closed = true;
    if (seal !== undefined && audit !== undefined) seal.recorded = audit;
    return usage;
  }

  /** Records a killed agent's last turn's usage alone (its ancestors' caps count it), and ends the turn as killed. */
  async #killedWith(entry: AgentEntry, usage: readonly UsageRecord[], cause?: unknown): Promise<never> {
    await this.#recordAlone(usage);
    throw killedDuringTurn(entry, cause);
  }

  /** Writes `usage` to the usage log, record by record, outside a turn's commit (`spend`: what its work spent here, told of each). */
  async #recordAlone(usage: readonly UsageRecord[], spend?: UnloggedSpend): Promise<void> {
    for (const item of usage) {
      await this.#parts.store.usage.record(item);
      this.#logged([item]);
      spend?.written([item]);
    }
  }

  /** Tells the accounts read again from a shared store's log (the hourly quotas, the lifetime caps) that `usage` is in it now. */
  #logged(usage: readonly UsageRecord[]): void {
    this.#parts.quotas.logged(usage);
    this.#parts.lifetime?.logged(usage);
  }

  /** Whether `entry` is still the registry's (a killed agent has nothing left to keep a turn in). */
  isLive(entry: AgentEntry): boolean {
    return this.#parts.registry.find(entry.id) === entry;
  }

  /** The error a turn that threw `error` fails with: a killed agent says so; a cancelled turn fails with why it was cancelled. */
  unwound(entry: AgentEntry, error: unknown, signal: AbortSignal): unknown {
    if (signal.aborted && !this.isLive(entry)) return killedDuringTurn(entry, error);
    return signal.aborted && isLoomError(signal.reason) ? signal.reason : error;
  }
}

/** The error a turn ends with when its agent was killed while it ran (`cause`: what it failed with then). */
export function killedDuringTurn(entry: Pick<AgentEntry, 'name'>, cause?: unknown): AgentStateError {
  return new AgentStateError(`agent "${entry.name}" was killed during the turn`, cause === undefined ? {} : { cause });
}

/**
 * How a turn that threw `error` ended: cancelled when its signal aborted (a cancel, a suspend, a
 * time limit) or a budget refused its next model call (what it said is kept, as a cancel keeps
 * it), else failed.
 */
export function endingOf(error: unknown, signal: AbortSignal): TurnEnding {
  const reason: unknown = signal.aborted ? signal.reason : error;
  return { status: signal.aborted || isBudgetRefusal(error) ? 'cancelled' : 'failed', reason: reason instanceof Error ? reason.message : String(reason) };
}

/** A turn's result from its recorded usage. */
export function resultOf(usage: readonly UsageRecord[], text: string, iterations: number, model: string): TurnResult {
  const sum = (pick: (record: UsageRecord) => number): number => usage.reduce((total, record) => total + pick(record), 0);
  return {
    text,
    usage: { inputTokens: sum((record) => record.inputTokens), outputTokens: sum((record) => record.outputTokens) },
    iterations,
    costUsd: sum((record) => record.costUsd),
    model,
  };
}

/** Announces a turn's result as `run-finish`, and returns it. */
export function finishTurn(result: TurnResult, emit: AgentEventSink): TurnResult {
  emit({ type: 'run-finish', result });
  return result;
}
