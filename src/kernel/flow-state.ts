import type { Clock, IdGenerator, Logger, Store } from '../contracts/index.ts';
import type { TaintTracker, ToolRunner } from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { AgentModelCalls } from './agent-model-calls.ts';
import type { RecentFailures } from './agent-health.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { AgentRuntime } from './agent-runtime.ts';
import type { AutonomousGuard } from './autonomous-guard.ts';
import type { BudgetLedger } from './budget-ledger.ts';
import type { CapabilityManager } from './capability-manager.ts';
import type { KernelEvent } from './event-bus.ts';
import type { ModelChoice } from './model-choice.ts';
import type { QuotaTracker } from './quota-tracker.ts';
import type { SessionHistories } from './session-histories.ts';
import type { TurnCommits } from './turn-commit.ts';

/** What the message flow is built from: the kernel's own parts (see `KernelServices`). */
export interface MessageFlowParts {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  registry: AgentRegistry;
  capabilities: CapabilityManager;
  quotas: QuotaTracker;
  /** Every model call of an agent reserves from its budgets here first (see `BudgetLedger`). */
  ledger: BudgetLedger;
  runtime: AgentRuntime | undefined;
  runner: () => ToolRunner;
  /** Taint tracking: a message from outside is labelled untrusted for its turn's tools. */
  taint?: TaintTracker;
  /** Records an event in the audit log and tells subscribers (the kernel's own publish). */
  publish: (event: KernelEvent) => Promise<void>;
  /** Caps the tool calls of unattended cycles (`[autonomous]`). */
  guard?: AutonomousGuard;
  /** The agents whose last turn failed on every model, lately (orchestrators leave them out). */
  recentFailures?: RecentFailures;
  /** Tells subscribers of an event the audit log holds already (one a turn's journal committed). */
  announce: (event: KernelEvent) => void;
  /** The sessions' histories, cached between turns. */
  histories: SessionHistories;
  /** The models a turn may call, and the metered resolver it calls them through. */
  models: ModelChoice;
  /** A turn's first checks, its commit and its usage records. */
  commits: TurnCommits;
  /** The model calls agents' tools make outside turns, held to a task turn's limits (see `AgentModelCalls`). */
  modelCalls: AgentModelCalls;
  /**
   * Set on a cluster (nodes share the store and lease their turns, decision 0061): how this node
   * hears the kernel's events, other nodes' among them, to follow a turn another node runs
   * (`followElsewhere`). A journaled turn then saves its stream with its commits from the start.
   */
  cluster?: {
    /** This node's id, as the journal leases turns to it. */
    nodeId: string;
    subscribe(listener: (event: KernelEvent) => void): () => void;
    /** The node `id` when it runs now, with how it is shown: named to a client asking this node to cancel that node's turn. */
    find(id: string): Promise<{ name: string; url: string | null } | undefined>;
    /** How long a node holds a running turn without renewing its lease (`KernelNode.turnLeaseMs`). */
    leaseMs: number;
  };
}

/**
 * The state every part of the message flow works over (chat turns, task turns, module turns,
 * the workflow runner): the kernel's parts, and what the flow makes once from them. Built by
 * `createMessageFlow`; each part takes it explicitly rather than sharing a closure.
 */
export interface FlowState extends MessageFlowParts {
  /** The message flow's own logger (`component: message-flow`); `parts.logger` is the kernel's. */
  flowLogger: Logger;
  /** An agent's name by id (the id when it is gone). */
  nameOf: (id: string) => string;
  /** The tool runner of an unattended cycle: its tool calls capped by `[autonomous]` (see `AutonomousGuard`). */
  cycleRunner: (entry: AgentEntry) => ToolRunner;
}
