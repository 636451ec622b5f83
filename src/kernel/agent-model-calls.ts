import type { ModelMessage } from 'ai';
import { isGranted, tokenCapOf } from '../capabilities/index.ts';
import type { Capability, Clock, Logger, ToolAgent } from '../contracts/index.ts';
import { AgentNotFoundError, AgentStateError, CapabilityDeniedError, ModuleUnavailableError } from '../errors/index.ts';
import { modelName, type ModelTarget } from '../models/index.ts';
import { generateReply, generateStructured, type ModelCallSettings, type ModelCallUsage } from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { AgentRuntime } from './agent-runtime.ts';
import type { Budget } from './budget-ledger.ts';
import type { CapabilityManager } from './capability-manager.ts';
import type { ModelCallRequest } from './message-flow-contract.ts';
import type { ModelChoice } from './model-choice.ts';
import { UnloggedSpend } from './shared-totals.ts';
import type { TurnCommits } from './turn-commit.ts';

/** What {@link AgentModelCalls} is built from. */
export interface AgentModelCallParts {
  registry: Pick<AgentRegistry, 'find'>;
  capabilities: Pick<CapabilityManager, 'granted'>;
  runtime: AgentRuntime | undefined;
  clock: Clock;
  /** The message flow's logger: each call's logger is its child, with the agent and the step. */
  logger: Logger;
  /** The models an agent may call, and the metered resolver its calls go through. */
  models: Pick<ModelChoice, 'choose' | 'resolver'>;
  /** Prices each call and records its usage. */
  commits: Pick<TurnCommits, 'record'>;
}

/** What a task turn holds the model calls of its tools to: its step's model (when limited), its budgets. */
export interface TurnLimits {
  model?: ModelTarget | undefined;
  budgets: readonly Budget[];
}

/**
 * The model calls an agent's tools make outside any turn (`generate_text`, forged tools'
 * judges), metered as the agent's own: its models and `llm_query` grants, its budgets, its usage.
 * Built before the message flow and the forged-tools engine, which both call through it; a task
 * turn's limit and budgets reach the calls its tools make (see {@link AgentModelCalls.hold}).
 */
export class AgentModelCalls {
  readonly #parts: AgentModelCallParts;
  /** The model of each limited step's turn, by the agent its tools are given (see `#modelWithin`). */
  readonly #stepModels = new WeakMap<ToolAgent, ModelTarget>();
  /** The budgets of a task turn, by the agent its tools are given: the model calls its tools ask for draw from them too. */
  readonly #turnBudgets = new WeakMap<ToolAgent, readonly Budget[]>();

  constructor(parts: AgentModelCallParts) {
    this.#parts = parts;
  }

  /** Holds the model calls of the tools given `agent` (a task turn's) to that turn's limits. */
  hold(agent: ToolAgent, limits: TurnLimits): void {
    if (limits.model !== undefined) this.#stepModels.set(agent, limits.model);
    this.#turnBudgets.set(agent, limits.budgets);
  }

  /**
   * One model call as the agent outside its turns (see `MessageFlow.callModel`).
   * @throws {AgentNotFoundError} {AgentStateError} {QuotaExceededError} {CapabilityDeniedError}
   *   {ModuleUnavailableError}, and the model's errors.
   */
  async call<T>(agentId: string, request: ModelCallRequest<T>): Promise<{ text: string; output: T | undefined }> {
    const { registry, commits, models, capabilities, clock } = this.#parts;
    const entry = registry.find(agentId);
    if (entry === undefined) throw new AgentNotFoundError(agentId);
    const runtime = this.#parts.runtime;
    if (runtime === undefined) throw new ModuleUnavailableError(`agent "${entry.name}" cannot call a model: this kernel has no model runtime`);
    if (entry.state !== 'running') throw new AgentStateError(`agent "${entry.name}" is suspended; resume it to ${request.step}`);
    // Asked by a task turn's tools (a step's `generate_text`, a judge), it draws from that turn's budgets too.
    const budgets = request.caller === undefined ? [] : (this.#turnBudgets.get(request.caller) ?? []);
    const model = request.caller?.limit === undefined ? request.model : this.#modelWithin(runtime, entry, request);
    const callLogger = this.#parts.logger.child({ agentId: entry.id, step: request.step });
    const calls: ModelCallUsage[] = [];
    const modelConfig = entry.manifest.model;
    const maxOutputTokens = Math.min(modelConfig?.max_tokens ?? 4096, tokenCapOf(capabilities.granted(entry.id)));
    const spend = new UnloggedSpend();
    const resolver = models.resolver(runtime, entry, spend, budgets);
    // On the agent's primary model (or the one asked for), chosen when the call is made.
    const settings = (): ModelCallSettings => ({
      resolver,
      model: models.choose(runtime, entry, { message: request.prompt, historyDepth: 0, toolCount: 0, chosen: model }).models[0] as ModelTarget,
      clock,
      signal: request.signal,
      onCall: (used) => calls.push(used),
      maxOutputTokens,
      temperature: modelConfig?.temperature ?? 0.7,
    });
    const messages: ModelMessage[] = [{ role: 'user', content: request.prompt }];
    try {
      if (request.schema === undefined) return { text: await generateReply(settings(), { system: request.system, messages }), output: undefined };
      const output = await generateStructured(
        settings(),
        { system: request.system, messages },
        request.schema,
        `agent "${entry.name}", step "${request.step}"`,
      );
      return { text: JSON.stringify(output), output };
    } finally {
      // Paid for whether or not it answered as asked.
      await commits.record(runtime, entry, calls, callLogger, spend);
    }
  }

  /**
   * The model a call whose caller is limited (`request.caller.limit`) may make: the one it asked
   * for, else the model of the step the caller runs in, else the first of the agent's own chain;
   * the limit must name it.
   * @throws {CapabilityDeniedError} when the limit names none of them.
   */
  #modelWithin<T>(runtime: AgentRuntime, entry: AgentEntry, request: ModelCallRequest<T>): ModelTarget {
    const { caller } = request;
    const limit: readonly Capability[] = caller?.limit ?? [];
    const step = caller === undefined ? undefined : this.#stepModels.get(caller);
    const candidates =
      request.model !== undefined
        ? [request.model]
        : step !== undefined
          ? [step]
          : this.#parts.models.choose(runtime, entry, { message: request.prompt, historyDepth: 0, toolCount: 0 }).models;
    const allowed = candidates.find((model) => isGranted(limit, { kind: 'llm_query', pattern: modelName(model) }));
    if (allowed === undefined) {
      throw new CapabilityDeniedError(
        `agent "${entry.name}" may not ${request.step} in this step: it would call ${candidates.map((model) => `"${modelName(model)}"`).join(', ')}, and the step is limited to its own model`,
      );
    }
    return allowed;
  }
}
