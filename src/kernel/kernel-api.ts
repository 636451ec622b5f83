import type {
  Capability,
  Clock,
  EventQuery,
  EventRecord,
  IdGenerator,
  Logger,
  Store,
  Tool,
  ToolResult,
  UsageBucket,
  WorkflowRecord,
} from '../contracts/index.ts';
import type { EmergentEngine, ForgedToolView, ForgeOutcome } from '../forged-tools/index.ts';
import type { Manifest } from '../manifest/index.ts';
import type { AgentEvent, TaintSettings, TurnResult } from '../runtime/index.ts';
import type { AgentLifecycleHook } from './agent-lifecycle-hook.ts';
import type { AgentRuntime, Caller } from './agent-runtime.ts';
import type { AgentDetailView, AgentView } from './agent-view.ts';
import type { ApprovalNode } from './approval-requests.ts';
import type { ApprovalService } from './approval-service.ts';
import type { CapabilityManager } from './capability-manager.ts';
import type { ChannelEvent, EventBus, KernelEvent, PackageEvent } from './event-bus.ts';
import type { CancelledTurnView, EventId, FollowedEvent, RunningTurnView, TurnCounts } from './live-turns.ts';
import type { KeyedTurn, SendOptions, TaskTurn } from './message-flow.ts';
import type { SessionSummary, SessionView } from './session-view.ts';
import type { UsageRow } from './usage-report.ts';
import type { WakeRuns } from './wake-runs.ts';

/** What the kernel is built from (its services take it, `createKernelServices`). It reads no globals and no environment. */
export interface KernelDependencies {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  /** Subsystems told when agents start and stop running (workspaces, code modules); those built on the kernel itself are added with `Kernel.addHook`. */
  hooks?: readonly AgentLifecycleHook[];
  /** Models, tools and prices for running turns; without it the kernel manages agents but cannot run them. */
  runtime?: AgentRuntime;
  /** How long a tool call waits for a human's approval before it is denied. */
  approvalTimeoutMs?: number;
  /** `[taint]`: what tool calls carrying untrusted text into a sink meet; the defaults when unset. */
  taint?: TaintSettings;
  /**
   * Go on with agents' background work (an executing workflow) at boot and on resume. The
   * daemon does; a one-off CLI command must not run another process's work.
   */
  resumeBackgroundWork?: boolean;
  /** This process as a node of the cluster: what other nodes sharing the store hold (approvals waited for, forged tools' source) is theirs. */
  node?: KernelNode | undefined;
  /** The IANA time zone cron schedules are read in (`[scheduler].timezone`), as a forced wake-up's message names it. */
  scheduleTimezone?: string | undefined;
}

/** This process as a node of the cluster (docs/cluster.md), as the kernel asks about the others. */
export interface KernelNode extends ApprovalNode {
  /** Whether another node sharing the store runs now. */
  othersAlive(): Promise<boolean>;
  /**
   * Nodes share the store and each running turn is leased to its node (PostgreSQL, decision
   * 0061): a turn of a node that died is taken over by another once its lease lapses
   * (`Kernel.resumeTurn`), so none is resumed at start. Capped families' spending is read from the
   * shared usage log at each model call, agents' hourly spending at most once a second
   * (`LifetimeSpend`, `QuotaTracker`, decision 0040).
   */
  leasesTurns?: boolean;
  /**
   * How long a node holds a running turn without renewing its lease (`[cluster] turn_lease_seconds`,
   * decision 0061): a turn whose node stopped is taken over within it (and a second). 15 s when not given.
   */
  turnLeaseMs?: number;
  /**
   * With nodes sharing the store: runs `work` while no other node runs its own (a lock in the
   * database). Spawns and updates run in it, after reading again from the store the agents they
   * judge by, which another node may have changed since this one heard of it.
   */
  exclusive?<T>(work: () => Promise<T>): Promise<T>;
}

/** Options for {@link Kernel.spawn}. */
export interface SpawnOptions {
  /** The parent's name or id. The child's capabilities must be covered by the parent's. */
  parent?: string;
  /**
   * The least privilege of the turn that spawns (a package activity's step, `ToolAgent.limit`):
   * the child's capabilities must be covered by it as well, so a step cannot make a child holding
   * what only another step of the same agent may use.
   */
  limit?: readonly Capability[];
  /**
   * With `limit`: the MCP servers the spawning turn may use (`ToolAgent.limitMcpServers`). The
   * child's `mcp_servers` must be among them, and is set to them when it names none: the limit's
   * `mcp_<server>_*` patterns also match servers whose names start the same.
   */
  limitMcpServers?: readonly string[];
}

/** What {@link Kernel.boot} restored. */
export interface BootReport {
  running: number;
  suspended: number;
  /** Stored agents that could not be restored (their manifest no longer validates). */
  skipped: { id: string; name: string; problem: string }[];
}

/**
 * The composition root and the only place that decides what is allowed. Every door (CLI,
 * HTTP, MCP, A2A, triggers) ends in a call here.
 */
export interface Kernel {
  readonly events: EventBus;
  readonly capabilities: CapabilityManager;
  /** Human approvals of tool calls: list them, approve or deny. */
  readonly approvals: Pick<ApprovalService, 'list' | 'decide'>;
  /** Restores the stored agents: those that were running run again. Call once, first. */
  boot(): Promise<BootReport>;
  /**
   * Adds a lifecycle hook after those the kernel was built with, in that order: how the
   * composition root registers the subsystems built on the kernel itself (the scheduler, the
   * package runtime). Call it before `boot()`; an agent already running does not hear of it.
   */
  addHook(hook: AgentLifecycleHook): void;
  /** Records what the package runtime and channels report in the audit log, then tells subscribers (like the kernel's own events). */
  publish(event: PackageEvent | ChannelEvent): Promise<void>;
  /** Scheduled wake-ups as runs: wake an agent (recorded), record what was skipped, list an agent's runs (decision 0046). */
  readonly wakeRuns: WakeRuns;
  /**
   * Spawns an agent (spec/01 spawn flow): ids, session, capabilities, inheritance check,
   * commit, registration, `agent-spawn` event. Nothing is left behind when it fails.
   * @throws {AgentNameTakenError} when a live agent has the name.
   * @throws {AgentNotFoundError} when the parent does not exist.
   * @throws {CapabilityEscalationError} when the child would exceed its parent in any field that
   *   gives power (see `confineChild`); what is stored is the child as its parent confines it.
   */
  spawn(manifest: Manifest, options?: SpawnOptions): Promise<AgentView>;
  /**
   * Replaces a live agent's manifest, keeping its id, session and memory: checked like a spawn
   * (its parent confines it), and refused when one of its children would then exceed it. A
   * running agent's schedules and triggers restart on the new manifest.
   * @throws {AgentNotFoundError} {CapabilityEscalationError} {CapabilityDeniedError}; a LoomError
   *   `AGENT_RENAME` when the manifest names another agent.
   */
  update(reference: string, manifest: Manifest): Promise<AgentView>;
  /** Every live agent, in spawn order. */
  list(): AgentView[];
  /** @throws {AgentNotFoundError} */
  get(reference: string): AgentDetailView;
  /** The name of the live agent `reference` (a name or an id) names, without building its view. @throws {AgentNotFoundError} */
  nameOf(reference: string): string;
  /** Persists the suspended state and stops the agent. Suspending a suspended agent does nothing. */
  suspend(reference: string): Promise<AgentView>;
  /** Persists the running state and starts the agent. Resuming a running agent does nothing. */
  resume(reference: string): Promise<AgentView>;
  /**
   * Kills the agent and its descendants: removed from every registry and from storage, their
   * sessions and memory deleted. Returns the killed agents, the named one first.
   */
  kill(reference: string): Promise<AgentView[]>;
  /**
   * Sends a message to an agent and returns its reply (spec/01 message flow).
   * @throws {AgentNotFoundError} {AccessDeniedError} {CapabilityDeniedError} {AgentChainError}
   *   {AgentStateError} {QuotaExceededError} {ModuleUnavailableError} before the turn starts;
   *   {ModelCallFailedError} when every model failed.
   */
  send(reference: string, message: string, options?: SendOptions): Promise<TurnResult>;
  /**
   * Runs one task turn (a package activity): a standalone prompt outside the agent's session,
   * optionally on another model it may call, limited to less than it holds, within a token
   * budget. Usage is recorded and counted against the quota like a message's.
   * @throws as `send` does; {TokenBudgetExceededError} when the budget is passed.
   */
  runTask(reference: string, task: TaskTurn, options?: SendOptions): Promise<TurnResult>;
  /** A workflow agent's current plan and its progress, if it has one. */
  workflow(reference: string): Promise<WorkflowRecord | undefined>;
  /**
   * An agent's session: its main session (its owner's), or the one of `conversation`, with its id
   * and the messages of its history (none yet for a conversation that has not begun).
   */
  session(reference: string, options?: { conversation?: string }): Promise<SessionView>;
  /** Every session of an agent, oldest first, without their messages. */
  sessions(reference: string): Promise<SessionSummary[]>;
  /** One session of an agent by id, without its messages; undefined when the agent has none of that id. */
  findSession(reference: string, id: string): Promise<SessionSummary | undefined>;
  /** Empties an agent's main session history, or that of `conversation` (its id stays). */
  resetSession(reference: string, options?: { conversation?: string }): Promise<void>;
  /**
   * The audit log (kernel events, turns, tool calls and refusals), oldest first unless `order` is
   * `desc`, optionally for one agent, of some types, after or before a sequence number (500 rows
   * unless `limit` says otherwise).
   */
  audit(options?: { agent?: string } & Omit<EventQuery, 'agentId'>): Promise<EventRecord[]>;
  /** Tokens and cost by agent and model, optionally for one agent (name or id) and since a time. */
  usage(options?: { agent?: string; since?: number }): Promise<UsageRow[]>;
  /**
   * Tokens and cost per time bucket of `stepMs` from `since` to `until`, by agent (with its name,
   * null once killed) and model, optionally for one agent.
   */
  usageSeries(options: { since: number; until: number; stepMs: number; agent?: string }): Promise<(UsageBucket & { agentName: string | null })[]>;
  /**
   * The tools a principal that is not an agent (the `[mcp_server]` identity MCP clients act as)
   * may call: those its capabilities grant.
   */
  principalTools(principal: ToolPrincipal): Tool<never>[];
  /** Runs one tool call for such a principal through the tool runner (every check applies). */
  runPrincipalTool(principal: ToolPrincipal, toolName: string, input: unknown, signal: AbortSignal): Promise<ToolResult>;
  /**
   * Runs one tool call as an agent, outside its turns, through the tool runner with its grants,
   * tool lists, approvals and settings (how a person tries a forged tool). Refusals are error results.
   * @throws {AgentNotFoundError}
   */
  runAgentTool(agent: string, toolName: string, input: unknown, signal?: AbortSignal): Promise<ToolResult>;
  /** Forged tools (spec/02): list, show, forge or import as an agent, export, promote, demote. */
  readonly forgedTools: ForgedTools;
  /** The same turn as a stream of agent events, ending with `run-finish` or `error`. */
  stream(reference: string, message: string, options?: Omit<SendOptions, 'emit'>): AsyncIterable<AgentEvent>;
  /**
   * The agent's turn on its main session that runs now (else the first one waiting), whoever
   * asked for it; on a cluster, one another node runs, as its journal holds it; undefined when it has none.
   * @throws {AgentNotFoundError}
   */
  runningTurn(reference: string, options?: { conversation?: string }): Promise<RunningTurnView | undefined>;
  /** How many turns run now and how many wait behind another turn of their agent, across every agent and session (the metrics' gauges). */
  turnCounts(): TurnCounts;
  /** The journal ids of this process's turns under way or queued (decision 0045): its node renews its leases on them (decision 0061). */
  journaledTurns(): string[];
  /**
   * The turn a message from `caller` (the owner by default; it must be allowed to message the
   * agent) with `idempotencyKey` in `conversation` started, found as a retry with the key finds it
   * but without starting one: undefined when the key started none (never journaled, or forgotten
   * after its retention). How an A2A task cut off by a restart learns its turn's outcome.
   * @throws {AgentNotFoundError} {AccessDeniedError} {CapabilityDeniedError}
   */
  keyedTurn(reference: string, idempotencyKey: string, options?: { caller?: Caller; conversation?: string }): Promise<KeyedTurn | undefined>;
  /**
   * Resumes, in the background, the turn `turnId` of the journal from where it stopped: one this
   * node took over from a node that stopped renewing its lease (decision 0061). False when the
   * journal holds no such running turn.
   */
  resumeTurn(turnId: string): Promise<boolean>;
  /**
   * Follows that turn, as a client that left and came back does: its events so far (text
   * joined), each with its id, then the rest as they come, ending with `run-finish` or `error`
   * once it is committed; with `after`, only the events after that one (decision 0059). On a
   * cluster, a turn another node runs is followed from its journal until `signal` aborts (the
   * client left).
   * @throws {AgentNotFoundError} {TurnNotRunningError}
   */
  followTurn(reference: string, options?: { conversation?: string; after?: EventId; signal?: AbortSignal }): Promise<AsyncIterable<FollowedEvent>>;
  /**
   * Cancels that turn, as `caller` (who must be allowed to message the agent; the owner by
   * default), named `by` in the session. Resolves once the turn has ended and what it said and did
   * is committed (a cancelled turn keeps both), with how it ended.
   * @throws {AgentNotFoundError} {AccessDeniedError} {TurnNotRunningError}
   */
  cancelTurn(reference: string, options?: { caller?: Caller; by?: string; conversation?: string }): Promise<CancelledTurnView>;
  /**
   * Closes every request waiting for a person (approvals and questions, `expired` by
   * `shutdown`), cancels in-flight turns (what they did is saved) and stops every running agent
   * without changing what is stored, so the next boot resumes them.
   */
  shutdown(): Promise<void>;
  /**
   * Takes in an event that another process sharing the store recorded (a node of the cluster; see
   * `src/cluster/event-relay.ts`): an agent spawned, killed, suspended, resumed or updated there
   * is read from the store and held here as there (its hooks started or stopped, its turns here
   * stopped); a decision on an approval reaches the turn here that waits for it; then this
   * node's subscribers hear the event. It is not recorded again.
   */
  receive(event: KernelEvent): Promise<void>;
  /** Reads every agent from the store again and holds each as stored: after events from other nodes may have been missed. */
  reload(): Promise<void>;
}

/** Forged tools as the doors reach them; every forge runs as the agent, through its grants. */
export interface ForgedTools {
  list(options?: { agent?: string }): Promise<ForgedToolView[]>;
  /** @throws {UsageError} for an unknown id. */
  get(id: string): Promise<ForgedToolView>;
  /** Forges a tool for an agent as if its model had asked (same checks, tests and judge). @throws {AgentNotFoundError} */
  forge(agent: string, request: unknown, by: string, signal?: AbortSignal): Promise<ForgeOutcome>;
  /** Imports an exported tool into an agent: tested and judged again. @throws {AgentNotFoundError} */
  import(agent: string, document: string, by: string, signal?: AbortSignal): Promise<ForgeOutcome>;
  export(id: string): Promise<string>;
  promote(id: string, by: string): ReturnType<EmergentEngine['promote']>;
  demote(id: string, by: string, reason: string | null): Promise<ForgedToolView>;
}

/** An identity that is not an agent but may call tools: MCP clients acting as `[mcp_server]`. */
export interface ToolPrincipal {
  /** Also the name of its workspace folder, where its relative paths resolve. */
  name: string;
  capabilities: readonly Capability[];
}
