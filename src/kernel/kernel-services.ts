import type { Logger } from '../contracts/index.ts';
import type { ForgingPorts } from '../forged-tools/index.ts';
import { TaintTracker } from '../runtime/index.ts';
import { AgentModelCalls } from './agent-model-calls.ts';
import { AgentRegistry } from './agent-registry.ts';
import { AgentRestorer } from './agent-restorer.ts';
import { ApprovalService } from './approval-service.ts';
import { AutonomousGuard } from './autonomous-guard.ts';
import { BudgetLedger } from './budget-ledger.ts';
import { CapabilityManager } from './capability-manager.ts';
import { auditRecordOf, createEventBus, type EventBus, type KernelEvent } from './event-bus.ts';
import { forgingPorts } from './forged-tools-door.ts';
import type { KernelDependencies } from './kernel-api.ts';
import { LifetimeSpend } from './lifetime-spend.ts';
import { ModelChoice } from './model-choice.ts';
import { PriorityGate } from './priority-gate.ts';
import { QuotaTracker } from './quota-tracker.ts';
import { SessionHistories } from './session-histories.ts';
import { TurnCommits } from './turn-commit.ts';

/**
 * The kernel's first half: what its parts share and what needs no tool runner, built before
 * the kernel proper. The composition root builds the forged-tools engine on its `forging` ports
 * between the two halves, and hands it to `createKernel`.
 */
export interface KernelServices {
  /** What the kernel is built from. */
  dependencies: KernelDependencies;
  /** The kernel's logger (`component: kernel`). */
  logger: Logger;
  registry: AgentRegistry;
  capabilities: CapabilityManager;
  events: EventBus;
  quotas: QuotaTracker;
  /** Every model call of an agent reserves from its budgets here first, and settles after. */
  ledger: BudgetLedger;
  guard: AutonomousGuard;
  taint: TaintTracker;
  approvals: ApprovalService;
  /** The sessions' histories, cached between turns. */
  histories: SessionHistories;
  /** The models a turn may call, and the metered resolver it calls them through. */
  models: ModelChoice;
  /** Reads stored agents back as entries; knows those whose manifest does not validate. */
  restorer: AgentRestorer;
  /** A turn's first checks, its commit and its usage records. */
  commits: TurnCommits;
  /** The model calls agents' tools make outside turns (`generate_text`, forged tools' judges), metered as theirs. */
  modelCalls: AgentModelCalls;
  /** Records the event in the audit log, then tells subscribers. The change itself is already committed. */
  publish: (event: KernelEvent) => Promise<void>;
  /** What the forged-tools engine is built on: the registry, the judges' metered calls, the audit log, approvals. */
  forging: ForgingPorts;
}

/** Builds the kernel's services from its dependencies (see {@link KernelServices}); `createKernel` builds the rest on them. */
export function createKernelServices(dependencies: KernelDependencies): KernelServices {
  const { store, clock, ids, runtime } = dependencies;
  const logger = dependencies.logger.child({ component: 'kernel' });
  const flowLogger = logger.child({ component: 'message-flow' });
  const registry = new AgentRegistry();
  const capabilities = new CapabilityManager();
  const events = createEventBus(logger);
  // On a store other nodes share, a capped family's spending is read from it at each model call, an agent's hour at most once
  // a second per agent and node (decision 0040).
  const shared = dependencies.node?.leasesTurns === true;
  const quotas = new QuotaTracker(clock, store.usage, { shared });
  const lifetime = new LifetimeSpend(store.usage, { shared });
  const ledger = new BudgetLedger(quotas, lifetime);

  async function publish(event: KernelEvent): Promise<void> {
    try {
      await store.events.append(auditRecordOf(event));
    } catch (error) {
      logger.error({ err: error, eventType: event.type, agentId: event.agentId }, 'could not record an event in the audit log');
    }
    events.publish(event);
  }

  const approvals = new ApprovalService({
    store,
    clock,
    ids,
    ...(dependencies.approvalTimeoutMs === undefined ? {} : { timeoutMs: dependencies.approvalTimeoutMs }),
    publish: (event) => void publish(event),
    node: dependencies.node,
  });
  const histories = new SessionHistories(store, clock);
  const modelSlots = runtime?.maxConcurrentModelCalls === undefined ? undefined : new PriorityGate(runtime.maxConcurrentModelCalls);
  const restorer = new AgentRestorer(logger);
  const models = new ModelChoice({ clock, logger, capabilities, registry, restorer, ledger, modelSlots });
  const commits = new TurnCommits({ store, clock, ids, logger: flowLogger, registry, quotas, histories, lifetime });
  const modelCalls = new AgentModelCalls({ registry, capabilities, runtime, clock, logger: flowLogger, models, commits });
  return {
    dependencies,
    logger,
    registry,
    capabilities,
    events,
    quotas,
    ledger,
    guard: new AutonomousGuard(clock),
    taint: new TaintTracker(dependencies.taint),
    approvals,
    histories,
    models,
    restorer,
    commits,
    modelCalls,
    publish,
    forging: forgingPorts({ registry, runtime, modelCalls, approvals, publish }),
  };
}
