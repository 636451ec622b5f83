import type { ModelMessage } from 'ai';
import { isGranted, matchesPattern, tokenCapOf } from '../capabilities/index.ts';
import type { Capability, Clock, IdGenerator, JsonObject, JsonValue, Logger, Store, ToolAgent, TurnJournalOpen, TurnJournalRecord, UsageRecord, WorkflowRecord } from '../contracts/index.ts';
import {
  AccessDeniedError,
  AgentChainError,
  AgentNotFoundError,
  AgentStateError,
  CapabilityDeniedError,
  isLoomError,
  LoomError,
  ModuleUnavailableError,
  StoreConflictError,
  TurnCancelledError,
  TurnNotRunningError,
} from '../errors/index.ts';
import { type AgentModule, codeAgentModule, executeWorkflow, runChainOfThought, runDelegate, type WorkflowPort, workflowModule } from '../agents/index.ts';
import { codeModuleOf, namedModel } from '../manifest/index.ts';
import { LOG_TOOLS } from '../tools/index.ts';
import { modelName, type ModelResolver, type ModelTarget, pickTier, scoreComplexity } from '../models/index.ts';
import {
  type AgentEventSink,
  compactSession,
  type KnownTokens,
  linkAbort,
  type ModelCallUsage,
  partialOutcomeOf,
  runAgentLoop,
  summarizeMessages,
  SUMMARY_PREFIX,
  type TaintTracker,
  type ToolRunner,
  type TurnResult,
  withStabilityGuidelines,
} from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { RecentFailures } from './agent-health.ts';
import { auditRecordOf, type KernelEvent } from './event-bus.ts';
import { type JournalPlace, outcomeRecord, requestRecord, resumeOf, savedStreamOf, TurnJournalWriter } from './turn-journal.ts';
import type { MessageFlow, ModelCallRequest, SendOptions, TaskTurn, TurnSeal } from './message-flow-contract.ts';
import type { AgentRegistry } from './agent-registry.ts';
import { type AgentRuntime, type Caller, DEFAULT_CONTEXT_WINDOW_TOKENS, MAX_AGENT_DEPTH, OWNER } from './agent-runtime.ts';
import { type Budget, type BudgetLedger, isBudgetRefusal, spendListener, TokenBudget } from './budget-ledger.ts';
import { lifetimeBudgets, slottedResolver, timeLimitedResolver } from './agent-call-limits.ts';
import type { AutonomousGuard } from './autonomous-guard.ts';
import type { PriorityGate } from './priority-gate.ts';
import { AgentTurns } from './agent-turns.ts';
import { CANONICAL_KEEP_MESSAGES, CANONICAL_MAX_MESSAGES, canonicalConversation, canonicalExchange, renderCanonical } from './canonical-memory.ts';
import type { CapabilityManager } from './capability-manager.ts';
import { conversationSessionId } from './conversation-session.ts';
import { errorEvent } from './event-stream.ts';
import { type LiveTurn, LiveTurns, type StreamEntry } from './live-turns.ts';
import { fallbackChain, manifestModels } from './model-targets.ts';
import { createModuleTurns } from './module-turns.ts';
import type { OpenTurn, TurnPlace } from './open-turn.ts';
import type { QuotaTracker } from './quota-tracker.ts';
import { SessionHistories } from './session-histories.ts';
// The light half of the telemetry module: the SDK loads only when tracing starts.
import { withTurnSpan } from '../telemetry/spans.ts';
import { agentSystemPrompt } from './agent-skills.ts';
import { systemPromptOf } from './identity-prompt.ts';
import { chainOf, toolPolicyOf } from './tool-policy.ts';
import { untrustedSenderOf } from './untrusted-sender.ts';
import { sealTurn, type TurnEnding, TurnTrace } from './turn-record.ts';

export type { MessageFlow, ModelCallRequest, SendOptions, TaskTurn } from './message-flow-contract.ts';

/** What the message flow is built from: the kernel's own parts. */
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
  /** The daemon's model-call slots, handed out by agents' `priority` (`[models].max_concurrent_calls`); none: no limit. */
  modelSlots?: PriorityGate;
  /** The agents whose last turn failed on every model, lately (orchestrators leave them out). */
  recentFailures?: RecentFailures;
  /** Tells subscribers of an event the audit log holds already (one a turn's journal committed). */
  announce: (event: KernelEvent) => void;
}

/**
 * The message flow of spec/01: RBAC, quota check, entry lookup, module dispatch, the agent
 * loop, cost estimate, usage recorded, result. Turns of one agent run one at a time; killing or
 * suspending the agent aborts them.
 */
export function createMessageFlow(parts: MessageFlowParts): MessageFlow {
  const { store, clock, registry, capabilities, quotas, ledger } = parts;
  const logger = parts.logger.child({ component: 'message-flow' });
  const turns = new AgentTurns();
  const liveTurns = new LiveTurns();
  const histories = new SessionHistories(store, clock);
  const nameOf = (id: string): string => registry.find(id)?.name ?? id;

  function authorize(entry: AgentEntry, caller: Caller): void {
    if (caller.kind === 'user') {
      if (caller.role === 'viewer') throw new AccessDeniedError(`a viewer may not send messages (agent "${entry.name}"); it needs the user or owner role`);
      const allowed = caller.agents;
      if (caller.role === 'user' && allowed !== undefined && !allowed.some((pattern) => matchesPattern(pattern, entry.name))) {
        throw new AccessDeniedError(`${caller.name === undefined ? 'this caller' : `"${caller.name}"`} may not message agent "${entry.name}": its key allows ${allowed.map((pattern) => `"${pattern}"`).join(', ') || 'no agents'}`);
      }
      return;
    }
    const from = registry.resolve(caller.agentId);
    capabilities.require(from.id, from.name, { kind: 'agent_message', pattern: entry.name });
    if (caller.chain.length >= MAX_AGENT_DEPTH) {
      throw new AgentChainError(`cannot message "${entry.name}": agent-to-agent messages may be nested at most ${MAX_AGENT_DEPTH} deep`);
    }
    if (entry.id === from.id || caller.chain.includes(entry.id)) {
      throw new AgentChainError(`cannot message "${entry.name}": it is already waiting in this chain of messages (${[...caller.chain, from.id].map(nameOf).join(' → ')})`);
    }
  }

  /**
   * The models to try, in order. With `llm_query` grants, every model must match one (others
   * are dropped, and none left is a refusal); without any, the manifest's own choice stands.
   */
  function chooseModels(runtime: AgentRuntime, entry: AgentEntry, message: string, historyDepth: number, toolCount: number, chosen?: ModelTarget): { models: ModelTarget[]; tier?: string } {
    const { manifest } = entry;
    const primary = namedModel(manifest.model) ?? runtime.defaultModel;
    const own = fallbackChain(manifest, runtime).map(({ target }) => target);
    if (chosen !== undefined) {
      // A task's model: granted by llm_query, or without any grants one the manifest chose.
      const granted = capabilities.granted(entry.id);
      const allowed = granted.some((capability) => capability.kind === 'llm_query')
        ? isGranted(granted, { kind: 'llm_query', pattern: modelName(chosen) })
        : manifestModels(manifest, runtime).some(({ target }) => modelName(target) === modelName(chosen));
      if (!allowed) throw new CapabilityDeniedError(`agent "${entry.name}" may not call model "${modelName(chosen)}": grant it [capabilities].llm_query "${modelName(chosen)}"`);
      return { models: [chosen] };
    }
    if (primary === undefined) {
      throw new ModuleUnavailableError(`agent "${manifest.name}" has no [model] and no default model is configured; add [model] to its manifest or [default_model] to config.toml (\`loom init\` sets one, and a running daemon takes it up)`);
    }
    let chain = own;
    let routed: { tier: string; model: ModelTarget } | undefined;
    if (manifest.routing?.enabled === true && runtime.tiers !== undefined) {
      const tier = pickTier(scoreComplexity({ messageText: message, toolCount, historyDepth }), manifest.routing);
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
        throw new CapabilityDeniedError(`agent "${entry.name}" is not granted [capabilities].llm_query for ${chain.map((model) => `"${modelName(model)}"`).join(', ')}`);
      }
      chain = allowed;
    }
    return routed !== undefined && chain[0] === routed.model ? { models: chain, tier: routed.tier } : { models: chain };
  }

  /** The tool runner of an unattended cycle: its tool calls capped by `[autonomous]` (see `AutonomousGuard`). */
  function cycleRunner(entry: AgentEntry): ToolRunner {
    return parts.guard === undefined ? parts.runner() : parts.guard.cycleRunner(parts.runner(), entry);
  }

  /**
   * The resolver an agent's work calls models through: each call reserves from the agent's hourly
   * quota and from `budgets` first, and settles with what it spent (see `BudgetLedger.meter`), within
   * the agent's lifetime cap, its per-call time limit and its place in the queue for a model slot.
   */
  function meteredResolver(runtime: AgentRuntime, entry: AgentEntry, budgets: readonly Budget[] = []): ModelResolver {
    const { resources } = entry.manifest;
    return ledger.meter(slottedResolver(timeLimitedResolver(runtime.resolver, entry.manifest, clock), entry.manifest, parts.modelSlots, parts.logger.child({ agentId: entry.id })), {
      budgets: [ledger.hourly(entry.id, entry.name, { maxTokensPerHour: resources.max_tokens_per_hour, maxCostPerHour: resources.max_cost_per_hour }), ...lifetimeBudgets(ledger, entry, capabilities.granted(entry.id)), ...budgets],
      price: (target, usage) => runtime.costs.estimateCost(target.provider, target.model, usage).costUsd,
    });
  }

  /** A summary of `older` by `model`, paid for like any other call (its usage goes to `calls`). */
  function summarize(resolver: ModelResolver, model: ModelTarget, older: readonly ModelMessage[], signal: AbortSignal, calls: ModelCallUsage[]): Promise<string> {
    return summarizeMessages({ resolver, model, clock, signal, onCall: (used) => calls.push(used) }, older);
  }

  /** Prices every model call of a turn, as usage records for the store. */
  function priceCalls(runtime: AgentRuntime, entry: AgentEntry, calls: readonly ModelCallUsage[], runLogger: Logger): UsageRecord[] {
    return calls.map((call) => {
      const cost = runtime.costs.estimateCost(call.model.provider, call.model.model, call);
      if (!cost.known) runLogger.debug({ model: modelName(call.model) }, 'no price known for this model; counted as free');
      return {
        agentId: entry.id,
        at: clock.now(),
        model: modelName(call.model),
        inputTokens: call.inputTokens,
        outputTokens: call.outputTokens,
        ...(call.cacheReadTokens === undefined ? {} : { cacheReadTokens: call.cacheReadTokens }),
        ...(call.cacheWriteTokens === undefined ? {} : { cacheWriteTokens: call.cacheWriteTokens }),
        costUsd: cost.costUsd,
      };
    });
  }

  /**
   * Commits a turn in one write: `session` (its history as the turn leaves it) with the turn's
   * messages, from the user's message on, sealed with its record (see `sealTurn`), and the usage
   * of `calls`, each priced once; merged if another writer saved meanwhile (the budget ledger
   * counted each call against the quota as it was made). `model` answered the turn; null leaves it to the trace (its last model).
   * `wellFormed` leading messages of `session` are known to make a well-formed history. A
   * finished turn gives its `result`: the turn's audit record (see `TurnSeal`) commits with it.
   */
  async function commitTurn(turn: OpenTurn, session: readonly ModelMessage[], calls: readonly ModelCallUsage[], ending: TurnEnding, model: string | null, options: { wellFormed?: number; result?: (usage: readonly UsageRecord[]) => TurnResult } = {}): Promise<UsageRecord[]> {
    const { entry, place, userMessage } = turn;
    const usage = priceCalls(turn.runtime, entry, calls, turn.logger);
    const costs = new Map(calls.map((call, index) => [call, usage[index]?.costUsd ?? 0]));
    const record = turn.trace.record(ending, costs, model);
    const start = session.indexOf(userMessage);
    // A user message merged into an earlier one (by session repair) is no longer its own.
    const sealed = sealTurn(start === -1 ? [userMessage] : session.slice(start), userMessage, place.receivedAt, record, ending);
    const whole = start === -1 ? [...session, ...sealed.slice(1)] : [...session.slice(0, start), ...sealed];
    // Sealing rewrites the turn's messages from the user's on: only what comes before them stays known.
    const wellFormed = Math.min(options.wellFormed ?? 0, start === -1 ? session.length : start);
    const { seal, journal } = place;
    if (seal !== undefined && ending.status === 'cancelled') seal.stopped = true;
    const result = options.result?.(usage);
    const audit = seal === undefined || result === undefined ? undefined : seal.finished(result);
    // The turn's journal closes with its commit: a retry with its key gets how it ended.
    const closeTurn = journal === undefined || journal.pending !== undefined ? undefined : { turnId: journal.turnId, outcome: outcomeRecord(ending, result as unknown as JsonValue) };
    await histories.save({ sessionId: place.sessionId, agentId: entry.id, conversation: place.conversation }, turn.base, whole, sealed, { usage, wellFormed, events: audit === undefined ? [] : [auditRecordOf(audit)], ...(closeTurn === undefined ? {} : { closeTurn }) });
    if (journal !== undefined) journal.closed = true;
    if (seal !== undefined && audit !== undefined) seal.recorded = audit;
    return usage;
  }

  /** The context window a turn plans for: the agent's `[compaction].max_context_tokens`, else the model's. */
  function contextWindowOf(runtime: AgentRuntime, entry: AgentEntry, model: ModelTarget): number {
    return entry.manifest.compaction.max_context_tokens ?? runtime.contextWindowTokens?.(model) ?? DEFAULT_CONTEXT_WINDOW_TOKENS;
  }

  /**
   * The history as a turn sends it: compacted past the agent's `[compaction]` threshold (spec/03),
   * the summary call paid for like any other, a `compaction` phase announced; `messages` itself
   * when it was not compacted.
   */
  async function compactHistory(runtime: AgentRuntime, entry: AgentEntry, model: ModelTarget, messages: ModelMessage[], turn: { resolver: ModelResolver; signal: AbortSignal; emit: AgentEventSink; logger: Logger; calls: ModelCallUsage[]; knownTokens?: KnownTokens }): Promise<ModelMessage[]> {
    const settings = entry.manifest.compaction;
    if (!settings.enabled) return messages;
    const compaction = await compactSession(messages, {
      contextWindowTokens: contextWindowOf(runtime, entry, model),
      threshold: settings.threshold,
      keepLast: settings.keep_last_n,
      summarize: (older) => summarize(turn.resolver, model, older, turn.signal, turn.calls),
      logger: turn.logger,
      ...(turn.knownTokens === undefined ? {} : { knownTokens: turn.knownTokens }),
    });
    if (!compaction.compacted) return messages;
    turn.emit({ type: 'phase', phase: 'compaction', detail: `history compacted from ~${compaction.tokensBefore} to ~${compaction.tokensAfter} tokens` });
    return compaction.messages;
  }

  /** The checks a turn repeats when it leaves the queue (the agent is live, running, within quota), then `run-start`. */
  async function beginTurn(entry: AgentEntry, emit: AgentEventSink, purpose: string, turnId?: string): Promise<Logger> {
    if (registry.find(entry.id) !== entry) throw new AgentNotFoundError(entry.name);
    if (entry.state !== 'running') throw new AgentStateError(`agent "${entry.name}" is suspended; resume it to ${purpose}`);
    await quotas.check(entry.id, entry.name, {
      maxTokensPerHour: entry.manifest.resources.max_tokens_per_hour,
      maxCostPerHour: entry.manifest.resources.max_cost_per_hour,
    });
    const runId = turnId ?? parts.ids.uuid();
    emit({ type: 'run-start', runId, agentId: entry.id, agentName: entry.name });
    return logger.child({ agentId: entry.id, runId });
  }

  /** A turn's result from its recorded usage. */
  function resultOf(usage: readonly UsageRecord[], text: string, iterations: number, model: string): TurnResult {
    const sum = (pick: (record: UsageRecord) => number): number => usage.reduce((total, record) => total + pick(record), 0);
    return { text, usage: { inputTokens: sum((record) => record.inputTokens), outputTokens: sum((record) => record.outputTokens) }, iterations, costUsd: sum((record) => record.costUsd), model };
  }

  /** Announces a turn's result as `run-finish`, and returns it. */
  function finishTurn(result: TurnResult, emit: AgentEventSink): TurnResult {
    emit({ type: 'run-finish', result });
    return result;
  }

  async function runChat(runtime: AgentRuntime, entry: AgentEntry, message: string, caller: Caller, signal: AbortSignal, sink: AgentEventSink, place: TurnPlace): Promise<TurnResult> {
    const trace = new TurnTrace(clock);
    const emit = trace.sink(sink);
    // The turn may have waited in the queue: the agent must still be live, running and within quota.
    const { journal } = place;
    const runLogger = await beginTurn(entry, emit, 'send it messages', journal?.turnId);

    const base = await histories.load(place.sessionId);
    const conversation = place.conversation ?? 'main';
    const canonical = place.person === undefined ? undefined : { person: place.person, conversation: canonicalConversation(place.person), sessionId: conversationSessionId(entry.id, canonicalConversation(place.person)) };
    const canonicalBase = canonical === undefined ? undefined : await histories.load(canonical.sessionId);
    const known = canonical === undefined || canonicalBase === undefined ? undefined : renderCanonical(canonicalBase.messages, canonical.person, conversation);
    const workspace = runtime.workspaceOf({ name: entry.name, workspace: entry.manifest.workspace });
    const policy = toolPolicyOf(entry, workspace, chainOf(caller));
    const { filter, approvalRequiredFor, settings } = policy;
    // An event-log agent uses its log tools and nothing else, whatever else it holds (spec/03).
    const agent: ToolAgent = entry.manifest.module === 'builtin:eventlog' ? { ...policy.agent, limit: LOG_TOOL_LIMIT } : policy.agent;
    const sender = parts.taint === undefined ? undefined : untrustedSenderOf(caller, place.door, parts.taint.trusted);
    if (sender !== undefined) parts.taint?.label(agent, sender, message);
    const runner = place.cycle === true ? cycleRunner(entry) : parts.runner();
    const tools = runner.toolsFor(agent, filter);
    const { models, tier } = chooseModels(runtime, entry, message, base.messages.length, tools.length, place.model);
    const primary = models[0] as ModelTarget;
    if (tier !== undefined) emit({ type: 'phase', phase: 'model-call', detail: `routed to the ${tier} tier: ${modelName(primary)}` });
    const contextWindowTokens = contextWindowOf(runtime, entry, primary);
    const userMessage: ModelMessage = { role: 'user', content: message };
    const calls: ModelCallUsage[] = [];
    const input = [...base.messages, userMessage];
    const knownTokens = { count: base.messages.length, tokens: histories.tokensOf(base) };
    const resolver = meteredResolver(runtime, entry);
    const turn: OpenTurn = { runtime, entry, place, base, userMessage, trace, logger: runLogger };
    let messages: ModelMessage[];
    try {
      messages = await compactHistory(runtime, entry, primary, input, { resolver, signal, emit, logger: runLogger, calls, knownTokens });
    } catch (error) {
      // Refused by a budget before the turn said anything: the message is kept, with why.
      for (const used of calls) trace.model(used);
      if (registry.find(entry.id) === entry) await commitTurn(turn, input, calls, endingOf(error, signal), null);
      throw unwound(entry, error, signal);
    }
    for (const used of calls) trace.model(used);
    // A resumed turn goes on from its journal: what it said and did is not done again.
    const resumed = journal?.record === undefined ? undefined : resumeOf(journal.record);
    if (resumed !== undefined) {
      messages = [...messages, ...resumed.added];
      // Its trace goes on too: the model and tool calls from before the restart, in order.
      for (const step of resumed.trace) {
        if (step.kind === 'model') trace.model(step.call);
        else trace.tool(step);
      }
      emit({ type: 'phase', phase: 'resume', detail: `resumed after a restart, from step ${journal?.record?.steps.filter((step) => step.kind !== 'stream').length ?? 0} of its journal` });
    }

    const modelConfig = entry.manifest.model;
    // `llm_max_tokens` caps what one model call may write.
    const maxOutputTokens = Math.min(modelConfig?.max_tokens ?? 4096, tokenCapOf(capabilities.granted(entry.id)));
    let outcome;
    try {
      outcome = await runAgentLoop({
        agent,
        // What the agent knows of the person changes from turn to turn: it goes after the cached prefix.
        system: withStabilityGuidelines(await agentSystemPrompt(runtime, entry.manifest, workspace)),
        ...(known === undefined ? {} : { context: known }),
        cache: modelConfig?.cache !== false,
        cacheKey: place.sessionId,
        messages,
        // A compacted history is new: the repair reads it whole.
        wellFormedPrefix: messages === input ? base.wellFormed : 0,
        ...(messages === input ? { knownTokens } : {}),
        ...(journal === undefined ? {} : { journal: new TurnJournalWriter(store, clock, journal, parts.announce) }),
        ...(resumed === undefined ? {} : { resume: resumed.resume }),
        models,
        resolver,
        runner,
        tools: () => runner.toolsFor(agent, filter),
        settings,
        filter,
        approvalRequiredFor,
        maxIterations: entry.manifest.resources.max_iterations,
        maxOutputTokens,
        temperature: modelConfig?.temperature ?? 0.7,
        contextWindowTokens,
        clock,
        logger: runLogger,
        signal,
        emit,
        stream: place.stream,
        onModelCall: (used) => trace.model(used),
      });
    } catch (error) {
      // What the turn did before failing is counted, and its messages kept (the user's message
      // was accepted; tools may have acted; a cancelled reply keeps what it said). A killed agent
      // has nothing left to keep them in.
      const partial = partialOutcomeOf(error);
      if (registry.find(entry.id) === entry) await commitTurn(turn, partial?.messages ?? messages, [...calls, ...(partial?.calls ?? [])], endingOf(error, signal), null);
      throw unwound(entry, error, signal);
    }
    if (canonical !== undefined && canonicalBase !== undefined) {
      const summaries = calls.length;
      // What the agent learned of this person goes with them to their other conversations; a
      // failure here costs that, not the turn.
      try {
        const added = canonicalExchange(conversation, message, outcome.text);
        let next = [...canonicalBase.messages, ...added];
        if (next.length > CANONICAL_MAX_MESSAGES) {
          const older = next.slice(0, -CANONICAL_KEEP_MESSAGES);
          const summary = await summarize(resolver, outcome.model, older, signal, calls);
          next = [{ role: 'user', content: `${SUMMARY_PREFIX}\n${summary}` }, ...next.slice(-CANONICAL_KEEP_MESSAGES)];
        }
        await histories.save({ sessionId: canonical.sessionId, agentId: entry.id, conversation: canonical.conversation }, canonicalBase, next, added);
      } catch (error) {
        runLogger.warn({ err: error, person: canonical.person }, 'could not update what the agent knows of this person across conversations');
      }
      for (const used of calls.slice(summaries)) trace.model(used);
    }
    // A reply to another agent carries the taint of what it quotes to that agent's turn.
    if (caller.kind === 'agent') parts.taint?.replied(agent, outcome.text);
    const answeredBy = modelName(outcome.model);
    const result = (usage: readonly UsageRecord[]): TurnResult => resultOf(usage, outcome.text, outcome.iterations, answeredBy);
    const usage = await commitTurn(turn, outcome.messages, [...calls, ...outcome.calls], { status: 'finished' }, answeredBy, { wellFormed: outcome.wellFormed, result });
    return finishTurn(result(usage), emit);
  }

  /**
   * How a turn that threw `error` ended: cancelled when its signal aborted (a cancel, a suspend, a
   * time limit) or a budget refused its next model call (what it said is kept, as a cancel keeps
   * it), else failed.
   */
  function endingOf(error: unknown, signal: AbortSignal): TurnEnding {
    const reason: unknown = signal.aborted ? signal.reason : error;
    return { status: signal.aborted || isBudgetRefusal(error) ? 'cancelled' : 'failed', reason: reason instanceof Error ? reason.message : String(reason) };
  }

  /** The error a turn that threw `error` fails with: a killed agent says so; a cancelled turn fails with why it was cancelled. */
  function unwound(entry: AgentEntry, error: unknown, signal: AbortSignal): unknown {
    if (signal.aborted && registry.find(entry.id) !== entry) return new AgentStateError(`agent "${entry.name}" was killed during the turn`, { cause: error });
    return signal.aborted && isLoomError(signal.reason) ? signal.reason : error;
  }

  /** The model of each limited step's turn, by the agent its tools are given (see `modelWithin`). */
  const stepModels = new WeakMap<ToolAgent, ModelTarget>();
  /** The budgets of a task turn, by the agent its tools are given: the model calls its tools ask for draw from them too. */
  const turnBudgets = new WeakMap<ToolAgent, readonly Budget[]>();

  async function runTaskTurn(runtime: AgentRuntime, entry: AgentEntry, task: TaskTurn, caller: Caller, signal: AbortSignal, emit: AgentEventSink): Promise<TurnResult> {
    const runLogger = await beginTurn(entry, emit, 'run its work');
    const workspace = runtime.workspaceOf({ name: entry.name, workspace: entry.manifest.workspace });
    const policy = toolPolicyOf(entry, workspace, chainOf(caller));
    const agent: ToolAgent = task.limit === undefined ? policy.agent : { ...policy.agent, limit: task.limit, ...(task.mcpServers === undefined ? {} : { limitMcpServers: task.mcpServers }) };
    // What the step's tools ask of a model (`generate_text`) goes to the step's model.
    if (task.limit !== undefined && task.model !== undefined) stepModels.set(agent, task.model);
    const runner = parts.runner();
    const tools = runner.toolsFor(agent, policy.filter);
    const { models } = chooseModels(runtime, entry, task.prompt, 0, tools.length, task.model);
    const primary = models[0] as ModelTarget;
    const modelConfig = entry.manifest.model;
    const base = await systemPromptOf(runtime, entry.manifest, workspace);
    const record = async (calls: readonly ModelCallUsage[]): Promise<UsageRecord[]> => {
      const usage = priceCalls(runtime, entry, calls, runLogger);
      for (const item of usage) await store.usage.record(item);
      return usage;
    };
    const budgets: Budget[] = [];
    if (task.tokenBudget !== undefined) budgets.push(new TokenBudget(task.tokenBudget.max, task.tokenBudget.label));
    if (task.onSpend !== undefined) budgets.push(spendListener(task.onSpend));
    turnBudgets.set(agent, budgets);
    let outcome;
    try {
      outcome = await runAgentLoop({
        agent,
        system: withStabilityGuidelines(task.instructions === undefined ? base : `${base}\n\n${task.instructions}`),
        messages: [{ role: 'user', content: task.prompt }],
        cache: modelConfig?.cache !== false,
        models,
        resolver: meteredResolver(runtime, entry, budgets),
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
      if (registry.find(entry.id) === entry) await record(partialOutcomeOf(error)?.calls ?? []);
      if (signal.aborted && registry.find(entry.id) !== entry) throw new AgentStateError(`agent "${entry.name}" was killed during the turn`, { cause: error });
      throw error;
    }
    const usage = await record(outcome.calls);
    return finishTurn(resultOf(usage, outcome.text, outcome.iterations, modelName(outcome.model)), emit);
  }

  /** Per agent: the last pending change of its workflow (changes apply one at a time). */
  const workflowChanges = new Map<string, Promise<unknown>>();
  /** Per agent: its workflow running in the background, to stop it with the agent (and wait for it). */
  const workflowRuns = new Map<string, AbortController>();
  const workflowDone = new Set<Promise<void>>();

  function workflowPort(entry: AgentEntry): WorkflowPort {
    return {
      load: () => store.workflows.get(entry.id),
      update(change) {
        const previous = workflowChanges.get(entry.id) ?? Promise.resolve();
        const next = previous.then(async () => {
          const before = await store.workflows.get(entry.id);
          const updated = change(before);
          await store.workflows.put(updated);
          if (before?.state !== updated.state) await parts.publish({ type: 'workflow-state', at: clock.now(), agentId: entry.id, name: entry.name, state: updated.state, note: updated.note });
          return updated;
        });
        workflowChanges.set(entry.id, next.catch(() => undefined));
        return next;
      },
      execute: () => startWorkflow(entry),
    };
  }

  /** The module an agent's turns run on, when its type has its own steps (a code agent's is its module). */
  function moduleFor(entry: AgentEntry): AgentModule | undefined {
    if (entry.manifest.module === 'builtin:workflow') return workflowModule(workflowPort(entry));
    if (codeModuleOf(entry.manifest) !== undefined) {
      // The runtime's code modules are read at each turn: a runtime may be given them late.
      const modules = parts.runtime?.codeModules;
      return modules === undefined ? undefined : codeAgentModule(modules);
    }
    return AGENT_MODULES[entry.manifest.module];
  }

  /**
   * Runs an agent's approved workflow in the background (once per agent), outside any turn: its
   * model calls are recorded as they happen; killing, suspending or stopping the agent stops it,
   * and it goes on at the next start (a task under way then runs again).
   */
  function startWorkflow(entry: AgentEntry): void {
    const runtime = parts.runtime;
    if (runtime === undefined || workflowRuns.has(entry.id)) return;
    const controller = new AbortController();
    workflowRuns.set(entry.id, controller);
    const runLogger = logger.child({ agentId: entry.id, workflow: true });
    const port = workflowPort(entry);
    const record = (used: ModelCallUsage): void => {
      recordNow(runtime, entry, used, runLogger).catch((error: unknown) => runLogger.error({ err: error }, 'could not record the usage of a workflow step'));
    };
    const done = (async () => {
      try {
        const { context } = createModuleContext(runtime, entry, { message: '', history: [], caller: OWNER, signal: controller.signal, emit: noEvents, logger: runLogger, onCall: record, resolver: meteredResolver(runtime, entry) });
        await executeWorkflow(context, port);
        // Said so that a test can tell that nothing more runs (a pause took effect) without a sleep.
        runLogger.debug({}, `the workflow of agent "${entry.name}" stopped running in the background`);
      } catch (error) {
        if (controller.signal.aborted) return;
        runLogger.error({ err: error }, `the workflow of agent "${entry.name}" stopped on an error`);
        await port.update((current) => ({ ...(current as WorkflowRecord), state: 'stalled', note: `Stalled on an error: ${error instanceof Error ? error.message : String(error)}. Tell me how to go on, or "cancel".`, updatedAt: clock.now() })).catch(() => undefined);
      } finally {
        workflowRuns.delete(entry.id);
      }
    })();
    workflowDone.add(done);
    void done.finally(() => workflowDone.delete(done));
  }

  /** Records one model call's usage at once (work outside a turn; the budget ledger counted it against the quota as it was made). */
  async function recordNow(runtime: AgentRuntime, entry: AgentEntry, used: ModelCallUsage, runLogger: Logger): Promise<void> {
    for (const usage of priceCalls(runtime, entry, [used], runLogger)) await store.usage.record(usage);
  }

  /**
   * The model a call limited to `limit` may make: the one it asked for, else the model of the
   * step `caller` runs in, else the first of the agent's own chain; the limit must name it.
   * @throws {CapabilityDeniedError} when the limit names none of them.
   */
  function modelWithin<T>(runtime: AgentRuntime, entry: AgentEntry, limit: readonly Capability[], request: ModelCallRequest<T>, caller: ToolAgent): ModelTarget {
    const step = stepModels.get(caller);
    const candidates = request.model !== undefined ? [request.model] : step !== undefined ? [step] : chooseModels(runtime, entry, request.prompt, 0, 0).models;
    const allowed = candidates.find((model) => isGranted(limit, { kind: 'llm_query', pattern: modelName(model) }));
    if (allowed === undefined) {
      throw new CapabilityDeniedError(`agent "${entry.name}" may not ${request.step} in this step: it would call ${candidates.map((model) => `"${modelName(model)}"`).join(', ')}, and the step is limited to its own model`);
    }
    return allowed;
  }

  async function callModel<T>(agentId: string, request: ModelCallRequest<T>): Promise<{ text: string; output: T | undefined }> {
    const entry = registry.find(agentId);
    if (entry === undefined) throw new AgentNotFoundError(agentId);
    const runtime = parts.runtime;
    if (runtime === undefined) throw new ModuleUnavailableError(`agent "${entry.name}" cannot call a model: this kernel has no model runtime`);
    if (entry.state !== 'running') throw new AgentStateError(`agent "${entry.name}" is suspended; resume it to ${request.step}`);
    // Asked by a task turn's tools (a step's `generate_text`, a judge), it draws from that turn's budgets too.
    const budgets = request.caller === undefined ? [] : (turnBudgets.get(request.caller) ?? []);
    const model = request.caller?.limit === undefined ? request.model : modelWithin(runtime, entry, request.caller.limit, request, request.caller);
    const callLogger = logger.child({ agentId: entry.id, step: request.step });
    const calls: ModelCallUsage[] = [];
    const { context } = createModuleContext(
      runtime,
      entry,
      { message: request.prompt, history: [], caller: OWNER, signal: request.signal, emit: noEvents, logger: callLogger, onCall: (used) => calls.push(used), resolver: meteredResolver(runtime, entry, budgets), ...(model === undefined ? {} : { model }) },
    );
    const messages: ModelMessage[] = [{ role: 'user', content: request.prompt }];
    try {
      if (request.schema === undefined) return { text: await context.generate(request.step, { system: request.system, messages }), output: undefined };
      const output = await context.structured(request.step, request.schema, { system: request.system, messages });
      return { text: JSON.stringify(output), output };
    } finally {
      // Paid for whether or not it answered as asked.
      for (const used of calls) await recordNow(runtime, entry, used, callLogger);
    }
  }

  const { createModuleContext, runModuleTurn } = createModuleTurns({
    clock,
    ids: parts.ids,
    registry,
    capabilities,
    histories,
    runner: parts.runner,
    cycleRunner,
    publish: parts.publish,
    nameOf,
    meteredResolver,
    chooseModels,
    contextWindowOf,
    compactHistory,
    beginTurn,
    commitTurn,
    endingOf,
    unwound,
    resultOf,
    finishTurn,
    recentFailures: parts.recentFailures,
  });

  /** The checks every turn passes before it is queued: the caller, the state, the module. */
  function admit(reference: string, caller: Caller): { entry: AgentEntry; runtime: AgentRuntime } {
    const entry = registry.resolve(reference);
    authorize(entry, caller);
    if (entry.state !== 'running') throw new AgentStateError(`agent "${entry.name}" is suspended; resume it to send it messages`);
    const runtime = parts.runtime;
    if (runtime === undefined) throw new ModuleUnavailableError('this kernel has no model runtime configured');
    const code = codeModuleOf(entry.manifest);
    if (code === undefined ? !RUNNABLE_MODULES.has(entry.manifest.module) : runtime.codeModules === undefined) {
      throw new ModuleUnavailableError(`agent "${entry.name}" uses module "${entry.manifest.module}", which this Loom cannot run; it runs ${[...RUNNABLE_MODULES].join(', ')}${code === undefined ? '' : ', and no code modules in this process'}`);
    }
    return { entry, runtime };
  }

  async function runTask(reference: string, task: TaskTurn, options: SendOptions = {}): Promise<TurnResult> {
    const caller = options.caller ?? OWNER;
    const { entry, runtime } = admit(reference, caller);
    const emit = options.emit ?? noEvents;
    // A task's turn (a package activity's) is an `invoke_agent` span too, under its run's span.
    const turn = (): Promise<TurnResult> =>
      turns.run(entry.id, options.signal, (signal) => withTurnSpan({ agentId: entry.id, agentName: entry.name, message: task.prompt }, () => runTaskTurn(runtime, entry, task, caller, signal, emit)));
    return caller.kind === 'agent' ? turns.waitOn(caller.agentId, entry.id, nameOf, turn) : turn();
  }

  /** Turns of this process by journal id, while they run: a retry with a turn's key waits for it. */
  const inflight = new Map<string, Promise<TurnResult>>();

  /**
   * A message sent again with the key of `earlier` (a turn of the agent): that turn's reply, once
   * it ends, instead of a new turn. Its record in the audit log is its own turn's.
   * @throws the error it ended with; `TURN_RUNNING` when it runs elsewhere (another node).
   */
  async function replay(earlier: TurnJournalRecord, options: SendOptions, seal: TurnSeal | undefined): Promise<TurnResult> {
    if (seal !== undefined) seal.replayed = true;
    const running = inflight.get(earlier.id);
    if (running !== undefined) return finishTurn(await running, options.emit ?? noEvents);
    const outcome = earlier.state === 'done' ? earlier.outcome : null;
    if (outcome === null) {
      throw new LoomError('TURN_RUNNING', 'user', `the message with idempotency key "${earlier.idempotencyKey ?? ''}" started a turn that is still running on another node; retry later`);
    }
    const reason = typeof outcome['reason'] === 'string' ? outcome['reason'] : 'it did not finish';
    if (outcome['status'] === 'finished') return finishTurn(outcome['result'] as unknown as TurnResult, options.emit ?? noEvents);
    if (outcome['status'] === 'cancelled') throw new TurnCancelledError(`the turn this message started was cancelled: ${reason}`);
    throw new LoomError('TURN_FAILED', 'system', `the turn this message started failed: ${reason}`);
  }

  /** A message to an agent as its turn's journal records it (see `TurnJournalOpen`), under `key` (null without one). */
  function journalRecord(turnId: string, entry: AgentEntry, message: string, caller: Caller, options: SendOptions, receivedAt: number, key: string | null): TurnJournalOpen {
    const request = requestRecord({
      message,
      caller,
      ...(options.person === undefined ? {} : { person: options.person }),
      ...(options.door === undefined ? {} : { door: options.door }),
      ...(options.cycle === true ? { cycle: true } : {}),
      ...(options.model === undefined ? {} : { model: options.model }),
    });
    return { id: turnId, agentId: entry.id, sessionId: sessionOf(entry, options.conversation), conversation: options.conversation ?? null, request, idempotencyKey: key, receivedAt };
  }

  /**
   * Records a message with an idempotency key to an agent that runs the assistant loop in the turn
   * journal before it is queued (decision 0045), so that a retry finds it; a message whose key
   * started a turn already gets that turn's reply.
   */
  async function openKeyedJournal(entry: AgentEntry, message: string, caller: Caller, options: SendOptions & { idempotencyKey: string }, receivedAt: number): Promise<JournalPlace | { earlier: TurnJournalRecord }> {
    // A key is the caller's own: scoped to the conversation it sends in (a key's principal has its own).
    const key = options.conversation === undefined ? options.idempotencyKey : `${options.conversation}\n${options.idempotencyKey}`;
    const earlier = await store.turns.byKey(entry.id, key);
    if (earlier !== undefined) return { earlier };
    const turnId = parts.ids.uuid();
    try {
      await store.turns.open(journalRecord(turnId, entry, message, caller, options, receivedAt, key));
    } catch (error) {
      // The same key sent twice at once: the second gets the first's turn.
      const first = error instanceof StoreConflictError ? await store.turns.byKey(entry.id, key) : undefined;
      if (first === undefined) throw error;
      return { earlier: first };
    }
    return { turnId };
  }

  async function send(reference: string, message: string, options: SendOptions = {}, seal?: TurnSeal): Promise<TurnResult> {
    const caller = options.caller ?? OWNER;
    const { resume } = options;
    let admitted: { entry: AgentEntry; runtime: AgentRuntime };
    try {
      admitted = admit(reference, caller);
    } catch (error) {
      // A resumed turn its agent can no longer run ends here, with why.
      if (resume !== undefined) await store.turns.finish({ turnId: resume.id, outcome: { status: 'failed', reason: error instanceof Error ? error.message : String(error) } }, clock.now());
      throw error;
    }
    const { entry, runtime } = admitted;
    const module = moduleFor(entry);
    const receivedAt = resume?.receivedAt ?? clock.now();
    let journal: TurnPlace['journal'];
    if (resume !== undefined) journal = { turnId: resume.id, record: resume };
    else if (module === undefined && options.idempotencyKey !== undefined) {
      const opened = await openKeyedJournal(entry, message, caller, { ...options, idempotencyKey: options.idempotencyKey }, receivedAt);
      if ('earlier' in opened) return replay(opened.earlier, options, seal);
      journal = opened;
    } else if (options.acknowledged === true) {
      // Its caller was told it is taken: recorded now, whatever the agent's type (see `SendOptions.acknowledged`).
      const turnId = parts.ids.uuid();
      await store.turns.open(journalRecord(turnId, entry, message, caller, options, receivedAt, null));
      journal = { turnId };
    } else if (module === undefined) {
      // Recorded with its first step that could not be done again (see `TurnJournalWriter`).
      const turnId = parts.ids.uuid();
      journal = { turnId, pending: () => journalRecord(turnId, entry, message, caller, options, receivedAt, null) };
    }
    const sessionId = sessionOf(entry, options.conversation);
    const place: TurnPlace = {
      sessionId,
      ...(options.conversation === undefined ? {} : { conversation: options.conversation }),
      ...(options.person === undefined ? {} : { person: options.person }),
      ...(options.cycle === true ? { cycle: true } : {}),
      ...(options.model === undefined ? {} : { model: options.model }),
      receivedAt,
      // A resumed turn streams: its client may come back to it (decision 0059).
      stream: options.emit !== undefined || resume !== undefined,
      ...(seal === undefined ? {} : { seal }),
      ...(options.door === undefined ? {} : { door: options.door }),
      ...(journal === undefined ? {} : { journal }),
    };
    // A turn can be followed again by a client that left, and cancelled, on whichever session it
    // runs; its events keep their ids across a restart (decision 0059).
    const live = liveTurns.open(entry.id, options.conversation, message, receivedAt, streamOf(journal?.turnId ?? parts.ids.uuid(), resume));
    if (journal !== undefined) journal.stream = () => live.unsaved() as unknown as JsonObject | undefined;
    const own = options.emit ?? noEvents;
    const emit: AgentEventSink = (event) => {
      live.emit(event);
      own(event);
    };
    // The caller's signal (a request's) cancels the live turn as its own controller would.
    const unlink = linkAbort(options.signal, live.controller);
    const signal = live.controller.signal;
    const turn = (): Promise<TurnResult> =>
      turns.run(entry.id, signal, (turnSignal) =>
        withTurnSpan({ agentId: entry.id, agentName: entry.name, conversationId: place.sessionId, message }, () =>
          module === undefined ? runChat(runtime, entry, message, caller, turnSignal, emit, place) : runModuleTurn(runtime, entry, module, message, caller, turnSignal, emit, place),
        ),
      );
    // An agent waiting on another must not be waited on by it: that would deadlock both turns.
    const running = caller.kind === 'agent' ? turns.waitOn(caller.agentId, entry.id, nameOf, turn) : turn();
    if (journal !== undefined) inflight.set(journal.turnId, running);
    try {
      const result = await running;
      live.end('finished');
      return result;
    } catch (error) {
      // A budget that stopped the turn ended it as a cancel would: what it said is kept.
      const status = signal.aborted || isBudgetRefusal(error) ? 'cancelled' : 'failed';
      live.end(status, errorEvent(error));
      // A turn that ended without its commit (refused when it left the queue) closes its journal here.
      if (journal !== undefined && journal.closed !== true && journal.pending === undefined) {
        await store.turns.finish({ turnId: journal.turnId, outcome: { status, reason: error instanceof Error ? error.message : String(error) } }, clock.now()).catch((closeError: unknown) => logger.warn({ err: closeError, turnId: journal.turnId }, 'could not close the journal of a turn'));
      }
      throw error;
    } finally {
      if (journal !== undefined) inflight.delete(journal.turnId);
      unlink();
      liveTurns.close(live, clock.now());
    }
  }

  function currentTurn(agent: AgentEntry, conversation: string | undefined, action: string): LiveTurn {
    const turn = liveTurns.current(agent.id, conversation);
    if (turn === undefined) throw new TurnNotRunningError(agent.name, action);
    return turn;
  }

  /** A live turn's stream: under a new epoch for this run of it, after the events its journal saved when it is resumed. */
  const streamOf = (turnId: string, resume: TurnJournalRecord | undefined): { turnId: string; epoch: string; saved?: StreamEntry[] } => ({
    turnId,
    epoch: parts.ids.uuid().slice(0, 8),
    ...(resume === undefined ? {} : { saved: savedStreamOf(resume) }),
  });

  /** The session of a conversation of the agent: its main session without one. */
  const sessionOf = (agent: AgentEntry, conversation: string | undefined): string => (conversation === undefined ? agent.sessionId : conversationSessionId(agent.id, conversation));

  return {
    send,
    runTask,
    callModel,
    runningTurn: (agent, conversation) => liveTurns.current(agent.id, conversation)?.view(),
    turnCounts: () => liveTurns.counts(),
    journaledTurns: () => [...inflight.keys()],
    followTurn: (agent, conversation, after) => liveTurns.follow(agent, conversation, after, clock.now()),
    async cancelTurn(agent, caller, by, conversation) {
      authorize(agent, caller);
      const turn = currentTurn(agent, conversation, 'cancel');
      turn.controller.abort(new TurnCancelledError(`the turn was cancelled by ${by}; what it said before is kept in the session`));
      const status = await turn.ended;
      return { agent: agent.name, run_id: turn.runId ?? null, status };
    },
    resetSession: (agent, at, conversation) =>
      turns.run(agent.id, undefined, async () => {
        const sessionId = sessionOf(agent, conversation);
        histories.forget(sessionId);
        const current = await store.sessions.get(sessionId);
        await store.sessions.save({ id: sessionId, agentId: agent.id, messages: [], createdAt: current?.createdAt ?? at, updatedAt: at, conversation: conversation ?? null });
      }),
    async idle() {
      await turns.idle();
      await Promise.allSettled([...workflowDone]);
    },
    async resumeWork(agent) {
      if (agent.manifest.module !== 'builtin:workflow') return;
      const current = await store.workflows.get(agent.id);
      if (current?.state !== 'executing') return;
      // A task under way when the process stopped runs again.
      await workflowPort(agent).update((record) => ({ ...(record as WorkflowRecord), tasks: (record as WorkflowRecord).tasks.map((task) => (task.status === 'in_progress' ? { ...task, status: 'pending' } : task)) }));
      startWorkflow(agent);
    },
    stopTurns(agent, reason) {
      workflowRuns.get(agent.id)?.abort(new AgentStateError(`agent "${agent.name}" stopped`));
      const what = reason === 'kill' ? 'was killed' : reason === 'suspend' ? 'was suspended' : 'stopped because Loom is shutting down';
      turns.abort(agent.id, new AgentStateError(`agent "${agent.name}" ${what} during the turn`));
      if (reason === 'kill') histories.forget(agent.sessionId);
    },
  };
}

const noEvents: AgentEventSink = () => undefined;

/** The agent types with their own turn; the others run the assistant loop. */
const AGENT_MODULES: Readonly<Record<string, AgentModule>> = { 'builtin:delegate': runDelegate, 'builtin:chain-of-thought': runChainOfThought };

/** Agent types with their own steps, the workflow's built per agent. */
const MODULE_NAMES: readonly string[] = [...Object.keys(AGENT_MODULES), 'builtin:workflow'];

/** The modules turns run on: the assistant loop (under both its names, and with only the log tools for event-log agents) and the agent types built so far. */
const RUNNABLE_MODULES: ReadonlySet<string> = new Set(['builtin:assistant', 'builtin:chat', 'builtin:eventlog', ...MODULE_NAMES]);

/** What an event-log agent's turns are limited to. */
const LOG_TOOL_LIMIT: readonly Capability[] = LOG_TOOLS.map((tool) => ({ kind: 'tool_invoke', pattern: tool.name }));
