import { isDeepStrictEqual } from 'node:util';
import { capabilitiesFromManifest, isGranted } from '../capabilities/index.ts';
import type { AgentRecord, Capability, Clock, EventQuery, EventRecord, IdGenerator, JsonObject, Logger, Store, Tool, ToolAgent, ToolBox, ToolResult, UsageBucket, WorkflowRecord } from '../contracts/index.ts';
import {
  CapabilityDeniedError,
  LoomError,
  CapabilityEscalationError,
  AgentNameTakenError,
  AgentNotFoundError,
  StoreConflictError,
  StoreNotFoundError,
  ModuleUnavailableError,
} from '../errors/index.ts';
import { createEmergentEngine, type EmergentEngine, type ForgedToolView, type ForgeOutcome, type JudgeRole, VerdictSchema } from '../emergent/index.ts';
import { codeModuleOf, codeSettingsOf, type Manifest, ManifestSchema, parseManifest, withoutRetiredKeys } from '../manifest/index.ts';
import type { ModelTarget } from '../models/index.ts';
import { type AgentEvent, createToolRunner, type TaintSettings, TaintTracker, type ToolRunner, type TurnResult } from '../runtime/index.ts';
import { agentMessageTool, LOG_TOOLS } from '../tools/index.ts';
import { formatIssues } from '../validation/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import { trackRecentFailures } from './agent-health.ts';
import type { AgentLifecycleHook, StopReason } from './agent-lifecycle-hook.ts';
import { AgentRegistry } from './agent-registry.ts';
import { confineChild, type ConfinementContext, confineToStep } from './child-confinement.ts';
import { type ApprovalNode, ApprovalService } from './approval-service.ts';
import { type AgentRuntime, type Caller, OWNER } from './agent-runtime.ts';
import { type AgentDetailView, type AgentView, toAgentDetailView, toAgentView } from './agent-view.ts';
import { CapabilityManager } from './capability-manager.ts';
import { auditRecordOf, type ChannelEvent, createEventBus, type EventBus, type KernelEvent, type PackageEvent } from './event-bus.ts';
import { streamRun } from './event-stream.ts';
import { createKernelHandle } from './kernel-handle.ts';
import type { CancelledTurnView, EventId, FollowedEvent, RunningTurnView, TurnCounts } from './live-turns.ts';
import { createMessageFlow, type SendOptions, type TaskTurn } from './message-flow.ts';
import { conversationSessionId } from './conversation-session.ts';
import { type SessionSummary, type SessionView, toSessionSummary } from './session-view.ts';
import { BudgetLedger } from './budget-ledger.ts';
import { AutonomousGuard } from './autonomous-guard.ts';
import { PriorityGate } from './priority-gate.ts';
import { LifetimeSpend } from './lifetime-spend.ts';
import { QuotaTracker } from './quota-tracker.ts';
import { judgeModelFor } from './model-targets.ts';
import { createLineup } from './one-at-a-time.ts';
import { toolPolicyOf } from './tool-policy.ts';
import { awaitedApprovals, type ResumeParts, resumeTurn, resumeTurns } from './turn-journal.ts';
import { auditTurns } from './turn-audit.ts';
import { summarizeUsage, type UsageRow } from './usage-report.ts';
import { createWakeRuns, type WakeRuns } from './wake-runs.ts';

/** What the kernel is built from. It reads no globals and no environment. */
export interface KernelDependencies {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  /** Subsystems told when agents start and stop running (scheduler, triggers, workspaces). */
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
   * (`Kernel.resumeTurn`), so none is resumed at start.
   */
  leasesTurns?: boolean;
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
   * asked for it; undefined when it has none.
   * @throws {AgentNotFoundError}
   */
  runningTurn(reference: string, options?: { conversation?: string }): RunningTurnView | undefined;
  /** How many turns run now and how many wait behind another turn of their agent, across every agent and session (the metrics' gauges). */
  turnCounts(): TurnCounts;
  /** The journal ids of this process's turns under way or queued (decision 0045): its node renews its leases on them (decision 0061). */
  journaledTurns(): string[];
  /**
   * Resumes, in the background, the turn `turnId` of the journal from where it stopped: one this
   * node took over from a node that stopped renewing its lease (decision 0061). False when the
   * journal holds no such running turn.
   */
  resumeTurn(turnId: string): Promise<boolean>;
  /**
   * Follows that turn, as a client that left and came back does: its events so far (text
   * joined), each with its id, then the rest as they come, ending with `run-finish` or `error`
   * once it is committed; with `after`, only the events after that one (decision 0059).
   * @throws {AgentNotFoundError} {TurnNotRunningError}
   */
  followTurn(reference: string, options?: { conversation?: string; after?: EventId }): AsyncIterable<FollowedEvent>;
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

/**
 * Where workspaces are when a kernel has no runtime (it runs no tools, so none is ever made):
 * only so that a child's workspace can still be placed inside its parent's.
 */
function workspaceWithoutRuntime(agent: { name: string; workspace: string | undefined }): string {
  return agent.workspace ?? `/workspaces/${agent.name}`;
}

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The events about an agent's record: another node's make this one read the agent again. */
const AGENT_EVENTS: ReadonlySet<KernelEvent['type']> = new Set(['agent-spawn', 'agent-kill', 'agent-suspend', 'agent-resume', 'agent-update']);

/** The events about a forged tool's record: another node's make this one read the tool again. */
const FORGED_TOOL_EVENTS: ReadonlySet<KernelEvent['type']> = new Set(['tool-forge', 'tool-promote', 'tool-demote', 'tool-retire']);

/** Ids of principals that are not agents start with this (an agent's id is a UUID). */
const PRINCIPAL_ID_PREFIX = 'principal:';

const NO_FILTER = { allowlist: [], blocklist: [] } as const;

/** The system prompt of `generate_text`: the prompt is the whole task. */
const GENERATE_TEXT_SYSTEM = 'Do what the user message asks and answer with the resulting text only, without preamble.';

/** How long a forge through a door (CLI, HTTP) may take: its tests and its judge. */
const FORGE_TIMEOUT_MS = 5 * 60 * 1000;

/** The agent types that hand work to their managed agents (spec/03). */
const ORCHESTRATOR_MODULES: ReadonlySet<string> = new Set(['builtin:delegate', 'builtin:workflow']);

/** An identity that is not an agent but may call tools: MCP clients acting as `[mcp_server]`. */
export interface ToolPrincipal {
  /** Also the name of its workspace folder, where its relative paths resolve. */
  name: string;
  capabilities: readonly Capability[];
}

function principalAgent(principal: ToolPrincipal, workspaceOf: (name: string) => string): ToolAgent {
  return {
    id: `${PRINCIPAL_ID_PREFIX}${principal.name}`,
    name: principal.name,
    workspace: workspaceOf(principal.name),
    capabilities: principal.capabilities,
    execPolicy: { allow_shell: true, allow_network: true, allow_file_write: true },
    depth: 0,
    chain: [],
  };
}

/** A manifest as admitted for an agent, and the capabilities it grants. */
type Admitted = { manifest: Manifest; granted: Capability[] };

/** Builds a kernel. Call `boot()` before using it. */
export function createKernel(dependencies: KernelDependencies): Kernel {
  const { store, clock, ids } = dependencies;
  const logger = dependencies.logger.child({ component: 'kernel' });
  const hooks = dependencies.hooks ?? [];
  const registry = new AgentRegistry();
  const capabilities = new CapabilityManager();
  const events = createEventBus(logger);
  const quotas = new QuotaTracker(clock, store.usage);
  // Every model call of an agent reserves from its budgets here first, and settles after.
  const ledger = new BudgetLedger(quotas, new LifetimeSpend(store.usage));

  /**
   * Whether the agent may act unasked (its `unasked` hooks run: schedules, triggers, package
   * workflows): it runs, and so does every agent above it. A child acts unasked only while its
   * parent does (0015), so a suspended parent holds those hooks of its children too; their other
   * hooks (workspace, code module) and their turns are theirs.
   */
  function actsUnasked(entry: AgentEntry): boolean {
    return [entry, ...registry.ancestors(entry)].every((current) => current.state === 'running');
  }

  /** Runs the agent's hooks (`only: 'unasked'`: those of its unasked work alone). */
  async function runHooks(entry: AgentEntry, action: 'start' | StopReason, only?: 'unasked'): Promise<void> {
    for (const hook of hooks) {
      if (only === 'unasked' && hook.unasked !== true) continue;
      // A start racing a kill or suspend must not start anything once the agent has stopped.
      if (action === 'start' && (registry.find(entry.id) !== entry || entry.state !== 'running')) return;
      if (action === 'start' && hook.unasked === true && !actsUnasked(entry)) continue;
      try {
        if (action === 'start') await hook.start(entry);
        else await hook.stop(entry, action);
      } catch (error) {
        logger.error({ err: error, hook: hook.name, agentId: entry.id }, `lifecycle hook "${hook.name}" failed`);
      }
    }
  }

  /** Records the event in the audit log, then tells subscribers. The change itself is already committed. */
  async function publish(event: KernelEvent): Promise<void> {
    try {
      await store.events.append(auditRecordOf(event));
    } catch (error) {
      logger.error({ err: error, eventType: event.type, agentId: event.agentId }, 'could not record an event in the audit log');
    }
    events.publish(event);
  }

  /** The agents whose stored manifest's retired keys the log has been told of (once a process). */
  const toldRetired = new Set<string>();

  function restore(record: AgentRecord): AgentEntry | string {
    // A name stored before names lost the dot (0006) is kept: the rest is validated as for any.
    const dotted = typeof record.manifest['name'] === 'string' && record.manifest['name'].includes('.') ? record.manifest['name'] : undefined;
    // Keys an earlier Loom stored and ignored, refused now, are taken out: the agent runs as it did.
    const { manifest: stored, dropped } = withoutRetiredKeys(record.manifest);
    const parsed = ManifestSchema.safeParse(dotted === undefined ? stored : { ...stored, name: dotted.replaceAll('.', '-') }, { reportInput: true });
    if (parsed.success && dropped.length > 0 && !toldRetired.has(record.id)) {
      toldRetired.add(record.id);
      logger.warn({ agentId: record.id, dropped }, `agent "${record.name}" was stored with what this Loom refuses and no Loom acted on; it runs without it: ${dropped.join('; ')}`);
    }
    if (!parsed.success) return formatIssues(parsed.error, { style: 'toml' }).join('; ');
    const manifest = dotted === undefined ? parsed.data : { ...parsed.data, name: dotted };
    return {
      id: record.id,
      name: record.name,
      state: record.state,
      parentId: record.parentId,
      children: new Set(),
      sessionId: record.sessionId,
      manifest,
      capabilities: capabilitiesFromManifest(manifest.capabilities, manifest.profile),
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
    };
  }

  /** An agent's view, and its detailed view, naming the daemon's default model where it runs on it. */
  const viewOf = (entry: AgentEntry): AgentView => toAgentView(entry, dependencies.runtime?.defaultModel, dependencies.runtime?.env);
  const detailOf = (entry: AgentEntry): AgentDetailView => toAgentDetailView(entry, dependencies.runtime?.defaultModel, dependencies.runtime?.env);

  /**
   * After an unattended cycle: suspends the agent when its cycles have taken no action for its
   * `[autonomous].idle_timeout_seconds`, the reason in the audit log's `agent-suspend` and the log.
   */
  async function suspendIfIdle(reference: string): Promise<void> {
    const entry = registry.lookup(reference);
    const reason = entry === undefined || entry.state !== 'running' ? undefined : guard.idleReason(entry);
    if (entry === undefined || reason === undefined) return;
    logger.warn({ agentId: entry.id }, `suspended agent "${entry.name}": ${reason}; resume it with loom agent resume ${entry.name}`);
    await setState(entry.id, 'suspended', reason);
  }

  async function setState(reference: string, state: AgentEntry['state'], reason?: string): Promise<AgentView> {
    const entry = registry.resolve(reference);
    if (entry.state === state) return viewOf(entry);
    const at = clock.now();
    try {
      await store.agents.setState(entry.id, state, at);
    } catch (error) {
      // Killed by another process since this kernel booted.
      if (error instanceof StoreNotFoundError) throw new AgentNotFoundError(reference, { cause: error });
      throw error;
    }
    if (registry.find(entry.id) !== entry) throw new AgentNotFoundError(reference);
    await applyState(entry, state, at);
    // A resumed agent's idle time starts again.
    if (state === 'running') guard.forget(entry.id);
    await publish(state === 'running' ? { type: 'agent-resume', at, agentId: entry.id, name: entry.name } : { type: 'agent-suspend', at, agentId: entry.id, name: entry.name, ...(reason === undefined ? {} : { reason }) });
    return viewOf(entry);
  }

  /**
   * Holds an agent in the state just stored: its turns stop on suspend, its hooks stop or start,
   * and so do the unasked hooks of the descendants that act unasked only through it.
   */
  async function applyState(entry: AgentEntry, state: AgentEntry['state'], at: number): Promise<void> {
    const below = registry.subtree(entry).slice(1);
    const before = new Set(below.filter(actsUnasked));
    entry.state = state;
    entry.updatedAt = at;
    if (state === 'suspended') flow.stopTurns(entry, 'suspend');
    await runHooks(entry, state === 'running' ? 'start' : 'suspend');
    for (const child of below) {
      if (before.has(child) && !actsUnasked(child)) await runHooks(child, 'suspend', 'unasked');
      else if (!before.has(child) && actsUnasked(child)) await runHooks(child, 'start', 'unasked');
    }
    if (state === 'running' && dependencies.resumeBackgroundWork === true) await flow.resumeWork(entry);
  }

  /** Holds an agent with the manifest just stored: its hooks start again with it (turns under way keep theirs). */
  async function applyManifest(entry: AgentEntry, manifest: Manifest, granted: readonly Capability[], at: number): Promise<void> {
    const running = entry.state === 'running';
    if (running) await runHooks(entry, 'suspend');
    entry.manifest = manifest;
    entry.capabilities = granted;
    entry.updatedAt = at;
    capabilities.grant(entry.id, granted);
    if (running) await runHooks(entry, 'start');
  }

  /** Stores `admitted` as the agent's manifest, holds it with it, and says so (`agent-update`). */
  async function holdManifest(entry: AgentEntry, admitted: Admitted, at: number): Promise<void> {
    await store.agents.updateManifest(entry.id, admitted.manifest as unknown as JsonObject, at);
    await applyManifest(entry, admitted.manifest, admitted.granted, at);
    await publish({ type: 'agent-update', at, agentId: entry.id, name: entry.name });
  }

  /** Holds an agent just stored (spawned here or by another node): granted, registered, started. */
  async function adopt(entry: AgentEntry): Promise<void> {
    capabilities.grant(entry.id, entry.capabilities);
    registry.add(entry);
    if (entry.state === 'running') await runHooks(entry, 'start');
  }

  /**
   * Lets go of agents deleted from the store, children first, so no hook sees a child outliving
   * its parent: gone from the registry and their grants first, so nothing running can act for them
   * again; their turns here stopped, their hooks stopped. `retireTools` for a kill made here (the
   * node that killed them retires their forged tools in the store).
   */
  async function forget(doomed: readonly AgentEntry[], retireTools: boolean): Promise<void> {
    for (const entry of [...doomed].reverse()) {
      capabilities.revoke(entry.id);
      quotas.forget(entry.id);
      ledger.lifetime?.forget(entry.id);
      guard.forget(entry.id);
      registry.remove(entry.id);
      flow.stopTurns(entry, 'kill');
      if (entry.state === 'running') await runHooks(entry, 'kill');
      if (retireTools) await emergent.agentKilled(entry.id);
    }
  }

  /**
   * Brings the agent `agentId` as this kernel holds it in line with the store, after another
   * process changed it: adopted when new, forgotten (with its descendants) when deleted, its state
   * and manifest taken when they changed.
   */
  async function sync(agentId: string, record: AgentRecord | undefined): Promise<void> {
    const held = registry.find(agentId);
    if (record === undefined) {
      if (held !== undefined) await forget(registry.subtree(held), false);
      return;
    }
    const restored = restore(record);
    if (typeof restored === 'string') {
      logger.error({ agentId, problem: restored }, `cannot hold agent "${record.name}" as another node stored it: its manifest is invalid`);
      return;
    }
    if (held === undefined) {
      // A name held here by another agent is one killed elsewhere whose event has not arrived yet.
      const holder = registry.holderOf(record.name);
      const stale = holder === undefined || holder === 'reserved' ? undefined : registry.find(holder);
      if (stale !== undefined && (await store.agents.get(stale.id)) === undefined) await forget(registry.subtree(stale), false);
      if (registry.holderOf(record.name) !== undefined) return;
      await adopt(restored);
      return;
    }
    // Compared whole, not by their times: two nodes may store a change in the same millisecond.
    // Both parsed by the manifest's schema, so in one key order whatever order the store kept (PostgreSQL's jsonb reorders keys).
    if (JSON.stringify(restored.manifest) !== JSON.stringify(held.manifest)) await applyManifest(held, restored.manifest, restored.capabilities, record.updatedAt);
    if (record.state !== held.state) await applyState(held, record.state, record.updatedAt);
    held.updatedAt = record.updatedAt;
  }

  const approvals = new ApprovalService({
    store,
    clock,
    ids,
    ...(dependencies.approvalTimeoutMs === undefined ? {} : { timeoutMs: dependencies.approvalTimeoutMs }),
    publish: (event) => void publish(event),
    node: dependencies.node,
  });
  const principalWorkspace = (name: string): string => dependencies.runtime?.workspaceOf({ name, workspace: undefined }) ?? name;
  const taint = new TaintTracker(dependencies.taint);
  let runner: ToolRunner | undefined;
  // Built on first use: the runner acts through the kernel handle, which needs the kernel.
  const toolRunner = (): ToolRunner => {
    runner ??= createToolRunner({
      tools: dependencies.runtime?.tools ?? [],
      kernel: handle,
      clock,
      logger,
      env: dependencies.runtime?.env ?? {},
      logs: dependencies.runtime?.logs,
      // A principal's grants come with it; an agent's are read live (revoked when it is killed).
      grants: (agent) => (agent.id.startsWith(PRINCIPAL_ID_PREFIX) ? agent.capabilities : capabilities.granted(agent.id)),
      approvals,
      agentTools: (agent) => emergent.toolsFor(agent),
      taint,
      tainted: async ({ agentId, agentName: name, tool, sink, action, source, excerpt }) => {
        await publish({ type: 'tool-tainted', at: clock.now(), agentId, name, tool, sink, action, source: { tool: source.tool, origin: source.origin }, excerpt });
      },
      // Refusals and calls that ran go to the audit log and the live event stream alike.
      audit: async (entry) => {
        const at = clock.now();
        const { agentId, agentName: name, tool, reason } = entry;
        await publish({ type: `tool-${entry.outcome}`, at, agentId, name, agentName: name, tool, outcome: entry.outcome, reason });
      },
      finished: async (entry) => {
        const { agentId, agentName: name, tool, durationMs } = entry;
        await publish({ type: entry.isError ? 'tool-failed' : 'tool-finish', at: clock.now(), agentId, name, tool, durationMs });
      },
    });
    return runner;
  };
  const guard = new AutonomousGuard(clock);
  const flow = createMessageFlow({
    store,
    clock,
    ids,
    logger,
    registry,
    capabilities,
    quotas,
    ledger,
    runtime: dependencies.runtime,
    runner: toolRunner,
    taint,
    publish: (event) => publish(event),
    guard,
    ...(dependencies.runtime?.maxConcurrentModelCalls === undefined ? {} : { modelSlots: new PriorityGate(dependencies.runtime.maxConcurrentModelCalls) }),
    recentFailures: trackRecentFailures(events, clock),
    announce: (event) => events.publish(event),
  });
  // Every turn, whichever door asked for it, leaves a record of how it ended in the audit log.
  const turns = auditTurns(flow, {
    clock,
    agentOf: (reference) => registry.lookup(reference),
    nameOf: (agentId) => registry.find(agentId)?.name,
    publish: (event) => publish(event),
    announce: (event) => events.publish(event),
    logger,
  });

  const resumeParts: ResumeParts = { store, clock, logger, send: (agentId, message, options) => turns.send(agentId, message, options), release: (ids) => approvals.release(ids) };

  const wakeRuns = createWakeRuns({
    store,
    clock,
    ids,
    logger,
    resolve: (reference) => registry.resolve(reference),
    ancestors: (entry) => registry.ancestors(entry),
    // An unattended cycle: [autonomous] caps its tool calls, and suspends an agent idle too long.
    // Its run is recorded as started: its turn is recorded when accepted, so the run's work is not lost to a crash.
    send: (agentId, message, model) => kernel.send(agentId, message, { cycle: true, acknowledged: true, ...(model === undefined ? {} : { model }) }),
    runTool: (agentId, tool, input) => kernel.runAgentTool(agentId, tool, input),
    publish: (event) => publish(event),
    timezone: dependencies.scheduleTimezone,
  });

  /** The model a judge of `role` uses for an agent: its `[emergent]` judge model, else the default model. */
  function judgeModelOf(agentId: string, role: JudgeRole): ModelTarget | undefined {
    return judgeModelFor(registry.find(agentId)?.manifest.emergent, role, dependencies.runtime);
  }

  const emergent: EmergentEngine = createEmergentEngine({
    store,
    clock,
    ids,
    logger,
    agent(agentId) {
      const entry = registry.find(agentId);
      return entry === undefined ? undefined : { id: entry.id, name: entry.name, sessionId: entry.sessionId, emergent: entry.manifest.emergent };
    },
    judgeAvailable: (agentId, role) => dependencies.runtime !== undefined && judgeModelOf(agentId, role) !== undefined,
    async judge(agentId, role, request) {
      const model = judgeModelOf(agentId, role);
      const reply = await flow.callModel(agentId, { step: `judge (${role})`, system: request.system, prompt: request.prompt, schema: VerdictSchema, signal: request.signal, ...(model === undefined ? {} : { model }), ...(request.caller === undefined ? {} : { caller: request.caller }) });
      if (reply.output === undefined) throw new LoomError('JUDGE_NO_VERDICT', 'third-party', 'the judge gave no verdict');
      return reply.output;
    },
    publish: (event) => publish(event),
    toolGrants: () => registry.list().map((entry) => ({ name: entry.name, tools: entry.manifest.capabilities.tools })),
    async requestApproval(agent, input) {
      // Decided by a person, or closed by the approval timeout (or a restart).
      const request = await approvals.open(agent, 'forge_tool', input, new AbortController().signal);
      return { id: request.id, decision: request.decision };
    },
  });

  /**
   * The id an agent's records (usage, audit, forged tools) are kept under: a live agent's, named by
   * id or name, else the reference itself when it is an id (a killed agent's records stay).
   * @throws {AgentNotFoundError} for a name no live agent has.
   */
  function recordedAgentId(reference: string): string {
    return registry.find(reference)?.id ?? (UUID_PATTERN.test(reference) ? reference : registry.resolve(reference).id);
  }

  /** A door acting as an agent: its tools through the runner, exactly as its own calls. */
  function agentToolbox(reference: string, signal: AbortSignal): { agent: ToolAgent; toolbox: ToolBox } {
    const entry = registry.resolve(reference);
    const runtime = dependencies.runtime;
    const workspace = runtime === undefined ? workspaceWithoutRuntime({ name: entry.name, workspace: entry.manifest.workspace }) : runtime.workspaceOf({ name: entry.name, workspace: entry.manifest.workspace });
    const policy = toolPolicyOf(entry, workspace, []);
    const toolbox = toolRunner().toolbox({ agent: policy.agent, filter: policy.filter, settings: policy.settings, signal, approvalRequiredFor: policy.approvalRequiredFor }, ids.uuid(), 'a forged tool');
    return { agent: policy.agent, toolbox };
  }

  /** What a child's manifest is judged by: the host's workspaces, models and file system. */
  function confinementContext(): ConfinementContext {
    const { runtime } = dependencies;
    return {
      workspaceOf: runtime === undefined ? workspaceWithoutRuntime : (agent) => runtime.workspaceOf(agent),
      defaultModel: runtime?.defaultModel,
      tiers: runtime?.tiers,
      aliases: runtime?.aliases,
      now: clock.now(),
      realPath: runtime?.realPath,
    };
  }

  /**
   * What a manifest may hold, for a spawn or an update: a child confined by its parent in every
   * field that gives power (see `confineChild`), an orchestrator's managed agents covered by its
   * `agent_message` grants and the `agent_message` tool granted, an event-log agent granted its
   * log tools.
   */
  function admitManifest(requested: Manifest, parent: AgentEntry | undefined, action: 'spawn' | 'update'): Admitted {
    const { name } = requested;
    const manifest = parent === undefined ? requested : confineChild(parent, requested, confinementContext());
    const granted = capabilitiesFromManifest(manifest.capabilities, manifest.profile);
    // An orchestrator reaches its managed agents only by messages its grants cover.
    const managed = manifest.delegate?.managed_agents ?? manifest.workflow?.managed_agents ?? [];
    const unreachable = managed.filter((agent) => !isGranted(granted, { kind: 'agent_message', pattern: agent }));
    if (unreachable.length > 0) {
      const table = manifest.delegate === undefined ? '[workflow]' : '[delegate]';
      throw new CapabilityDeniedError(`cannot ${action} "${name}": ${table}.managed_agents names ${unreachable.map((agent) => `"${agent}"`).join(', ')}, which its [capabilities].agent_message does not cover; add ${unreachable.map((agent) => `"${agent}"`).join(', ')} to agent_message`);
    }
    // …and sends them its messages as calls of its agent_message tool (0017).
    if (ORCHESTRATOR_MODULES.has(manifest.module) && !isGranted(granted, { kind: 'tool_invoke', pattern: agentMessageTool.name })) {
      throw new CapabilityDeniedError(`cannot ${action} "${name}": a ${manifest.module} agent messages its managed agents with the agent_message tool, which its [capabilities].tools does not grant; add "agent_message" to tools`);
    }
    const code = codeModuleOf(manifest);
    if (code?.kind === 'python') {
      // A script runs as Loom's OS user, not in a sandbox: the power to run its interpreter is granted explicitly.
      const interpreter = codeSettingsOf(manifest).interpreter;
      if (!isGranted(granted, { kind: 'shell_exec', pattern: interpreter })) {
        throw new CapabilityDeniedError(`cannot ${action} "${name}": a python: agent runs its script as a process of Loom's user (not in a sandbox), so it needs [capabilities].shell = [${JSON.stringify(interpreter)}], its interpreter`);
      }
      if (manifest.exec_policy?.allow_shell === false) {
        throw new CapabilityDeniedError(`cannot ${action} "${name}": a python: agent runs a process, and its [exec_policy].allow_shell is false`);
      }
    }
    if (manifest.module === 'builtin:eventlog' && !LOG_TOOLS.some((tool) => isGranted(granted, { kind: 'tool_invoke', pattern: tool.name }))) {
      throw new CapabilityDeniedError(`cannot ${action} "${name}": an event-log agent reads the daemon's log through its log tools, and its [capabilities].tools grants none of them; add tools = ["get_recent_logs", "search_logs*", "get_log_*"]`);
    }
    return { manifest, granted };
  }

  /**
   * `entry`'s children, and theirs, confined again under `manifest` (what `entry` is to hold):
   * those whose manifest that changes, parents first. A child that would exceed it refuses the
   * update, named with its place under `updated` (the agent being updated). What merges (the exec
   * policy, blocklists, approvals) is what the child holds from now on, so tightening a parent
   * tightens the agents it spawned; what the child holds as its own (an allowlist, a token cap or
   * a limit it inherited at its spawn) refuses a parent that would go below it.
   * @throws {CapabilityEscalationError} naming the descendant that would exceed its parent.
   */
  function reconfined(updated: string, entry: AgentEntry, manifest: Manifest, granted: Capability[]): { child: AgentEntry; admitted: Admitted }[] {
    const changed: { child: AgentEntry; admitted: Admitted }[] = [];
    for (const childId of entry.children) {
      const child = registry.find(childId);
      if (child === undefined) continue;
      let admitted: Admitted;
      try {
        admitted = admitManifest(child.manifest, { ...entry, manifest, capabilities: granted }, 'update');
      } catch (error) {
        const which = entry.name === updated ? `its child "${child.name}"` : `its descendant "${child.name}" (a child of "${entry.name}")`;
        throw new CapabilityEscalationError(`cannot update "${updated}": ${which} would then exceed it (${error instanceof Error ? error.message : String(error)}); update or kill the child first`);
      }
      if (!isDeepStrictEqual(admitted.manifest, child.manifest)) changed.push({ child, admitted });
      changed.push(...reconfined(updated, child, admitted.manifest, admitted.granted));
    }
    return changed;
  }

  /** A code agent's module must be there and load before the agent is stored (other agents pass). */
  async function checkCodeModule(manifest: Manifest): Promise<void> {
    if (codeModuleOf(manifest) === undefined) return;
    const modules = dependencies.runtime?.codeModules;
    if (modules === undefined) throw new ModuleUnavailableError(`cannot run agent "${manifest.name}": module "${manifest.module}" is a code module, and this Loom runs none in this process`);
    await modules.check(manifest);
  }

  /**
   * Spawns and updates, one at a time on this node and, with nodes sharing the store, in the
   * installation: a child is judged by its parent's manifest as it is, and an update confines the
   * children there are. Interleaved (each awaits the store), a child spawned while its parent's
   * update ran could keep what the update took away. `fresh` reads again from the store what the
   * work judges by, once no other node can change it: the node heard of other nodes' changes
   * through events, which may not have arrived yet.
   */
  const lineup = createLineup();
  const oneAtATime = <T>(fresh: () => Promise<void>, work: () => Promise<T>): Promise<T> => {
    const { node } = dependencies;
    return lineup(() =>
      node?.exclusive === undefined
        ? work()
        : node.exclusive(async () => {
            await fresh();
            return work();
          }),
    );
  };

  /**
   * What a spawn or an update judges by, read again from the store (see `oneAtATime`): the agent
   * `reference` (a name or an id), a spawn's parent; with `tree`, for an update of it, its parent,
   * itself and every agent below it. Each is taken as stored, adopted, or forgotten.
   */
  async function refresh(reference: string, tree: boolean): Promise<void> {
    const held = registry.lookup(reference);
    if (held !== undefined && !tree) return sync(held.id, await store.agents.get(held.id));
    const records = await store.agents.list();
    const stored = new Map(records.map((record) => [record.id, record]));
    const root = held?.id ?? records.find((record) => record.id === reference || record.name === reference)?.id;
    if (root === undefined) return;
    if (!tree) return sync(root, stored.get(root));
    const children = new Map<string, string[]>();
    for (const record of records) if (record.parentId !== null) children.set(record.parentId, [...(children.get(record.parentId) ?? []), record.id]);
    // Its parent first, which the update is judged by; then it and every agent below it, parents
    // before children, by the store's links (not by creation times, which other nodes' clocks wrote).
    const parentId = stored.get(root)?.parentId ?? held?.parentId ?? null;
    // A set in insertion order: walked while it grows, each agent once.
    const order = new Set(parentId === null ? [root] : [parentId, root]);
    for (const id of order) for (const child of children.get(id) ?? []) if (id !== parentId) order.add(child);
    // Held here but gone from the store (killed on another node): forgotten.
    for (const entry of held === undefined ? [] : registry.subtree(held)) order.add(entry.id);
    for (const id of order) await sync(id, stored.get(id));
  }

  const kernel: Kernel = {
    events,
    capabilities,
    approvals,

    async boot() {
      const report: BootReport = { running: 0, suspended: 0, skipped: [] };
      // Turns the last process stopped in go on (decision 0045): here, at start; where turns are
      // leased (decision 0061), on whichever node takes each over once its lease lapses.
      const journaled = dependencies.resumeBackgroundWork === true ? await store.turns.running() : [];
      const resumes = journaled.length > 0 && dependencies.node?.leasesTurns !== true && !((await dependencies.node?.othersAlive()) ?? false);
      // Before any agent starts: a request no turn waits for could never run its call (those a
      // journaled turn waits on stay, for the node that resumes it).
      const interrupted = await approvals.expireInterrupted(new Set(journaled.flatMap(awaitedApprovals)));
      if (interrupted > 0) logger.info({ approvals: interrupted }, 'closed approval requests left pending by a previous process');
      for (const record of await store.agents.list()) {
        const entry = restore(record);
        if (typeof entry === 'string') {
          report.skipped.push({ id: record.id, name: record.name, problem: entry });
          logger.error({ agentId: record.id, problem: entry }, `cannot restore agent "${record.name}": its stored manifest is invalid`);
          continue;
        }
        registry.add(entry);
        capabilities.grant(entry.id, entry.capabilities);
        report[entry.state] += 1;
      }
      // Stored forged tools, before any agent runs a turn that could call them.
      await emergent.load({ othersAlive: (await dependencies.node?.othersAlive()) ?? false });
      for (const entry of registry.list()) {
        if (entry.state === 'running') await runHooks(entry, 'start');
      }
      if (dependencies.resumeBackgroundWork === true) {
        for (const entry of registry.list()) if (entry.state === 'running') await flow.resumeWork(entry);
        if (resumes) await resumeTurns(resumeParts, journaled);
      }
      logger.debug({ running: report.running, suspended: report.suspended, skipped: report.skipped.length }, 'kernel booted');
      return report;
    },

    update(reference, requested) {
      return oneAtATime(() => refresh(reference, true), async () => {
        const entry = registry.resolve(reference);
        if (requested.name !== entry.name) {
          throw new LoomError('AGENT_RENAME', 'user', `cannot update "${entry.name}" with a manifest for "${requested.name}": an agent's name does not change (spawn a new agent for another name)`);
        }
        const parent = entry.parentId === null ? undefined : registry.find(entry.parentId);
        const { manifest, granted } = admitManifest(requested, parent, 'update');
        await checkCodeModule(manifest);
        // Its children must still fit inside it, and take on what it now restricts, before anything is stored.
        const descendants = reconfined(entry.name, entry, manifest, granted);
        const at = clock.now();
        // The descendants first: each only narrows, so a failure midway leaves none wider than its parent.
        for (const { child, admitted } of descendants) {
          try {
            await holdManifest(child, admitted, at);
          } catch (error) {
            // Killed meanwhile (here or on another node): nothing left to narrow.
            if (!(error instanceof StoreNotFoundError)) throw error;
          }
        }
        await holdManifest(entry, { manifest, granted }, at);
        return viewOf(entry);
      });
    },

    spawn(requested, options = {}) {
      return oneAtATime(async () => {
        if (options.parent !== undefined) await refresh(options.parent, false);
      }, async () => {
        const { name } = requested;
        const holder = registry.holderOf(name);
        if (holder !== undefined) throw new AgentNameTakenError(name, holder === 'reserved' ? undefined : holder);
        const parent = options.parent === undefined ? undefined : registry.resolve(options.parent);
        const admitted = admitManifest(requested, parent, 'spawn');
        const { granted } = admitted;
        const manifest = options.limit === undefined ? admitted.manifest : confineToStep(admitted.manifest, granted, { limit: options.limit, mcpServers: options.limitMcpServers }, confinementContext());
        await checkCodeModule(manifest);
        // Another spawn of the name may have got in while the check waited.
        const taken = registry.holderOf(name);
        if (taken !== undefined) throw new AgentNameTakenError(name, taken === 'reserved' ? undefined : taken);

        const at = clock.now();
        const entry: AgentEntry = {
          id: ids.uuid(),
          name,
          state: 'running',
          parentId: parent?.id ?? null,
          children: new Set(),
          sessionId: ids.uuid(),
          manifest,
          capabilities: granted,
          createdAt: at,
          updatedAt: at,
        };
        // Commit first, register after: a failed commit leaves nothing to undo.
        registry.reserve(name);
        try {
          await store.agents.create(
            {
              id: entry.id,
              name,
              state: entry.state,
              parentId: entry.parentId,
              sessionId: entry.sessionId,
              manifest: manifest as unknown as JsonObject,
              createdAt: at,
              updatedAt: at,
            },
            { id: entry.sessionId, agentId: entry.id, messages: [], createdAt: at, updatedAt: at },
          );
        } catch (error) {
          if (error instanceof StoreConflictError) throw new AgentNameTakenError(name, undefined, { cause: error });
          if (error instanceof StoreNotFoundError && options.parent !== undefined) throw new AgentNotFoundError(options.parent, { cause: error });
          throw error;
        } finally {
          registry.release(name);
        }
        await adopt(entry);
        await publish({ type: 'agent-spawn', at, agentId: entry.id, name, parentId: entry.parentId });
        return viewOf(entry);
      });
    },

    list: () => registry.list().map(viewOf),

    get: (reference) => detailOf(registry.resolve(reference)),

    nameOf: (reference) => registry.resolve(reference).name,

    suspend: (reference) => setState(reference, 'suspended'),

    resume: (reference) => setState(reference, 'running'),

    async kill(reference) {
      const root = registry.resolve(reference);
      const doomed = registry.subtree(root);
      const views = doomed.map(viewOf);
      await store.agents.delete(doomed.map((entry) => entry.id));
      const at = clock.now();
      await forget(doomed, true);
      for (const entry of doomed) {
        await publish({ type: 'agent-kill', at, agentId: entry.id, name: entry.name, reason: entry === root ? 'requested' : 'parent-killed' });
      }
      return views;
    },

    async send(reference, message, options) {
      const result = await turns.send(reference, message, options);
      if (options?.cycle === true) await suspendIfIdle(reference);
      return result;
    },

    runTask: (reference, task, options) => turns.runTask(reference, task, options),

    publish: (event) => publish(event),

    wakeRuns,

    principalTools: (principal) => toolRunner().toolsFor(principalAgent(principal, principalWorkspace), NO_FILTER),

    async runPrincipalTool(principal, toolName, input, signal) {
      const outcome = await toolRunner().run({ toolCallId: ids.uuid(), toolName, input }, { agent: principalAgent(principal, principalWorkspace), filter: NO_FILTER, settings: {}, signal });
      return outcome.result;
    },

    runAgentTool: (agent, toolName, input, signal = AbortSignal.timeout(FORGE_TIMEOUT_MS)) => agentToolbox(agent, signal).toolbox.invoke(toolName, input),

    workflow: (reference) => store.workflows.get(registry.resolve(reference).id),

    async session(reference, options = {}) {
      const entry = registry.resolve(reference);
      const id = options.conversation === undefined ? entry.sessionId : conversationSessionId(entry.id, options.conversation);
      const session = await store.sessions.get(id);
      return { id, conversation: options.conversation ?? null, messages: session?.messages ?? [] };
    },

    async sessions(reference) {
      const entry = registry.resolve(reference);
      return (await store.sessions.listByAgent(entry.id)).map(toSessionSummary);
    },

    async findSession(reference, id) {
      const entry = registry.resolve(reference);
      const session = await store.sessions.get(id);
      return session === undefined || session.agentId !== entry.id ? undefined : toSessionSummary(session);
    },

    async resetSession(reference, options = {}) {
      const entry = registry.resolve(reference);
      const at = clock.now();
      await flow.resetSession(entry, at, options.conversation);
      // Tools forged in a session are the main session's (spec/02's session tier).
      if (options.conversation === undefined) await emergent.sessionEnded(entry.id);
    },

    async audit(options = {}) {
      const { agent, ...query } = options;
      const agentId = agent === undefined ? undefined : recordedAgentId(agent);
      return store.events.list({ ...query, ...(agentId === undefined ? {} : { agentId }), limit: options.limit ?? 500 });
    },

    async usageSeries(options) {
      const { agent, ...range } = options;
      const agentId = agent === undefined ? undefined : recordedAgentId(agent);
      const buckets = await store.usage.series({ ...range, ...(agentId === undefined ? {} : { agentId }) });
      return buckets.map((bucket) => ({ ...bucket, agentName: registry.find(bucket.agentId)?.name ?? null }));
    },

    async usage(options = {}) {
      const agentId = options.agent === undefined ? undefined : recordedAgentId(options.agent);
      const records = await store.usage.list({ ...(agentId === undefined ? {} : { agentId }), ...(options.since === undefined ? {} : { since: options.since }) });
      return summarizeUsage(records, (id) => registry.find(id)?.name);
    },

    // A streamed reply's first event tells its caller the message is taken: the turn is recorded then.
    // Not an A2A task's: a task cut off by a crash is failed at start, its client told to send again
    // (a2a-routes.ts), so resuming its turn too would run the message twice (decision 0045).
    stream: (reference, message, options = {}) => streamRun((emit) => turns.send(reference, message, { ...options, emit, acknowledged: options.door !== 'a2a' })),

    runningTurn: (reference, options = {}) => flow.runningTurn(registry.resolve(reference), options.conversation),

    turnCounts: () => flow.turnCounts(),

    journaledTurns: () => flow.journaledTurns(),

    async resumeTurn(turnId) {
      const record = await store.turns.get(turnId);
      return record?.state === 'running' && (await resumeTurn(resumeParts, record));
    },

    followTurn: (reference, options = {}) => flow.followTurn(registry.resolve(reference), options.conversation, options.after),

    cancelTurn: async (reference, options = {}) => flow.cancelTurn(registry.resolve(reference), options.caller ?? OWNER, options.by ?? 'the owner', options.conversation),

    async shutdown() {
      // First, so that what waits for a person reads as closed by the shutdown (not by its turn's
      // cancellation), and no approval's timeout holds the process once it has stopped.
      const closing = approvals.shutdown();
      for (const entry of registry.list()) {
        // In-flight turns are cancelled; what they did is saved as they unwind.
        flow.stopTurns(entry, 'shutdown');
        if (entry.state === 'running') await runHooks(entry, 'shutdown');
      }
      await closing;
      await flow.idle();
      emergent.close();
    },

    async receive(event) {
      if (AGENT_EVENTS.has(event.type)) await sync(event.agentId as string, await store.agents.get(event.agentId as string));
      if (event.type === 'approval-decide') await approvals.heard(event.approvalId);
      if (FORGED_TOOL_EVENTS.has(event.type) && 'toolId' in event && event.toolId !== null) await emergent.sync(event.toolId);
      events.publish(event);
    },

    async reload() {
      const records = await store.agents.list();
      const stored = new Set(records.map((record) => record.id));
      for (const entry of registry.list()) if (!stored.has(entry.id)) await sync(entry.id, undefined);
      // In spawn order: a parent is held before its children.
      for (const record of records) await sync(record.id, record);
    },

    forgedTools: {
      async list(options = {}) {
        const agentId = options.agent === undefined ? undefined : recordedAgentId(options.agent);
        return emergent.list(agentId === undefined ? {} : { agentId });
      },
      get: (id) => emergent.get(id),
      forge(agent, request, by, signal = AbortSignal.timeout(FORGE_TIMEOUT_MS)) {
        const { agent: toolAgent, toolbox } = agentToolbox(agent, signal);
        return emergent.forge(toolAgent, request, toolbox, { signal, by });
      },
      import(agent, document, by, signal = AbortSignal.timeout(FORGE_TIMEOUT_MS)) {
        const { agent: toolAgent, toolbox } = agentToolbox(agent, signal);
        return emergent.importTool(toolAgent, document, toolbox, { signal, by });
      },
      export: (id) => emergent.exportTool(id),
      promote: (id, by) => emergent.promote(id, by),
      demote: (id, by, reason) => emergent.demote(id, by, reason),
    },
  };

  const handle = createKernelHandle({
    store,
    clock,
    registry,
    capabilities,
    spawn: (text, source, parent, limit, limitMcpServers) =>
      kernel.spawn(parseManifest(text, { source }).manifest, { parent, ...(limit === undefined ? {} : { limit }), ...(limitMcpServers === undefined ? {} : { limitMcpServers }) }),
    kill: (reference) => kernel.kill(reference),
    send: (reference, message, options) => turns.send(reference, message, options),
    generate: async (agentId, prompt, signal, caller) => (await flow.callModel(agentId, { step: 'generate_text', system: GENERATE_TEXT_SYSTEM, prompt, signal, ...(caller === undefined ? {} : { caller }) })).text,
  });

  return kernel;
}
