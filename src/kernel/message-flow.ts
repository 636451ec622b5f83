import { generateText, type ModelMessage } from 'ai';
import type { Clock, IdGenerator, Logger, Store, ToolAgent } from '../contracts/index.ts';
import { AccessDeniedError, AgentChainError, AgentStateError, ModuleUnavailableError } from '../errors/index.ts';
import type { Manifest } from '../manifest/index.ts';
import { type ModelTarget, pickTier, scoreComplexity } from '../models/index.ts';
import {
  type AgentEventSink,
  compactSession,
  runAgentLoop,
  SUMMARY_INSTRUCTION,
  type ToolRunner,
  type TurnResult,
  withStabilityGuidelines,
} from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import { type AgentRuntime, type Caller, DEFAULT_CONTEXT_WINDOW_TOKENS, MAX_AGENT_DEPTH, OWNER } from './agent-runtime.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { CapabilityManager } from './capability-manager.ts';
import type { QuotaTracker } from './quota-tracker.ts';

/** How many sessions' histories a kernel keeps in memory between turns. */
export const HISTORY_CACHE_LIMIT = 1_000;

interface CachedHistory {
  revision: number;
  createdAt: number;
  /** Never mutated: a turn builds a new array from it. */
  messages: ModelMessage[];
}

/** Options for a message to an agent. */
export interface SendOptions {
  caller?: Caller;
  signal?: AbortSignal;
  /** Receives the run's events as they happen (the streaming doors use it). */
  emit?: AgentEventSink;
}

/** What the message flow is built from: the kernel's own parts. */
export interface MessageFlowParts {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  registry: AgentRegistry;
  capabilities: CapabilityManager;
  quotas: QuotaTracker;
  runtime: AgentRuntime | undefined;
  runner: () => ToolRunner;
}

function toTarget(model: { provider: ModelTarget['provider']; model: string; api_key_env?: string | undefined; base_url?: string | undefined }): ModelTarget {
  return { provider: model.provider, model: model.model, api_key_env: model.api_key_env, base_url: model.base_url };
}

/** `provider/model`, as usage records and results name a model. */
export function modelName(target: ModelTarget): string {
  return `${target.provider}/${target.model}`;
}

/** The caller's chain as seen by the agent it reaches. */
function chainOf(caller: Caller): readonly string[] {
  return caller.kind === 'agent' ? [...caller.chain, caller.agentId] : [];
}

/** The agent as its tools see it. */
export function toToolAgent(entry: AgentEntry, workspace: string, chain: readonly string[]): ToolAgent {
  const policy = entry.manifest.exec_policy;
  return {
    id: entry.id,
    name: entry.name,
    workspace,
    capabilities: entry.capabilities,
    execPolicy: {
      allow_shell: policy?.allow_shell ?? true,
      allow_network: policy?.allow_network ?? true,
      allow_file_write: policy?.allow_file_write ?? true,
    },
    depth: chain.length,
    chain,
  };
}

/** Reads a stored history loosely: anything that is not a message with a role is dropped (session repair does the rest). */
function readHistory(messages: readonly unknown[] | undefined): ModelMessage[] {
  return (messages ?? []).filter(
    (message): message is ModelMessage => typeof message === 'object' && message !== null && 'role' in message && 'content' in message,
  );
}

/**
 * The message flow of spec/01: RBAC, quota check, entry lookup, module dispatch, the agent
 * loop, cost estimate, usage recorded, result. Turns of one agent run one at a time.
 */
export function createMessageFlow(parts: MessageFlowParts): { send(reference: string, message: string, options?: SendOptions): Promise<TurnResult> } {
  const { store, clock, registry, capabilities, quotas } = parts;
  const logger = parts.logger.child({ component: 'message-flow' });
  const turns = new Map<string, Promise<unknown>>();
  // Recent sessions' histories with the revision they were read or written at: a turn re-reads a
  // session only when someone else saved it since (checked with one cheap query).
  const histories = new Map<string, CachedHistory>();

  function remember(sessionId: string, history: CachedHistory): void {
    histories.delete(sessionId);
    histories.set(sessionId, history);
    if (histories.size > HISTORY_CACHE_LIMIT) histories.delete(histories.keys().next().value ?? '');
  }

  async function loadHistory(sessionId: string): Promise<CachedHistory> {
    const revision = await store.sessions.revision(sessionId);
    const cached = histories.get(sessionId);
    if (cached !== undefined && cached.revision === revision) return cached;
    const session = await store.sessions.get(sessionId);
    // Read after the revision: if a save slipped in between, the next turn sees a newer revision and reads again.
    const loaded = { revision: revision ?? 0, createdAt: session?.createdAt ?? clock.now(), messages: readHistory(session?.messages) };
    remember(sessionId, loaded);
    return loaded;
  }

  function authorize(entry: AgentEntry, caller: Caller): void {
    if (caller.kind === 'user') {
      if (caller.role === 'viewer') throw new AccessDeniedError(`a viewer may not send messages (agent "${entry.name}"); it needs the user or owner role`);
      return;
    }
    const from = registry.resolve(caller.agentId);
    capabilities.require(from.id, from.name, { kind: 'agent_message', pattern: entry.name });
    if (caller.chain.length + 1 >= MAX_AGENT_DEPTH + 1) {
      throw new AgentChainError(`cannot message "${entry.name}": agent-to-agent messages may be nested at most ${MAX_AGENT_DEPTH} deep`);
    }
    if (entry.id === from.id || caller.chain.includes(entry.id)) {
      throw new AgentChainError(`cannot message "${entry.name}": it is already waiting in this chain of messages (${[...caller.chain, from.id].map((id) => registry.find(id)?.name ?? id).join(' → ')})`);
    }
  }

  function chooseModels(runtime: AgentRuntime, manifest: Manifest, message: string, historyDepth: number, toolCount: number): { models: ModelTarget[]; tier?: string } {
    const primary = manifest.model === undefined ? runtime.defaultModel : toTarget(manifest.model);
    if (primary === undefined) {
      throw new ModuleUnavailableError(`agent "${manifest.name}" has no [model] and no default model is configured; add [model] to its manifest or [default_model] to config.toml`);
    }
    const fallbacks = manifest.fallback_models.map(toTarget);
    if (manifest.routing?.enabled === true && runtime.tiers !== undefined) {
      const tier = pickTier(scoreComplexity({ messageText: message, toolCount, historyDepth }), manifest.routing);
      const routed = runtime.tiers[tier];
      if (routed !== undefined) return { models: [routed, primary, ...fallbacks], tier };
    }
    return { models: [primary, ...fallbacks] };
  }

  async function summarize(runtime: AgentRuntime, model: ModelTarget, older: readonly ModelMessage[], signal: AbortSignal): Promise<string> {
    const result = await generateText({
      model: runtime.resolver.resolve(model),
      system: SUMMARY_INSTRUCTION,
      messages: [...older, { role: 'user', content: SUMMARY_INSTRUCTION }],
      maxRetries: 0,
      abortSignal: signal,
    });
    return result.text;
  }

  async function runChat(runtime: AgentRuntime, entry: AgentEntry, message: string, caller: Caller, options: SendOptions): Promise<TurnResult> {
    const emit = options.emit ?? ((): void => undefined);
    const signal = options.signal ?? new AbortController().signal;
    const runId = parts.ids.uuid();
    const runLogger = logger.child({ agentId: entry.id, runId });
    emit({ type: 'run-start', runId, agentId: entry.id, agentName: entry.name });

    const { messages: history, createdAt } = await loadHistory(entry.sessionId);
    const workspace = runtime.workspaceOf({ name: entry.name, workspace: entry.manifest.workspace });
    const agent = toToolAgent(entry, workspace, chainOf(caller));
    const runner = parts.runner();
    const tools = runner.toolsFor(agent, { allowlist: entry.manifest.tool_allowlist, blocklist: entry.manifest.tool_blocklist });
    const { models, tier } = chooseModels(runtime, entry.manifest, message, history.length, tools.length);
    const primary = models[0] as ModelTarget;
    if (tier !== undefined) emit({ type: 'phase', phase: 'model-call', detail: `routed to the ${tier} tier: ${modelName(primary)}` });
    const contextWindowTokens = runtime.contextWindowTokens?.(primary) ?? DEFAULT_CONTEXT_WINDOW_TOKENS;

    let messages: ModelMessage[] = [...history, { role: 'user', content: message }];
    const compaction = await compactSession(messages, {
      contextWindowTokens,
      summarize: (older) => summarize(runtime, primary, older, signal),
      logger: runLogger,
    });
    if (compaction.compacted) {
      messages = compaction.messages;
      emit({ type: 'phase', phase: 'compaction', detail: `history compacted from ~${compaction.tokensBefore} to ~${compaction.tokensAfter} tokens` });
    }
    const save = async (updated: ModelMessage[]): Promise<void> => {
      const revision = await store.sessions.save({
        id: entry.sessionId,
        agentId: entry.id,
        messages: updated as unknown as Parameters<Store['sessions']['save']>[0]['messages'],
        createdAt,
        updatedAt: clock.now(),
      });
      remember(entry.sessionId, { revision, createdAt, messages: updated });
    };

    const modelConfig = entry.manifest.model;
    let outcome;
    try {
      outcome = await runAgentLoop({
        agent,
        system: withStabilityGuidelines(modelConfig?.system_prompt ?? defaultSystemPrompt(entry.manifest)),
        messages,
        models,
        resolver: runtime.resolver,
        runner,
        tools,
        settings: entry.manifest.tools,
        maxIterations: entry.manifest.resources.max_iterations,
        maxOutputTokens: modelConfig?.max_tokens ?? 4096,
        temperature: modelConfig?.temperature ?? 0.7,
        contextWindowTokens,
        clock,
        logger: runLogger,
        signal,
        emit,
        stream: options.emit !== undefined,
      });
    } catch (error) {
      // The user's message was accepted: keep it in the history even though the turn failed.
      await save(messages);
      throw error;
    }
    await save(outcome.messages);

    let costUsd = 0;
    let inputTokens = 0;
    let outputTokens = 0;
    for (const call of outcome.calls) {
      const cost = runtime.costs.estimateCost(call.model.provider, call.model.model, call);
      if (!cost.known) runLogger.debug({ model: modelName(call.model) }, 'no price known for this model; counted as free');
      costUsd += cost.costUsd;
      inputTokens += call.inputTokens;
      outputTokens += call.outputTokens;
      await store.usage.record({ agentId: entry.id, at: clock.now(), model: modelName(call.model), inputTokens: call.inputTokens, outputTokens: call.outputTokens, costUsd: cost.costUsd });
      await quotas.add(entry.id, call.inputTokens + call.outputTokens, cost.costUsd);
    }
    const result: TurnResult = {
      text: outcome.text,
      usage: { inputTokens, outputTokens },
      iterations: outcome.iterations,
      costUsd,
      model: modelName(outcome.model),
    };
    emit({ type: 'run-finish', result });
    return result;
  }

  return {
    async send(reference, message, options = {}) {
      const caller = options.caller ?? OWNER;
      const entry = registry.resolve(reference);
      authorize(entry, caller);
      if (entry.state !== 'running') throw new AgentStateError(`agent "${entry.name}" is suspended; resume it to send it messages`);
      await quotas.check(entry.id, entry.name, {
        maxTokensPerHour: entry.manifest.resources.max_tokens_per_hour,
        maxCostPerHour: entry.manifest.resources.max_cost_per_hour,
      });
      const runtime = parts.runtime;
      if (runtime === undefined) throw new ModuleUnavailableError('this kernel has no model runtime configured');
      if (entry.manifest.module !== 'builtin:chat') {
        throw new ModuleUnavailableError(`agent "${entry.name}" uses module "${entry.manifest.module}", which this Loom cannot run yet; use module = "builtin:chat"`);
      }
      // One turn at a time per agent, so two messages never interleave in one session.
      const previous = turns.get(entry.id) ?? Promise.resolve();
      const turn = previous.catch(() => undefined).then(() => runChat(runtime, entry, message, caller, options));
      turns.set(entry.id, turn);
      try {
        return await turn;
      } finally {
        if (turns.get(entry.id) === turn) turns.delete(entry.id);
      }
    },
  };
}

function defaultSystemPrompt(manifest: Manifest): string {
  return `You are ${manifest.name}${manifest.description === '' ? '' : `: ${manifest.description}`}.`;
}
