import type { Clock, IdGenerator, Logger, ScheduleRunRecord, Store, ToolResult } from '../contracts/index.ts';
import type { ModelTarget } from '../models/index.ts';
import { AgentStateError, LoomError, messageOf, QuotaExceededError, StoreNotFoundError, TokenBudgetExceededError } from '../errors/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { WakeOf } from './message-flow-contract.ts';
import { dailyBudgetRefusal, dayOf } from './daily-budget.ts';
import type { ScheduleEvent } from './event-bus.ts';
import { toTarget } from './model-targets.ts';
import { runScheduleCheck } from './schedule-check.ts';
import { readRequest, type TurnRequest } from './turn-journal.ts';

/** The message a `continuous` agent receives at each interval. */
export const CONTINUOUS_WAKE_MESSAGE = '[scheduled] continuous wake-up: check for work.';

/** The message a `periodic` agent receives at each time of its cron expression. */
export function periodicWakeMessage(expression: string, timezone: string): string {
  return `[scheduled] periodic wake-up (cron "${expression}", ${timezone}): time for your scheduled work.`;
}

/** One due wake-up of an agent: what made it due, when, and what the agent is told. */
export interface Wake {
  /** `continuous`, `cron` or `manual` (forced now), as the run records it. */
  trigger: string;
  /** What made it due, as the log says it: `continuous`, `cron "0 9 * * *"`, `forced by the owner`. */
  cause: string;
  /** The message the agent is woken with. */
  message: string;
  /** The instant it was due (epoch ms). */
  dueAt: number;
  /** Due while the daemon was down, and run late by `[schedule].catch_up`. */
  caughtUp?: boolean | undefined;
}

/** What the wake-up runs are built from: the kernel's parts. */
export interface WakeRunsParts {
  store: Pick<Store, 'scheduleRuns' | 'usage' | 'turns'>;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  /** The live agent a name or id names. @throws {AgentNotFoundError} */
  resolve(reference: string): AgentEntry;
  /** The live agents above an agent, its parent first. */
  ancestors(agent: AgentEntry): AgentEntry[];
  /**
   * Delivers the wake-up's message to the agent (its main session), on `model` when given, and
   * resolves when its turn ends; the turn is journaled as this wake-up's (see `turnGoesOn`).
   */
  send(agentId: string, wake: Wake, model: ModelTarget | undefined): Promise<unknown>;
  /** Runs one tool call as the agent through the tool runner (every gate applies); a refusal is an error result. */
  runTool(agentId: string, tool: string, input: unknown): Promise<ToolResult>;
  /** Records the event in the audit log and tells subscribers (the metrics count it). */
  publish(event: ScheduleEvent): Promise<void>;
  /** The IANA time zone cron expressions are read in (`[scheduler].timezone`), as a forced wake-up's message names it; UTC by default. */
  timezone?: string | undefined;
}

/**
 * Scheduled wake-ups as runs (decision 0046): each one due is recorded before the agent is woken,
 * and again with its outcome when the turn ends, so none passes unrecorded. A scheduled one is
 * skipped once the agent's daily budget is spent, and with a `[schedule.check]` the model is called
 * only when the check's result changed (decision 0049).
 */
export interface WakeRuns {
  /**
   * Wakes the agent and records the run: `completed`, `failed` (the turn failed), or `skipped`
   * with the reason when its previous wake-up still runs here or a budget refuses the turn.
   * Resolves with the record when the run has ended.
   * @throws {AgentNotFoundError} before anything is recorded, when no live agent has that name or id.
   */
  run(reference: string, wake: Wake): Promise<ScheduleRunRecord>;
  /**
   * Marks the runs of this wake-up (the agent's instant of its trigger) left `running` as
   * interrupted: the node running it died, and its job runs it again here (decision 0061).
   */
  interruptEarlier(reference: string, wake: WakeOf): Promise<ScheduleRunRecord[]>;
  /**
   * Whether the journal holds this wake-up's turn (the agent's instant of its trigger) as running:
   * one an earlier attempt of its job began (recorded when accepted), which goes on from its
   * journal where its node's lease is taken over (decision 0061), so the wake-up is not run a
   * second time. Another wake-up's turn of the agent does not count; a wake-up turn an earlier
   * Loom journaled without saying which wake-up it was does (see `isTurnOf`).
   */
  turnGoesOn(reference: string, wake: WakeOf): Promise<boolean>;
  /** Records instants that were due and not run (`count` of them from `dueAt`) as skipped, with the reason. */
  skip(reference: string, wake: Pick<Wake, 'trigger' | 'cause' | 'dueAt'> & { count?: number }, reason: string): Promise<ScheduleRunRecord>;
  /** The agent's runs, newest due first (100 unless `limit` says otherwise). */
  list(reference: string, options?: { limit?: number }): Promise<ScheduleRunRecord[]>;
  /**
   * Since when the agent's schedule has instants to catch up: the later of its last scheduled
   * instant (run or skipped; forced ones left out) and the last change of the agent or of any agent
   * above it (a suspend, a resume, an update: a child acts unasked only while its parents run).
   */
  catchUpSince(reference: string): Promise<number>;
  /**
   * Forces a wake-up of a `continuous` or `periodic` agent now, told the message its schedule
   * would send, recorded as a `manual` run; resolves when it has ended.
   * @throws {AgentNotFoundError}; a LoomError `AGENT_NOT_SCHEDULED` for an agent with no timed schedule.
   */
  now(reference: string, options: { by: string }): Promise<ScheduleRunRecord>;
}

/**
 * Whether a journaled request is the turn of this wake-up. One journaled before turns carried
 * their wake-up is taken for it: answering no would run the wake-up a second time beside the
 * turn that goes on, where answering yes at worst skips, and records, a wake-up while an
 * earlier one of the agent goes on.
 */
function isTurnOf(request: TurnRequest | undefined, wake: WakeOf): boolean {
  if (request?.cycle !== true) return false;
  return request.wake === undefined || (request.wake.trigger === wake.trigger && request.wake.dueAt === wake.dueAt);
}

/** The code in the log line of a scheduled run skipped because the agent's daily budget is spent. */
const DAILY_BUDGET_SPENT = 'DAILY_BUDGET_SPENT';

/** Creates the wake-up runs of a kernel. */
export function createWakeRuns(parts: WakeRunsParts): WakeRuns {
  const { store, clock, ids } = parts;
  const resolve = (reference: string): AgentEntry => parts.resolve(reference);
  const logger = parts.logger.child({ subsystem: 'scheduler' });
  // The agents whose wake-up runs here now: another one meanwhile is skipped, never queued.
  const running = new Set<string>();

  async function finish(agent: AgentEntry, record: ScheduleRunRecord, code?: string): Promise<ScheduleRunRecord> {
    try {
      await store.scheduleRuns.update(record);
    } catch (error) {
      // Killed during the run: its runs went with it.
      if (error instanceof StoreNotFoundError) return record;
      throw error;
    }
    await announce(agent, record, code);
    return record;
  }

  /** Tells of the run's end: its one line in the daemon's log, with `code` when a budget refused it. */
  async function announce(agent: AgentEntry, record: ScheduleRunRecord, code?: string): Promise<void> {
    const event: ScheduleEvent = {
      type: 'schedule-run-finish',
      at: record.finishedAt ?? clock.now(),
      agentId: agent.id,
      name: agent.name,
      runId: record.id,
      trigger: record.trigger,
      outcome: record.outcome,
      caughtUp: record.caughtUp,
      count: record.count,
      reason: record.reason,
      ...(code === undefined ? {} : { code }),
    };
    await parts.publish(event).catch((error: unknown) => logger.error({ err: error, agentId: agent.id }, 'could not record the end of a schedule run'));
  }

  async function skip(
    agent: AgentEntry,
    wake: Pick<Wake, 'trigger' | 'cause' | 'dueAt' | 'caughtUp'>,
    reason: string,
    count = 1,
    code?: string,
  ): Promise<ScheduleRunRecord> {
    const record: ScheduleRunRecord = {
      id: ids.uuid(),
      agentId: agent.id,
      trigger: wake.trigger,
      dueAt: wake.dueAt,
      startedAt: null,
      finishedAt: clock.now(),
      outcome: 'skipped',
      reason,
      caughtUp: wake.caughtUp ?? false,
      count,
      checkHash: null,
    };
    await store.scheduleRuns.create(record);
    await announce(agent, record, code);
    return record;
  }

  async function run(agent: AgentEntry, wake: Wake): Promise<ScheduleRunRecord> {
    // Logged once, by its end's line (the reason in it), as a budget's refusal is.
    if (running.has(agent.id)) return skip(agent, wake, 'its previous run was still going');
    running.add(agent.id);
    try {
      // A person's forced wake-up is theirs to decide: neither the daily budget nor the check stops it.
      const scheduled = wake.trigger !== 'manual';
      const spent = scheduled ? await dailyBudgetRefusal(agent, store.usage, dayOf(clock.now(), parts.timezone ?? 'UTC')) : undefined;
      // Skipped runs are logged once, by their end's line (the reason and the code in it).
      if (spent !== undefined) return await skip(agent, wake, spent, 1, DAILY_BUDGET_SPENT);
      const started: ScheduleRunRecord = {
        id: ids.uuid(),
        agentId: agent.id,
        trigger: wake.trigger,
        dueAt: wake.dueAt,
        startedAt: clock.now(),
        finishedAt: null,
        outcome: 'running',
        reason: null,
        caughtUp: wake.caughtUp ?? false,
        count: 1,
        checkHash: null,
      };
      // Recorded before the agent is woken: a run the daemon's stop cuts off is found at its next start.
      await store.scheduleRuns.create(started);
      const { check, model } = agent.manifest.schedule;
      let checkHash: string | null = null;
      try {
        if (check !== undefined && scheduled) {
          const checked = await runScheduleCheck(check, (tool, input) => parts.runTool(agent.id, tool, input));
          if (!checked.ok) {
            logger.warn(
              { agentId: agent.id, cause: wake.cause, tool: check.tool },
              `scheduled run of agent "${agent.name}" (${wake.cause}) failed: ${checked.reason}`,
            );
            return await finish(agent, { ...started, outcome: 'failed', reason: checked.reason, finishedAt: clock.now() });
          }
          checkHash = checked.hash;
          // Nothing new since the last run that looked: the model is not called.
          if ((await store.scheduleRuns.lastCheckHash(agent.id)) === checkHash)
            return await finish(agent, { ...started, outcome: 'unchanged', checkHash, finishedAt: clock.now() });
        }
        logger.info({ agentId: agent.id, cause: wake.cause }, `waking agent "${agent.name}" for a scheduled run (${wake.cause})`);
        await parts.send(agent.id, wake, model === undefined ? undefined : toTarget(model));
        // Only a run that completed keeps what its check found: a failed one is tried again on the same state.
        return await finish(agent, { ...started, outcome: 'completed', checkHash, finishedAt: clock.now() });
      } catch (error) {
        // Not a failure of the run: the budget says when the agent may work again.
        if (error instanceof QuotaExceededError || error instanceof TokenBudgetExceededError) {
          return await finish(agent, { ...started, outcome: 'skipped', reason: messageOf(error), finishedAt: clock.now() }, error.code);
        }
        // The agent stopped during the turn (suspended, killed, or the daemon stopping).
        if (error instanceof AgentStateError)
          return await finish(agent, { ...started, outcome: 'interrupted', reason: messageOf(error), finishedAt: clock.now() });
        logger.error({ err: error, agentId: agent.id, cause: wake.cause }, `scheduled run of agent "${agent.name}" (${wake.cause}) failed`);
        return await finish(agent, { ...started, outcome: 'failed', reason: messageOf(error), finishedAt: clock.now() });
      }
    } finally {
      running.delete(agent.id);
    }
  }

  return {
    run: async (reference, wake) => run(resolve(reference), wake),
    skip: async (reference, wake, reason) => skip(resolve(reference), wake, reason, wake.count),
    interruptEarlier: async (reference, wake) =>
      store.scheduleRuns.interruptRunning(clock.now(), 'interrupted: its node stopped while the run was going; the wake-up was run again by another node', {
        agentId: resolve(reference).id,
        trigger: wake.trigger,
        dueAt: wake.dueAt,
      }),
    async turnGoesOn(reference, wake) {
      const agentId = resolve(reference).id;
      return (await store.turns.running()).some((turn) => turn.agentId === agentId && isTurnOf(readRequest(turn.request), wake));
    },
    list: async (reference, options = {}) => store.scheduleRuns.list(resolve(reference).id, options),
    async catchUpSince(reference) {
      const agent = resolve(reference);
      const changed = Math.max(agent.updatedAt, ...parts.ancestors(agent).map((above) => above.updatedAt));
      return Math.max((await store.scheduleRuns.lastDue(agent.id)) ?? Number.NEGATIVE_INFINITY, changed);
    },
    async now(reference, options) {
      const agent = resolve(reference);
      const { mode, cron } = agent.manifest.schedule;
      if (mode !== 'continuous' && (mode !== 'periodic' || cron === undefined)) {
        throw new LoomError(
          'AGENT_NOT_SCHEDULED',
          'user',
          `cannot wake agent "${agent.name}" now: its [schedule] mode is "${mode}", and only a continuous or periodic agent has a wake-up to force; send it a message instead`,
          {
            details: { agent: agent.name, mode },
          },
        );
      }
      const message = mode === 'continuous' ? CONTINUOUS_WAKE_MESSAGE : periodicWakeMessage(cron ?? '', parts.timezone ?? 'UTC');
      return run(agent, { trigger: 'manual', cause: `forced by ${options.by}`, message, dueAt: clock.now() });
    },
  };
}
