import type { ModelMessage } from 'ai';
import { isGranted, tokenCapOf } from '../capabilities/index.ts';
import type { Capability, ToolAgent } from '../contracts/index.ts';
import { AgentNotFoundError, AgentStateError, ModuleUnavailableError, CapabilityDeniedError } from '../errors/index.ts';
import { modelName, type ModelTarget } from '../models/index.ts';
import { type ModelCallUsage, partialOutcomeOf, runAgentLoop, type TurnResult, withStabilityGuidelines } from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import { type AgentRuntime, OWNER } from './agent-runtime.ts';
import { type Budget, spendListener, TokenBudget } from './budget-ledger.ts';
import type { FlowState } from './flow-state.ts';
import { systemPromptOf } from './identity-prompt.ts';
import type { ModelCallRequest, TaskTurn } from './message-flow-contract.ts';
import { contextWindowOf } from './model-choice.ts';
import type { ModuleTurns } from './module-turns.ts';
import { noEvents, type TurnContext } from './open-turn.ts';
import { toolPolicyOf, chainOf } from './tool-policy.ts';
import { finishTurn, resultOf } from './turn-commit.ts';

/**
 * Task turns (a package activity's step: its prompt stands alone, nothing is added to a session,
 * it may run with less than the agent holds), and the model calls an agent's tools make outside
 * any turn (`generate_text`, forged tools' judges), which a task turn's limit and budgets reach.
 */
export class TaskTurns {
  readonly #flow: FlowState;
  readonly #modules: Pick<ModuleTurns, 'createModuleContext'>;
  /** The model of each limited step's turn, by the agent its tools are given (see `#modelWithin`). */
  readonly #stepModels = new WeakMap<ToolAgent, ModelTarget>();
  /** The budgets of a task turn, by the agent its tools are given: the model calls its tools ask for draw from them too. */
  readonly #turnBudgets = new WeakMap<ToolAgent, readonly Budget[]>();

  constructor(flow: FlowState, modules: Pick<ModuleTurns, 'createModuleContext'>) {
    this.#flow = flow;
    this.#modules = modules;
  }

  /**
   * Runs `task` as the agent (see {@link TaskTurn}), its usage recorded as it ends.
   * @throws as a message's turn does; {TokenBudgetExceededError} when it passes its budget.
   */
  async run(turn: TurnContext, task: TaskTurn): Promise<TurnResult> {
    const { clock, capabilities, commits } = this.#flow;
    const { runtime, entry, caller, signal, emit } = turn;
    const runLogger = await commits.begin(entry, emit, 'run its work');
    const workspace = runtime.workspaceOf({ name: entry.name, workspace: entry.manifest.workspace });
    const policy = toolPolicyOf(entry, workspace, chainOf(caller));
    const agent: ToolAgent = task.limit === undefined ? policy.agent : { ...policy.agent, limit: task.limit, ...(task.mcpServers === undefined ? {} : { limitMcpServers: task.mcpServers }) };
    // What the step's tools ask of a model (`generate_text`) goes to the step's model.
    if (task.limit !== undefined && task.model !== undefined) this.#stepModels.set(agent, task.model);
    const runner = this.#flow.runner();
    const tools = runner.toolsFor(agent, policy.filter);
    const { models } = this.#flow.models.choose(runtime, entry, { message: task.prompt, historyDepth: 0, toolCount: tools.length, chosen: task.model });
    const primary = models[0] as ModelTarget;
    const modelConfig = entry.manifest.model;
    const base = await systemPromptOf(runtime, entry.manifest, workspace);
    const budgets: Budget[] = [];
    if (task.tokenBudget !== undefined) budgets.push(new TokenBudget(task.tokenBudget.max, task.tokenBudget.label));
    if (task.onSpend !== undefined) budgets.push(spendListener(task.onSpend));
    this.#turnBudgets.set(agent, budgets);
    let outcome;
    try {
      outcome = await runAgentLoop({
        agent,
        system: withStabilityGuidelines(task.instructions === undefined ? base : `${base}\n\n${task.instructions}`),
        messages: [{ role: 'user', content: task.prompt }],
        cache: modelConfig?.cache !== false,
        models,
        resolver: this.#flow.models.resolver(runtime, entry, budgets),
        runner,
        tools: () => runner.toolsFor(agent, policy.filter),
        settings: policy.settings,
        filter: policy.filter,
        approvalRequiredFor: policy.approvalRequiredFor,
        maxIterations: entry.manifest.resources.max_iterations,
        maxOutputTokens: Math.min(modelConfig?.max_tokens ?? 4096, tokenCapOf(capabilities.granted(entry.id))),
        temperature: modelConfig?.temperature ?? 0.7,
        contextWindowTokens: contextWindowOf(runtime, entry, primary),
        clock,
        logger: runLogger,
        signal,
        emit,
        stream: emit !== noEvents,
        ...(task.tokenBudget === undefined ? {} : { tokenBudget: task.tokenBudget }),
      });
    } catch (error) {
      // What the turn spent before failing is counted (a budget stop included).
      if (commits.isLive(entry)) await commits.record(runtime, entry, partialOutcomeOf(error)?.calls ?? [], runLogger);
      if (signal.aborted && !commits.isLive(entry)) throw new AgentStateError(`agent "${entry.name}" was killed during the turn`, { cause: error });
      throw error;
    }
    const usage = await commits.record(runtime, entry, outcome.calls, runLogger);
    return finishTurn(resultOf(usage, outcome.text, outcome.iterations, modelName(outcome.model)), emit);
  }

  /**
   * One model call as the agent outside its turns (see `MessageFlow.callModel`).
   * @throws {AgentNotFoundError} {AgentStateError} {QuotaExceededError} {CapabilityDeniedError}
   *   {ModuleUnavailableError}, and the model's errors.
   */
  async callModel<T>(agentId: string, request: ModelCallRequest<T>): Promise<{ text: string; output: T | undefined }> {
    const { registry, commits } = this.#flow;
    const entry = registry.find(agentId);
    if (entry === undefined) throw new AgentNotFoundError(agentId);
    const runtime = this.#flow.runtime;
    if (runtime === undefined) throw new ModuleUnavailableError(`agent "${entry.name}" cannot call a model: this kernel has no model runtime`);
    if (entry.state !== 'running') throw new AgentStateError(`agent "${entry.name}" is suspended; resume it to ${request.step}`);
    // Asked by a task turn's tools (a step's `generate_text`, a judge), it draws from that turn's budgets too.
    const budgets = request.caller === undefined ? [] : (this.#turnBudgets.get(request.caller) ?? []);
    const model = request.caller?.limit === undefined ? request.model : this.#modelWithin(runtime, entry, request.caller.limit, request, request.caller);
    const callLogger = this.#flow.flowLogger.child({ agentId: entry.id, step: request.step });
    const calls: ModelCallUsage[] = [];
    const { context } = this.#modules.createModuleContext(runtime, entry, {
      message: request.prompt,
      history: [],
      caller: OWNER,
      signal: request.signal,
      emit: noEvents,
      logger: callLogger,
      onCall: (used) => calls.push(used),
      resolver: this.#flow.models.resolver(runtime, entry, budgets),
      ...(model === undefined ? {} : { model }),
    });
    const messages: ModelMessage[] = [{ role: 'user', content: request.prompt }];
    try {
      if (request.schema === undefined) return { text: await context.generate(request.step, { system: request.system, messages }), output: undefined };
      const output = await context.structured(request.step, request.schema, { system: request.system, messages });
      return { text: JSON.stringify(output), output };
    } finally {
      // Paid for whether or not it answered as asked.
      for (const used of calls) await commits.record(runtime, entry, [used], callLogger);
    }
  }

  /**
   * The model a call limited to `limit` may make: the one it asked for, else the model of the
   * step `caller` runs in, else the first of the agent's own chain; the limit must name it.
   * @throws {CapabilityDeniedError} when the limit names none of them.
   */
  #modelWithin<T>(runtime: AgentRuntime, entry: AgentEntry, limit: readonly Capability[], request: ModelCallRequest<T>, caller: ToolAgent): ModelTarget {
    const step = this.#stepModels.get(caller);
    const candidates = request.model !== undefined ? [request.model] : step !== undefined ? [step] : this.#flow.models.choose(runtime, entry, { message: request.prompt, historyDepth: 0, toolCount: 0 }).models;
    const allowed = candidates.find((model) => isGranted(limit, { kind: 'llm_query', pattern: modelName(model) }));
    if (allowed === undefined) {
      throw new CapabilityDeniedError(`agent "${entry.name}" may not ${request.step} in this step: it would call ${candidates.map((model) => `"${modelName(model)}"`).join(', ')}, and the step is limited to its own model`);
    }
    return allowed;
  }
}
