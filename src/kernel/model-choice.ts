import { isGranted } from '../capabilities/index.ts';
import type { Clock, Logger } from '../contracts/index.ts';
import { CapabilityDeniedError, ModuleUnavailableError } from '../errors/index.ts';
import { namedModel } from '../manifest/index.ts';
import { modelName, type ModelResolver, type ModelTarget, pickTier, scoreComplexity } from '../models/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import { lifetimeBudgets, slottedResolver, timeLimitedResolver } from './agent-call-limits.ts';
import { type AgentRuntime, DEFAULT_CONTEXT_WINDOW_TOKENS } from './agent-runtime.ts';
import type { Budget, BudgetLedger } from './budget-ledger.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { AgentRestorer } from './agent-restorer.ts';
import type { CapabilityManager } from './capability-manager.ts';
import { fallbackChain, manifestModels } from './model-targets.ts';
import type { PriorityGate } from './priority-gate.ts';
import type { UnloggedSpend } from './shared-totals.ts';

/** What {@link ModelChoice} is built from. */
export interface ModelChoiceParts {
  clock: Clock;
  /** The kernel's logger: a model slot's waits are logged under the agent. */
  logger: Logger;
  capabilities: Pick<CapabilityManager, 'granted'>;
  /** Whether an agent's ancestor is held here: a call draws from their lifetime caps too, and a cap not held is not known. */
  registry: Pick<AgentRegistry, 'find'>;
  /** What is known of the cap of an ancestor not held here: read from its stored record when its manifest did not validate. */
  restorer: Pick<AgentRestorer, 'unheld'>;
  ledger: BudgetLedger;
  /** The daemon's model-call slots, handed out by agents' `priority`; none: no limit. */
  modelSlots?: PriorityGate | undefined;
}

/** What a turn asks a model for, as the choice of its models reads it. */
export interface ModelQuestion {
  message: string;
  /** How many messages the session holds before this one (routing scores a long history higher). */
  historyDepth: number;
  /** How many tools the turn offers. */
  toolCount: number;
  /** The model the turn was asked to run on instead of the manifest's (a task's, a wake-up's). */
  chosen?: ModelTarget | undefined;
}

/**
 * Which models an agent's turn may call, in order (its manifest's chain, routing, `llm_query`
 * grants), and the resolver its calls go through: metered by the budget ledger, within the
 * agent's lifetime cap, its per-call time limit and its place in the queue for a model slot.
 */
export class ModelChoice {
  readonly #parts: ModelChoiceParts;

  constructor(parts: ModelChoiceParts) {
    this.#parts = parts;
  }

  /**
   * The models to try, in order. With `llm_query` grants, every model must match one (others
   * are dropped, and none left is a refusal); without any, the manifest's own choice stands.
   * @throws {CapabilityDeniedError} when no model is granted; {ModuleUnavailableError} when the agent has none.
   */
  choose(runtime: AgentRuntime, entry: AgentEntry, question: ModelQuestion): { models: ModelTarget[]; tier?: string } {
    const { capabilities } = this.#parts;
    const { manifest } = entry;
    const { chosen } = question;
    const primary = namedModel(manifest.model) ?? runtime.defaultModel;
    const own = fallbackChain(manifest, runtime).map(({ target }) => target);
    if (chosen !== undefined) {
      // A task's model: granted by llm_query, or without any grants one the manifest chose.
      const granted = capabilities.granted(entry.id);
      const allowed = granted.some((capability) => capability.kind === 'llm_query')
        ? isGranted(granted, { kind: 'llm_query', pattern: modelName(chosen) })
        : manifestModels(manifest, runtime).some(({ target }) => modelName(target) === modelName(chosen));
      if (!allowed)
        throw new CapabilityDeniedError(
          `agent "${entry.name}" may not call model "${modelName(chosen)}": grant it [capabilities].llm_query "${modelName(chosen)}"`,
        );
      return { models: [chosen] };
    }
    if (primary === undefined) {
      throw new ModuleUnavailableError(
        `agent "${manifest.name}" has no [model] and no default model is configured; add [model] to its manifest or [default_model] to config.toml (\`loom init\` sets one, and a running daemon takes it up)`,
      );
    }
    let chain = own;
    let routed: { tier: string; model: ModelTarget } | undefined;
    if (manifest.routing?.enabled === true && runtime.tiers !== undefined) {
      const tier = pickTier(
        scoreComplexity({ messageText: question.message, toolCount: question.toolCount, historyDepth: question.historyDepth }),
        manifest.routing,
      );
      const model = runtime.tiers[tier];
      if (model !== undefined) {
        chain = [model, ...chain];
        routed = { tier, model };
      }
    }
    const granted = capabilities.granted(entry.id);
    if (granted.some((capability) => capability.kind === 'llm_query')) {
      const allowed = chain.filter((model) => isGranted(granted, { kind: 'llm_query', pattern: modelName(model) }));
      if (allowed.length === 0) {
        throw new CapabilityDeniedError(
          `agent "${entry.name}" is not granted [capabilities].llm_query for ${chain.map((model) => `"${modelName(model)}"`).join(', ')}`,
        );
      }
      chain = allowed;
    }
    return routed !== undefined && chain[0] === routed.model ? { models: chain, tier: routed.tier } : { models: chain };
  }

  /**
   * The resolver an agent's work calls models through: each call reserves from the agent's hourly
   * quota and from `budgets` first, and settles with what it spent (see `BudgetLedger.meter`), within
   * the agent's lifetime cap, its per-call time limit and its place in the queue for a model slot.
   * On a store other nodes share, what the calls spend counts in `work` until the work writes it to
   * the usage log or ends (see `UnloggedSpend`): one per piece of work, ended by it.
   */
  resolver(runtime: AgentRuntime, entry: AgentEntry, work: UnloggedSpend, budgets: readonly Budget[] = []): ModelResolver {
    const { ledger, clock, capabilities } = this.#parts;
    const { resources } = entry.manifest;
    return ledger.meter(
      slottedResolver(
        timeLimitedResolver(runtime.resolver, entry.manifest, clock),
        entry.manifest,
        this.#parts.modelSlots,
        this.#parts.logger.child({ agentId: entry.id }),
      ),
      {
        budgets: [
          ledger.hourly(entry.id, entry.name, { maxTokensPerHour: resources.max_tokens_per_hour, maxCostPerHour: resources.max_cost_per_hour }, work),
          ...lifetimeBudgets(
            ledger,
            entry,
            (agentId) => (this.#parts.registry.find(agentId) === undefined ? undefined : capabilities.granted(agentId)),
            (agentId) => this.#parts.restorer.unheld(agentId),
            work,
          ),
          ...budgets,
        ],
        price: (target, usage) => runtime.costs.estimateCost(target.provider, target.model, usage).costUsd,
      },
    );
  }
}

/** The context window a turn plans for: the agent's `[compaction].max_context_tokens`, else the model's. */
export function contextWindowOf(runtime: AgentRuntime, entry: AgentEntry, model: ModelTarget): number {
  return entry.manifest.compaction.max_context_tokens ?? runtime.contextWindowTokens?.(model) ?? DEFAULT_CONTEXT_WINDOW_TOKENS;
}
