import { tokenCapOf } from '../capabilities/index.ts';
import type { ToolAgent } from '../contracts/index.ts';
import { modelName, type ModelTarget } from '../models/index.ts';
import { partialOutcomeOf, runAgentLoop, type TurnResult, withStabilityGuidelines } from '../runtime/index.ts';
import { type Budget, spendListener, TokenBudget } from './budget-ledger.ts';
import type { FlowState } from './flow-state.ts';
import { systemPromptOf } from './identity-prompt.ts';
import type { TaskTurn } from './message-flow-contract.ts';
import { contextWindowOf } from './model-choice.ts';
import { noEvents, type TurnContext } from './open-turn.ts';
import { UnloggedSpend } from './shared-totals.ts';
import { toolPolicyOf, chainOf } from './tool-policy.ts';
import { finishTurn, killedDuringTurn, resultOf } from './turn-commit.ts';

/**
 * Task turns (a package activity's step: its prompt stands alone, nothing is added to a session,
 * it may run with less than the agent holds). The model calls its tools make outside the turn
 * (`generate_text`, forged tools' judges) are held to its limit and budgets (`AgentModelCalls`).
 */
export class TaskTurns {
  readonly #flow: FlowState;

  constructor(flow: FlowState) {
    this.#flow = flow;
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
    const agent: ToolAgent =
      task.limit === undefined
        ? policy.agent
        : { ...policy.agent, limit: task.limit, ...(task.mcpServers === undefined ? {} : { limitMcpServers: task.mcpServers }) };
    const runner = this.#flow.runner();
    const tools = runner.toolsFor(agent, policy.filter);
    const { models } = this.#flow.models.choose(runtime, entry, { message: task.prompt, historyDepth: 0, toolCount: tools.length, chosen: task.model });
    const primary = models[0] as ModelTarget;
    const modelConfig = entry.manifest.model;
    const base = await systemPromptOf(runtime, entry.manifest, workspace);
    const budgets: Budget[] = [];
    if (task.tokenBudget !== undefined) budgets.push(new TokenBudget(task.tokenBudget.max, task.tokenBudget.label));
    if (task.onSpend !== undefined) budgets.push(spendListener(task.onSpend));
    // What the step's tools ask of a model (`generate_text`, a judge) goes to the step's model, and draws from these budgets too.
    this.#flow.modelCalls.hold(agent, { model: task.limit === undefined ? undefined : task.model, budgets });
    const spend = new UnloggedSpend();
    let outcome;
    try {
      outcome = await runAgentLoop({
        agent,
        system: withStabilityGuidelines(task.instructions === undefined ? base : `${base}\n\n${task.instructions}`),
        messages: [{ role: 'user', content: task.prompt }],
        cache: modelConfig?.cache !== false,
        models,
        resolver: this.#flow.models.resolver(runtime, entry, spend, budgets),
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
      // What the turn spent before failing is counted (a budget stop included; a killed agent's too, against its ancestors' caps).
      await commits.record(runtime, entry, partialOutcomeOf(error)?.calls ?? [], runLogger, spend);
      if (signal.aborted && !commits.isLive(entry)) throw killedDuringTurn(entry, error);
      throw error;
    }
    const usage = await commits.record(runtime, entry, outcome.calls, runLogger, spend);
    return finishTurn(resultOf(usage, outcome.text, outcome.iterations, modelName(outcome.model)), emit);
  }
}
