import type { z } from 'zod';
import type { Capability, ToolAgent, TurnJournalRecord } from '../contracts/index.ts';
import type { ModelTarget } from '../models/index.ts';
import type { AgentEvent, AgentEventSink, TurnResult } from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { Caller } from './agent-runtime.ts';
import type { CallSpend } from './budget-ledger.ts';
import type { TurnEvent } from './event-bus.ts';
import type { CancelledTurnView, EventId, FollowedEvent, RunningTurnView, TurnCounts } from './live-turns.ts';

/**
 * What the message flow offers and is asked with: its doors' options, task turns, model calls
 * outside turns and the seal of a turn's audit record. A file of types that imports no part of
 * the flow, so that the flow's parts and those that wrap it (`turn-audit.ts`, the journal) can
 * all name them without importing one another.
 */

/** Which scheduled wake-up a turn runs: its trigger (`continuous`, `cron`, `manual`, a proactive event) and the instant it was due. */
export interface WakeOf {
  trigger: string;
  dueAt: number;
}

/** Options for a message to an agent. */
export interface SendOptions {
  caller?: Caller;
  signal?: AbortSignal;
  /** Receives the run's events as they happen (the streaming doors use it). */
  emit?: AgentEventSink;
  /**
   * The conversation the message belongs to (a chat thread on a channel): its own session of
   * the agent, made with its first message. Without one, the agent's main session.
   */
  conversation?: string;
  /**
   * Who the message is from, the same on every channel: the assistant loop then sees what the
   * agent said with them in other conversations, and adds this exchange (see `canonical-memory.ts`).
   */
  person?: string;
  /** The door the message came through when it is one whose text is untrusted whoever sends it (A2A): see `untrustedSenderOf`. */
  door?: 'a2a';
  /**
   * A scheduled wake-up of an agent that acts unasked: with `[autonomous]`, its tool calls are
   * capped by `max_actions_per_cycle` (see `AutonomousGuard`).
   */
  cycle?: boolean;
  /**
   * With `cycle`: the scheduled wake-up this turn runs (its trigger and due instant), journaled
   * with the turn so that its job, taken again on another node, finds its own turn (see `WakeRuns.turnGoesOn`).
   */
  wake?: WakeOf;
  /** The model for this turn instead of the manifest's (a scheduled wake-up's `[schedule].model`); one the agent may call. */
  model?: ModelTarget;
  /**
   * The caller's key for this message (an `Idempotency-Key`): a message sent again with the same
   * key gets the turn it started (its reply once it ends) instead of starting another.
   */
  idempotencyKey?: string;
  /** A turn its daemon stopped in, resumed from its journal (decision 0045); the kernel gives it at start. */
  resume?: TurnJournalRecord;
  /**
   * The door tells its caller the message was taken before the turn ends (a streamed reply's first
   * event, a scheduled run recorded as started): the
   * turn is recorded in its journal when it is accepted, one commit more, so that a daemon that
   * dies before the turn's first step does not lose it (decision 0045).
   */
  acknowledged?: boolean;
}

/**
 * A turn an agent runs as one step of work rather than as a message in its conversation (a
 * package activity): its prompt stands alone, nothing is added to the agent's session, and it
 * may run with less than the agent holds.
 */
export interface TaskTurn {
  prompt: string;
  /** Added to the agent's system prompt for this turn (skills' instructions). */
  instructions?: string;
  /** The model for this turn instead of the manifest's; it must be one the agent may call. */
  model?: ModelTarget;
  /** Least privilege: every call must be granted by these as well (see `ToolAgent.limit`). */
  limit?: readonly Capability[];
  /** With `limit`: the only MCP servers whose tools the turn may call (see `ToolAgent.limitMcpServers`). */
  mcpServers?: readonly string[];
  /**
   * Tokens the turn may use (see `AgentLoopOptions.tokenBudget`): each model call of the turn (a
   * `generate_text` or a judge its tools ask for included) is refused once they are spent.
   */
  tokenBudget?: { max: number; label: string };
  /**
   * Told what each model call of the turn spent as it settles, failed calls that reported usage
   * included: a package run counts every attempt of its activities with it.
   */
  onSpend?: (spent: CallSpend) => void;
}

/**
 * The turn a message's idempotency key started, found without starting one: how a door whose
 * caller was cut off by a restart (an A2A task) learns what became of the turn its message started.
 */
export interface KeyedTurn {
  /** `running` (resumed here after a restart, or running on another node) or `done` (its outcome is kept). */
  state: 'running' | 'done';
  /** Whether it runs (or waits its turn) on this node: resumed here, when `running`. */
  here: boolean;
  /**
   * Its reply once it ends (at once when it has), as a retry with its key gets it.
   * @throws the error it ended with; `TURN_RUNNING` when it runs on another node.
   */
  result(): Promise<TurnResult>;
  /**
   * Its events so far (text joined), then the rest as they come, until it ends, while it runs on
   * this node (a turn resumed here); nothing when it does not (it ended, or runs on another node).
   */
  follow(): AsyncIterable<AgentEvent>;
  /**
   * Cancels this turn (found by its journal id, not the conversation's current turn), saying it was
   * cancelled `by` whom, if it runs or waits its turn on this node now. Returns whether it did:
   * false when it does not run here (ended, or on another node).
   */
  cancel(by: string): boolean;
}

/** The message flow, and what the kernel tells it when agents stop. */
export interface MessageFlow {
  /** `seal` is how the turn's commit writes its own audit record (see `TurnSeal`). */
  send(reference: string, message: string, options?: SendOptions, seal?: TurnSeal): Promise<TurnResult>;
  /**
   * Runs a task turn (see {@link TaskTurn}) under the agent's capabilities, quota and turn order;
   * its usage is recorded like a message's.
   * @throws as `send` does; {TokenBudgetExceededError} when the turn passes its budget (its
   *   usage is recorded all the same).
   */
  runTask(reference: string, task: TaskTurn, options?: SendOptions): Promise<TurnResult>;
  /** Aborts an agent's running and queued turns (it was killed or suspended, or the kernel stops). */
  stopTurns(agent: AgentEntry, reason: 'kill' | 'suspend' | 'shutdown'): void;
  /**
   * The agent's turn on the session of `conversation` (its main session without one) that runs now
   * (else the first one waiting), if any; on a cluster, one another node runs (`runningElsewhere`).
   */
  runningTurn(agent: AgentEntry, conversation?: string): Promise<RunningTurnView | undefined>;
  /** How many turns run now and how many wait, across every agent and session. */
  turnCounts(): TurnCounts;
  /** The journal ids of this process's turns under way or queued: their node renews its leases on them (decision 0061). */
  journaledTurns(): string[];
  /**
   * The turn a message from `caller` (who must be allowed to message the agent) with
   * `idempotencyKey` in `conversation` started, without starting one: undefined when the key
   * started none (the turn was never journaled, or is forgotten past its retention).
   * @throws {AccessDeniedError} {CapabilityDeniedError} {AgentChainError}
   */
  keyedTurn(agent: AgentEntry, caller: Caller, idempotencyKey: string, conversation?: string): Promise<KeyedTurn | undefined>;
  /**
   * Follows that turn: its events so far (text joined), each with its id, then the rest as they
   * come, ending with `run-finish` or `error` once it is committed. With `after` (the id of the
   * last event a client got, `Last-Event-ID`), only those after it (see `LiveTurn.follow`). On a
   * cluster, a turn another node runs is followed from its journal (`followElsewhere`) until
   * `signal` aborts, and one that ended there lately gives a client back with `after` its end.
   * @throws {TurnNotRunningError} when it has none, or when `after` names an event of a turn that has ended (and, on a
   *   cluster, did not end elsewhere within the last two minutes).
   */
  followTurn(agent: AgentEntry, conversation?: string, after?: EventId, signal?: AbortSignal): Promise<AsyncIterable<FollowedEvent>>;
  /**
   * Cancels that turn as `caller` (who must be allowed to message the agent), and resolves once
   * it has ended and what it said and did is committed, with how it ended.
   * @throws {AccessDeniedError} {CapabilityDeniedError} {TurnNotRunningError}
   */
  cancelTurn(agent: AgentEntry, caller: Caller, by: string, conversation?: string): Promise<CancelledTurnView>;
  /** Resolves once no turn is running or queued, and no background work (a workflow) runs. */
  idle(): Promise<void>;
  /** Empties the session of an agent's `conversation` (its main session without one), after its running turn (if any) ends. */
  resetSession(agent: AgentEntry, at: number, conversation?: string): Promise<void>;
  /** Goes on with the agent's background work (an executing workflow) after a start or a resume. */
  resumeWork(agent: AgentEntry): Promise<void>;
  /**
   * One model call as the agent outside its turns (the `generate_text` tool, forged tools'
   * judges): its primary model, or `model` when it may call that one; usage recorded at once and
   * counted against its quota. With `schema` the reply is JSON matching it (asked twice at most).
   * @throws {AgentNotFoundError} {AgentStateError} {QuotaExceededError} {CapabilityDeniedError}
   *   {ModuleUnavailableError}, and the model's errors.
   */
  callModel<T>(agentId: string, request: ModelCallRequest<T>): Promise<{ text: string; output: T | undefined }>;
}

/** A model call made as an agent outside its turns (see `MessageFlow.callModel`). */
export interface ModelCallRequest<T> {
  /** What the call is for, in logs and errors (`generate_text`, `judge`). */
  step: string;
  system: string;
  prompt: string;
  model?: ModelTarget;
  schema?: z.ZodType<T>;
  signal: AbortSignal;
  /**
   * The agent as the turn asking sees it. In a turn limited to less (a package step's,
   * `ToolAgent.limit`) the call goes to the step's model, or else to the first of the agent's
   * models the limit's `llm_query` names.
   */
  caller?: ToolAgent;
}

/**
 * How a turn's own commit carries its audit record, so that a finished turn is one write: the
 * commit asks `finished` for the record of its result and writes it with the turn's messages,
 * then sets `recorded`. A turn whose commit does not (a task turn) is recorded after it returns.
 */
export interface TurnSeal {
  finished(result: TurnResult): TurnEvent;
  recorded?: TurnEvent;
  /**
   * Set by the commit of a turn that ran and was stopped (cancelled, or a budget refused its next
   * model call): it is recorded as a cancel, not as a refusal before it ran.
   */
  stopped?: boolean;
  /**
   * Set when the message repeated an earlier one's idempotency key and got that turn's reply: the
   * earlier turn has its own record, so none is written.
   */
  replayed?: boolean;
}
