import type { ModelMessage, ToolResultPart } from 'ai';
import type { Clock, JsonObject, JsonValue, Logger, Store, Tool, TurnJournalOpen, TurnJournalRecord, TurnStepRecord } from '../contracts/index.ts';
import { isIdempotent, type LoopJournal, type LoopResume, type ModelCallUsage, type ToolCallRequest, type ToolFinishEntry } from '../runtime/index.ts';
import { ModelTargetSchema } from '../manifest/index.ts';
import type { ModelTarget } from '../models/index.ts';
import type { Caller } from './agent-runtime.ts';
import type { SendOptions, WakeOf } from './message-flow-contract.ts';
import { auditRecordOf, type ToolCallEvent } from './event-bus.ts';
import { approvalOf, type ToolTraceStep, type TurnEnding } from './turn-record.ts';
import type { StreamEntry, StreamStepData } from './live-turns.ts';

/**
 * A turn's journal (decision 0045): what it was asked, recorded when it is accepted, and each
 * step as it happens, so that a turn running when its daemon stopped resumes at the next start.
 */

/** What a journaled turn needs to run again: `TurnJournalRecord.request`. */
export interface TurnRequest {
  message: string;
  caller: Caller;
  person?: string;
  /** The door whose messages are untrusted whoever sends them (see `SendOptions.door`). */
  door?: 'a2a';
  /** A scheduled wake-up's turn: its tool calls capped per cycle (see `SendOptions.cycle`). */
  cycle?: boolean;
  /** The wake-up a scheduled turn runs (see `SendOptions.wake`); none in a turn journaled before requests named it. */
  wake?: WakeOf;
  /** The model the turn ran on instead of the manifest's (`[schedule].model`, see `SendOptions.model`). */
  model?: ModelTarget;
}

/** A value as JSON keeps it: without the properties that are undefined. */
function defined<T extends object>(value: T): JsonObject {
  const kept: JsonObject = {};
  for (const [key, inner] of Object.entries(value)) if (inner !== undefined) kept[key] = inner as JsonValue;
  return kept;
}

/**
 * The request of a journaled turn, as the store keeps it: plain JSON, copied field by field (a
 * turn on the hot path does not round-trip it through a string).
 */
export function requestRecord(request: TurnRequest): JsonObject {
  const { caller, model, wake } = request;
  const record: JsonObject = defined({ ...request, caller: undefined, model: undefined, wake: undefined });
  record['caller'] =
    caller.kind === 'agent'
      ? { kind: 'agent', agentId: caller.agentId, chain: [...caller.chain] }
      : defined({ ...caller, agents: caller.agents === undefined ? undefined : [...caller.agents] });
  if (model !== undefined) record['model'] = defined(model);
  if (wake !== undefined) record['wake'] = { trigger: wake.trigger, dueAt: wake.dueAt };
  return record;
}

/** The request a journal holds; undefined when it is not one this Loom wrote. */
export function readRequest(record: JsonObject): TurnRequest | undefined {
  const { message, caller, person, door, cycle, wake, model } = record as {
    message?: unknown;
    caller?: unknown;
    person?: unknown;
    door?: unknown;
    cycle?: unknown;
    wake?: { trigger?: unknown; dueAt?: unknown } | null;
    model?: unknown;
  };
  if (typeof message !== 'string' || typeof caller !== 'object' || caller === null || !('kind' in caller)) return undefined;
  const target = ModelTargetSchema.safeParse(model);
  return {
    message,
    caller: caller as Caller,
    ...(typeof person === 'string' ? { person } : {}),
    ...(door === 'a2a' ? { door } : {}),
    ...(cycle === true ? { cycle } : {}),
    ...(typeof wake?.trigger === 'string' && typeof wake.dueAt === 'number' ? { wake: { trigger: wake.trigger, dueAt: wake.dueAt } } : {}),
    ...(target.success ? { model: target.data } : {}),
  };
}

/** How a turn that ended is remembered for a retry with its key (see `TurnJournalClose.outcome`). */
export function outcomeRecord(ending: TurnEnding, result: JsonValue | undefined): JsonObject {
  return ending.status === 'finished' ? { status: 'finished', result: result ?? null } : { status: ending.status, reason: ending.reason };
}

/** The audit record of a call that ran, as the kernel's `finished` would publish it. */
function finishEvent(entry: ToolFinishEntry, at: number): ToolCallEvent {
  return {
    type: entry.isError ? 'tool-fail' : 'tool-finish',
    at,
    agentId: entry.agentId,
    name: entry.agentName,
    tool: entry.tool,
    durationMs: entry.durationMs,
  };
}

/**
 * A turn's journal as the message flow holds it: its id, the record a resumed turn goes on from,
 * the turn itself while it is not written yet (`pending`), and whether its commit closed it.
 */
export interface JournalPlace {
  turnId: string;
  record?: TurnJournalRecord;
  /**
   * The turn as it will be recorded with its first committed step (built then: most turns never
   * commit a step of their own); undefined once it is written.
   */
  pending?: () => TurnJournalOpen;
  closed?: boolean;
  /**
   * Set by a commit that failed (not refused): told whether the message flow then closed the
   * journal (`closed`: this node writes the turn's usage alone) or could not (the node that takes
   * the turn over writes its calls). See `TurnCommits.commit`.
   */
  unwritten?: (closed: boolean) => Promise<void>;
  /**
   * The events the turn's stream showed since the last commit, as a `stream` step to commit with
   * the next one (decision 0059); undefined when there are none.
   */
  stream?: () => JsonObject | undefined;
  /**
   * Commits what the stream showed until now as a step of its own, once the turn's record is
   * written (a client started following it: its event ids must survive a restart); set by the
   * turn's {@link TurnJournalWriter}, in order with its other commits.
   */
  saveStream?: () => Promise<void>;
}

/**
 * Writes a running turn's steps to the store as the agent loop reports them, committing only
 * where a step could not be done again: before a call that is not idempotent starts, and with
 * each result of a call that ran (with its audit record, which no longer commits apart). What
 * comes between (the turn itself, a model reply, an idempotent call's start, a refused call's
 * result) is held back and committed with the next; a final reply commits with the turn. So a
 * turn costs no more commits than before, but for each call that is not idempotent.
 */
export class TurnJournalWriter implements LoopJournal {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #place: JournalPlace;
  /** Tells subscribers of an audit record committed with a step. */
  readonly #announce: (event: ToolCallEvent) => void;
  #held: TurnStepRecord[] = [];
  /** The commit under way: the next waits for it, so a turn's steps are numbered in the order they were taken. */
  #last: Promise<unknown> = Promise.resolve();

  constructor(store: Store, clock: Clock, place: JournalPlace, announce: (event: ToolCallEvent) => void) {
    this.#store = store;
    this.#clock = clock;
    this.#place = place;
    this.#announce = announce;
    place.saveStream = () => this.#saveStream();
  }

  /** Runs `write` after the commits before it, whether they failed or not. */
  #inOrder<T>(write: () => Promise<T>): Promise<T> {
    const next = this.#last.then(write, write);
    this.#last = next.catch(() => undefined);
    return next;
  }

  #saveStream(): Promise<void> {
    // Not recorded yet: its first commit takes the stream with it. Committed: nothing to follow.
    if (this.#place.pending !== undefined || this.#place.closed === true) return Promise.resolve();
    const shown = this.#place.stream?.();
    if (shown === undefined) return Promise.resolve();
    const step: TurnStepRecord = { kind: 'stream', at: this.#clock.now(), data: shown };
    return this.#inOrder(() => this.#store.turns.step(this.#place.turnId, [step]));
  }

  async #commit(step: TurnStepRecord | undefined, events: readonly ToolCallEvent[] = []): Promise<void> {
    // A call's start held back says nothing its result, committed with it, does not.
    const held =
      step?.kind === 'tool-result'
        ? this.#held.filter((other) => other.kind !== 'tool-start' || other.data['toolCallId'] !== step.data['toolCallId'])
        : this.#held;
    if (step === undefined && held.length === 0) return;
    // What the stream showed until now rides with the commit: a client reconnecting after a restart gets it again.
    const shown = this.#place.stream?.();
    const steps = [
      ...held,
      ...(step === undefined ? [] : [step]),
      ...(shown === undefined ? [] : [{ kind: 'stream' as const, at: this.#clock.now(), data: shown }]),
    ];
    this.#held = [];
    const { pending } = this.#place;
    await this.#inOrder(() =>
      this.#store.turns.step(this.#place.turnId, steps, { events: events.map(auditRecordOf), ...(pending === undefined ? {} : { open: pending() }) }),
    );
    delete this.#place.pending;
    for (const event of events) this.#announce(event);
  }

  modelReply(step: { added: ModelMessage[]; text: string; call: ModelCallUsage; toolCalls: readonly ToolCallRequest[] }): Promise<void> {
    this.#held.push({
      kind: 'model',
      at: this.#clock.now(),
      data: { added: step.added, text: step.text, call: step.call, toolCalls: step.toolCalls } as unknown as JsonObject,
    });
    return Promise.resolve();
  }

  toolStart(call: ToolCallRequest, tool: Tool<never>): Promise<void> {
    const idempotent = isIdempotent(tool, call.input);
    const step: TurnStepRecord = { kind: 'tool-start', at: this.#clock.now(), data: { toolCallId: call.toolCallId, toolName: call.toolName, idempotent } };
    // A call that can run again needs no record before it runs.
    if (!idempotent) return this.#commit(step);
    this.#held.push(step);
    return Promise.resolve();
  }

  toolResult(call: ToolCallRequest, result: { text: string; isError: boolean }, finished: ToolFinishEntry | undefined): Promise<void> {
    const at = this.#clock.now();
    const step: TurnStepRecord = {
      kind: 'tool-result',
      at,
      data: { toolCallId: call.toolCallId, toolName: call.toolName, text: result.text, isError: result.isError, durationMs: finished?.durationMs ?? 0 },
    };
    // A call refused by a gate did nothing: its result rides with the next commit.
    if (finished === undefined) {
      this.#held.push(step);
      return Promise.resolve();
    }
    return this.#commit(step, [finishEvent(finished, at)]);
  }

  flush(): Promise<void> {
    return this.#commit(undefined);
  }

  approval(call: ToolCallRequest, approvalId: string): Promise<void> {
    return this.#commit({ kind: 'approval', at: this.#clock.now(), data: { toolCallId: call.toolCallId, approvalId } });
  }
}

/** One step's data as the writer above stored it. */
type ModelStepData = { added: ModelMessage[]; text: string; call: ModelCallUsage; toolCalls: ToolCallRequest[] };

/** A step of a resumed turn's trace from before its restart: a model call, or a tool call that ended. */
export type RestoredStep = { kind: 'model'; call: ModelCallUsage } | ToolTraceStep;

/**
 * Where a journaled turn stands: the messages it added after its user message, how the loop
 * goes on (its model calls, its text, the round of calls it was in, the approval requests its
 * calls wait for), and its trace so far (its model calls and the tool calls that ended, in order).
 */
export function resumeOf(record: TurnJournalRecord): { added: ModelMessage[]; resume: LoopResume; trace: RestoredStep[] } {
  const added: ModelMessage[] = [];
  const calls: ModelCallUsage[] = [];
  const trace: RestoredStep[] = [];
  let text = '';
  let iterations = 0;
  let last: ModelStepData | undefined;
  let results: ToolResultPart[] = [];
  let started = new Map<string, boolean>();
  let approvals = new Map<string, { approvalId: string; at: number }>();
  for (const step of record.steps) {
    if (step.kind === 'stream') continue;
    if (step.kind === 'model') {
      const data = step.data as unknown as ModelStepData;
      added.push(...data.added);
      calls.push(data.call);
      trace.push({ kind: 'model', call: data.call });
      text += data.text;
      iterations += 1;
      last = data;
      results = [];
      started = new Map();
      approvals = new Map();
    } else if (step.kind === 'tool-start') {
      const { toolCallId, idempotent } = step.data as { toolCallId: string; idempotent?: boolean };
      started.set(toolCallId, idempotent === true);
    } else if (step.kind === 'approval') {
      const { toolCallId, approvalId } = step.data as { toolCallId: string; approvalId: string };
      approvals.set(toolCallId, { approvalId, at: step.at });
    } else if (step.kind === 'tool-result') {
      const {
        toolCallId,
        toolName,
        text: output,
        isError,
        durationMs = 0,
      } = step.data as { toolCallId: string; toolName: string; text: string; isError: boolean; durationMs?: number };
      started.delete(toolCallId);
      const asked = approvals.get(toolCallId);
      approvals.delete(toolCallId);
      const startedAt = asked?.at ?? step.at - durationMs;
      trace.push({
        kind: 'tool',
        toolCallId,
        toolName,
        startedAt,
        durationMs: step.at - startedAt,
        isError,
        ...(asked === undefined ? {} : { approval: approvalOf(isError, output) }),
      });
      results.push({ type: 'tool-result', toolCallId, toolName, output: isError ? { type: 'error-text', value: output } : { type: 'text', value: output } });
    }
  }
  const resume: LoopResume = { calls, text, iterations };
  if (last !== undefined && last.toolCalls.length > 0) {
    resume.round = {
      calls: last.toolCalls,
      results,
      started,
      ...(approvals.size === 0 ? {} : { approvals: new Map([...approvals].map(([toolCallId, { approvalId }]) => [toolCallId, approvalId])) }),
    };
  }
  return { added, resume, trace };
}

/** The approval requests the calls of a journaled turn wait for (decision 0045): they stay pending across the restart. */
export function awaitedApprovals(record: TurnJournalRecord): string[] {
  return [...(resumeOf(record).resume.round?.approvals?.values() ?? [])];
}

/** The events a journaled turn's stream showed before its daemon stopped, in order (decision 0059). */
export function savedStreamOf(record: TurnJournalRecord): StreamEntry[] {
  return record.steps.flatMap((step) => (step.kind === 'stream' ? ((step.data as unknown as StreamStepData).entries ?? []) : []));
}

/** How long a turn given an idempotency key is remembered after it ends, for its caller's retries. */
export const IDEMPOTENCY_KEY_RETENTION_MS = 24 * 60 * 60 * 1000;

/** What {@link resumeTurn} needs: the store, how a message is sent (the kernel's audited send), a logger. */
export interface ResumeParts {
  store: Store;
  clock: Clock;
  logger: Logger;
  send: (agentId: string, message: string, options: SendOptions) => Promise<unknown>;
  /**
   * Told of a resumed turn's end with the approval requests its calls waited for: those it did
   * not wait on again (it ended first) are closed (see `ApprovalService.release`).
   */
  release?: (approvalIds: readonly string[]) => Promise<void>;
  /**
   * Told, before a turn resumes, of the approval requests its calls wait for: they stay pending
   * for it, a decision made meanwhile kept for when it gets there (see `ApprovalService.keep`).
   */
  keep?: (approvalIds: readonly string[]) => void;
}

/**
 * Resumes one turn the journal holds as running (its process stopped in it, or another node's
 * lease on it lapsed: decision 0061), from where it stopped, as its caller; a journal that does not say what it was asked is closed as failed.
 * Resolves once the turn is sent: it runs in the background, as its agent's queue allows.
 * Returns whether it was resumed.
 */
export async function resumeTurn(parts: ResumeParts, record: TurnJournalRecord): Promise<boolean> {
  const { store, logger } = parts;
  const request = readRequest(record.request);
  if (request === undefined) {
    await store.turns.finish({ turnId: record.id, outcome: { status: 'failed', reason: 'its journal does not say what it was asked' } }, parts.clock.now());
    return false;
  }
  const options: SendOptions = {
    caller: request.caller,
    resume: record,
    ...(record.conversation === null ? {} : { conversation: record.conversation }),
    ...(request.person === undefined ? {} : { person: request.person }),
    ...(request.door === undefined ? {} : { door: request.door }),
    ...(request.cycle === undefined ? {} : { cycle: request.cycle }),
    ...(request.wake === undefined ? {} : { wake: request.wake }),
    ...(request.model === undefined ? {} : { model: request.model }),
  };
  const approvals = awaitedApprovals(record);
  if (approvals.length > 0) parts.keep?.(approvals);
  void parts
    .send(record.agentId, request.message, options)
    .catch((error: unknown) => logger.warn({ err: error, agentId: record.agentId, turnId: record.id }, 'a resumed turn did not finish'))
    .then(() => (approvals.length === 0 ? undefined : parts.release?.(approvals)))
    .catch((error: unknown) => logger.warn({ err: error, turnId: record.id }, 'could not close the approval requests of a resumed turn'));
  return true;
}

/**
 * Resumes every turn the journal holds as running (see {@link resumeTurn}), in the order they
 * were accepted; forgets turns given a key that ended more than
 * {@link IDEMPOTENCY_KEY_RETENTION_MS} ago. Returns how many turns were resumed. `records` are
 * the running turns when the caller read them already.
 */
export async function resumeTurns(parts: ResumeParts, records?: readonly TurnJournalRecord[]): Promise<number> {
  await parts.store.turns.prune(parts.clock.now() - IDEMPOTENCY_KEY_RETENTION_MS);
  let resumed = 0;
  for (const record of records ?? (await parts.store.turns.running())) if (await resumeTurn(parts, record)) resumed += 1;
  if (resumed > 0) parts.logger.info({ turns: resumed }, `resuming ${resumed} turn(s) the daemon stopped in`);
  return resumed;
}
