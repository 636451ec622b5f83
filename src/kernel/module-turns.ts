import type { ModelMessage } from 'ai';
import { isGranted, tokenCapOf } from '../capabilities/index.ts';
import type { Logger, UsageRecord } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';
import type { AgentModule, CatalogEntry, ModuleTurnContext, ModuleTurnOutcome } from '../agent-types/index.ts';
import { codeModuleOf } from '../manifest/index.ts';
import { agentMessageTool } from '../tools/index.ts';
import { modelName, type ModelResolver, type ModelTarget } from '../models/index.ts';
import {
  type AgentEventSink,
  generateReply,
  generateStructured,
  type ModelCallSettings,
  type ModelCallUsage,
  runAgentLoop,
  type ToolCallFailure,
  type ToolRunner,
  type TurnResult,
  withStabilityGuidelines,
} from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import { unhealthyReason } from './agent-health.ts';
import type { AgentRuntime, Caller } from './agent-runtime.ts';
import { delegationError } from './delegation-error.ts';
import type { FlowState } from './flow-state.ts';
import { compactHistory } from './history-compaction.ts';
import { contextWindowOf } from './model-choice.ts';
import type { OpenTurn, SessionTurnContext } from './open-turn.ts';
import { agentSystemPrompt } from './agent-skills.ts';
import { UnloggedSpend } from './shared-totals.ts';
import { defaultSystemPrompt } from './system-prompt.ts';
import { chainOf, type ToolPolicy, toolPolicyOf } from './tool-policy.ts';
import { endingOf, finishTurn, resultOf } from './turn-commit.ts';
import { TurnTrace, withoutMetadata } from './turn-record.ts';

/**
 * The turns of agent types with their own steps (delegate, chain of thought, workflow, code
 * modules): the module decides the steps; this gives it the agent's models (usage counted, every
 * call metered by the budget ledger), its catalog, a way to message other agents as itself, the agent loop with its tools
 * and the audit log, and saves what the module returns after the user's message.
 */

/** The tool every message an orchestrating agent type sends goes through. */
const AGENT_MESSAGE = agentMessageTool.name;

/** What a module's context is made for: a turn's message and history, or work outside a turn. */
export interface ModuleTurnInput {
  message: string;
  history: readonly ModelMessage[];
  caller: Caller;
  signal: AbortSignal;
  emit: AgentEventSink;
  logger: Logger;
  /** Receives each model call's usage as it answers. */
  onCall: (call: ModelCallUsage) => void;
  /** The model to call instead of the agent's own chain; refused unless the agent may call it. */
  model?: ModelTarget;
  /** What every model call resolves its model through: metered by the budget ledger (see `ModelChoice.resolver`). */
  resolver: ModelResolver;
  /** The agent's system prompt, when read already (identity files); its manifest's otherwise. */
  system?: string;
  /** The tool runner of this turn, when it is not the kernel's own (an unattended cycle's is capped). */
  runner?: ToolRunner;
}

/** The module turns, as the message flow calls them. */
export interface ModuleTurns {
  /** A module's context for a turn or for work outside one (see `createModuleContext` below), and the turn's primary model. */
  createModuleContext: (runtime: AgentRuntime, entry: AgentEntry, turn: ModuleTurnInput) => { context: ModuleTurnContext; primary: () => ModelTarget };
  /** Runs a turn on `module` and commits it to the turn's place (see `runModuleTurn` below). */
  runModuleTurn: (turn: SessionTurnContext, module: AgentModule) => Promise<TurnResult>;
}

/** Builds the module turns of a message flow over its state (see `FlowState`); it makes them once. */
export function createModuleTurns(flow: FlowState): ModuleTurns {
  const { clock, registry, capabilities, histories, nameOf, commits } = flow;

  /**
   * What an agent type's module works with (see `ModuleTurnContext`): the agent's models, each
   * call handed to `onCall` (a turn saves them at its end; background work records them at once),
   * its catalog, delegation as itself, the agent loop with its tools, the audit log.
   */
  function createModuleContext(runtime: AgentRuntime, entry: AgentEntry, turn: ModuleTurnInput): { context: ModuleTurnContext; primary: () => ModelTarget } {
    const { caller, signal, emit, onCall } = turn;
    // Chosen at the first model call: a code agent may make none, and need no model at all.
    let chosen: ModelTarget[] | undefined;
    const modelsOfTurn = (): ModelTarget[] =>
      (chosen ??= flow.models.choose(runtime, entry, { message: turn.message, historyDepth: turn.history.length, toolCount: 0, chosen: turn.model }).models);
    const primary = (): ModelTarget => modelsOfTurn()[0] as ModelTarget;
    const modelConfig = entry.manifest.model;
    const maxOutputTokens = Math.min(modelConfig?.max_tokens ?? 4096, tokenCapOf(capabilities.granted(entry.id)));
    const runnerOfTurn = (): ToolRunner => turn.runner ?? flow.runner();
    const policyOfTurn = (): ToolPolicy => toolPolicyOf(entry, runtime.workspaceOf({ name: entry.name, workspace: entry.manifest.workspace }), chainOf(caller));
    // Each call of the module's own steps is made by the runtime, on the turn's primary model.
    const callSettings = (): ModelCallSettings => ({
      resolver: turn.resolver,
      model: primary(),
      clock,
      signal,
      onCall,
      maxOutputTokens,
      temperature: modelConfig?.temperature ?? 0.7,
    });
    /** One tool call as the agent through the tool runner (every gate), shown as the turn's `tool-call` and `tool-result` events. */
    const runTool = async (
      name: string,
      input: Record<string, unknown>,
      settings: ToolPolicy['settings'],
    ): Promise<{ text: string; isError: boolean; failure?: ToolCallFailure | undefined }> => {
      const policy = policyOfTurn();
      const toolCallId = flow.ids.uuid();
      emit({ type: 'tool-call', toolCallId, toolName: name, input });
      const { result, failure } = await runnerOfTurn().run(
        { toolCallId, toolName: name, input },
        { agent: policy.agent, filter: policy.filter, settings, approvalRequiredFor: policy.approvalRequiredFor, signal, emit },
      );
      const isError = result.isError === true;
      emit({ type: 'tool-result', toolCallId, toolName: name, text: result.text, isError });
      return { text: result.text, isError, failure };
    };
    const context: ModuleTurnContext = {
      agent: { id: entry.id, name: entry.name, manifest: entry.manifest },
      message: turn.message,
      caller:
        caller.kind === 'agent'
          ? { kind: 'agent', id: caller.agentId, name: nameOf(caller.agentId) }
          : { kind: 'user', role: caller.role, ...(caller.name === undefined ? {} : { name: caller.name }) },
      history: turn.history,
      system: turn.system ?? modelConfig?.system_prompt ?? defaultSystemPrompt(entry.manifest),
      signal,
      emit,
      clock,
      logger: turn.logger,
      structured: (step, schema, request) => generateStructured(callSettings(), request, schema, `agent "${entry.name}", step "${step}"`),
      generate: (_step, request) => generateReply(callSettings(), request),
      callTool: (name, input) => runTool(name, input, policyOfTurn().settings),
      async act(_step, request) {
        const policy = policyOfTurn();
        const models = modelsOfTurn();
        const runner = runnerOfTurn();
        const outcome = await runAgentLoop({
          agent: policy.agent,
          system: withStabilityGuidelines(request.system),
          messages: request.messages,
          models,
          resolver: turn.resolver,
          runner,
          tools: () => runner.toolsFor(policy.agent, policy.filter),
          settings: policy.settings,
          filter: policy.filter,
          approvalRequiredFor: policy.approvalRequiredFor,
          maxIterations: entry.manifest.resources.max_iterations,
          maxOutputTokens,
          temperature: modelConfig?.temperature ?? 0.7,
          contextWindowTokens: contextWindowOf(runtime, entry, primary()),
          clock,
          logger: turn.logger,
          signal,
          emit,
          stream: false,
          // Each call counts as it answers, whether or not the loop gets to the end.
          onModelCall: onCall,
        });
        return outcome.text;
      },
      report: (event) => flow.publish({ ...event, at: clock.now(), agentId: entry.id, name: entry.name }),
      async catalog(names) {
        const granted = capabilities.granted(entry.id);
        const wanted =
          names.length > 0
            ? names
            : registry
                .list()
                .filter((other) => other.id !== entry.id)
                .map((other) => other.name);
        const available: CatalogEntry[] = [];
        const leftOut: { name: string; reason: string }[] = [];
        const health = {
          defaultModel: runtime.defaultModel,
          env: runtime.env,
          recentFailures: flow.recentFailures,
          probes: new Map<string, Promise<boolean>>(),
        };
        for (const name of wanted) {
          const other = registry.find(name) ?? registry.list().find((candidate) => candidate.name === name);
          if (other === undefined) leftOut.push({ name, reason: 'no such agent' });
          else if (other.id === entry.id) leftOut.push({ name, reason: 'itself' });
          else if (other.state !== 'running') leftOut.push({ name, reason: 'suspended' });
          else if (!isGranted(granted, { kind: 'agent_message', pattern: other.name }))
            leftOut.push({ name, reason: 'not covered by its agent_message grants' });
          else {
            const unhealthy = await unhealthyReason(other, health);
            if (unhealthy === undefined) available.push({ name: other.name, description: other.manifest.description });
            else leftOut.push({ name, reason: unhealthy });
          }
        }
        return { available, leftOut };
      },
      async delegate(target, text, timeoutMs) {
        // A delegation is the agent's own agent_message call, through every gate of the tool
        // runner (0017). Its time limit is the call's: it runs from when the call may run (after a
        // person's approval), and an explicit [tools.agent_message].timeout_seconds bounds it too.
        const settings = policyOfTurn().settings;
        const own = settings[AGENT_MESSAGE]?.['timeout_seconds'];
        const seconds = typeof own === 'number' ? Math.min(own, timeoutMs / 1000) : timeoutMs / 1000;
        const outcome = await runTool(
          AGENT_MESSAGE,
          { target_agent_name: target, message: text },
          { ...settings, [AGENT_MESSAGE]: { ...settings[AGENT_MESSAGE], timeout_seconds: seconds } },
        );
        if (!outcome.isError) return outcome.text;
        signal.throwIfAborted();
        throw delegationError(target, outcome, seconds);
      },
    };
    return { context, primary };
  }

  /**
   * A turn of an agent type with its own steps (delegate, chain of thought, workflow): the module
   * decides them, with what `createModuleContext` gives it; what it returns is saved after the
   * user's message, with the usage of every call.
   */
  async function runModuleTurn(turnContext: SessionTurnContext, module: AgentModule): Promise<TurnResult> {
    const { runtime, entry, message, caller, signal, place } = turnContext;
    const trace = new TurnTrace(clock);
    const emit = trace.sink(turnContext.emit);
    const runLogger = await commits.begin(entry, emit, 'send it messages', place.journal?.turnId);
    const base = await histories.load(place.sessionId);
    const calls: ModelCallUsage[] = [];
    const userMessage: ModelMessage = { role: 'user', content: message };
    const spend = new UnloggedSpend();
    const resolver = flow.models.resolver(runtime, entry, spend);
    const turn: OpenTurn = { runtime, entry, place, base, userMessage, trace, logger: runLogger, spend };
    // Recorded when it was accepted, and its daemon stopped in it: its steps are not journaled, so
    // it is not resumed; its message is kept, with a record that says so (decision 0045).
    if (place.journal?.record !== undefined) {
      const reason = interruptedReason(entry.manifest.module);
      runLogger.warn({ turnId: place.journal.turnId }, `a turn of agent "${entry.name}" was interrupted and is not resumed: ${reason}`);
      await commits.commit(turn, [...base.messages, userMessage], [], { status: 'failed', reason }, null);
      throw new LoomError('TURN_INTERRUPTED', 'system', `the turn of agent "${entry.name}" was interrupted: ${reason}`);
    }
    // A code agent gets its session as stored (without Loom's own metadata): summarising it would
    // need a model it may not have.
    const history =
      codeModuleOf(entry.manifest) !== undefined
        ? withoutMetadata(base.messages)
        : (
            await compactHistory([...base.messages, userMessage], {
              runtime,
              entry,
              clock,
              model: flow.models.choose(runtime, entry, { message, historyDepth: base.messages.length, toolCount: 0 }).models[0] as ModelTarget,
              resolver,
              signal,
              emit,
              logger: runLogger,
              calls,
            })
          ).slice(0, -1);
    for (const used of calls) trace.model(used);
    const onCall = (used: ModelCallUsage): void => {
      calls.push(used);
      trace.model(used);
    };
    const system = await agentSystemPrompt(runtime, entry.manifest, runtime.workspaceOf({ name: entry.name, workspace: entry.manifest.workspace }));
    const runner = place.cycle === true ? flow.cycleRunner(entry) : undefined;
    const { context, primary } = createModuleContext(runtime, entry, {
      message,
      history,
      caller,
      signal,
      emit,
      logger: runLogger,
      onCall,
      resolver,
      system,
      ...(runner === undefined ? {} : { runner }),
    });
    let outcome: ModuleTurnOutcome;
    try {
      outcome = await module(context);
    } catch (error) {
      // The request was accepted and models were paid for: both are kept (a killed agent's, its usage alone).
      if (commits.isLive(entry)) await commits.commit(turn, [...history, userMessage], calls, endingOf(error, signal), null);
      else await commits.record(runtime, entry, calls, runLogger, spend);
      throw commits.unwound(entry, error, signal);
    }
    // A code agent that called no model answers as its module.
    const model = calls[0]?.model ?? (codeModuleOf(entry.manifest) === undefined ? primary() : undefined);
    const answeredBy = model === undefined ? entry.manifest.module : modelName(model);
    const result = (usage: readonly UsageRecord[]): TurnResult => resultOf(usage, outcome.text, calls.length, answeredBy);
    const usage = await commits.commit(turn, [...history, userMessage, ...outcome.messages], calls, { status: 'finished' }, answeredBy, { result });
    return finishTurn(result(usage), emit);
  }

  return { createModuleContext, runModuleTurn };
}

/** Why a turn of an agent of type `module` (not the assistant loop) its daemon stopped in is not resumed. */
export function interruptedReason(module: string): string {
  return `the daemon stopped during this turn, and a turn of a ${module} agent is not resumed (its steps are not journaled); what it did before is not known — send the message again`;
}
