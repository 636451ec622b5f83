import type { LanguageModelV4 } from '@ai-sdk/provider';
import type * as AiModule from 'ai';
import type { LanguageModelUsage, ModelMessage, ToolResultPart, ToolSet } from 'ai';
import type { Clock, JsonValue, Logger, Tool, ToolAgent } from '../contracts/index.ts';
import { TokenBudgetExceededError } from '../errors/index.ts';
import {
  callWithFallback,
  delegatingModel,
  estimateCallInputTokens,
  estimateOutputTokens,
  type ModelResolver,
  type ModelTarget,
  planPromptCache,
} from '../models/index.ts';
import { loadAi } from './load-ai.ts';
import { toolJsonSchema } from './tool-schema.ts';
import type { AgentEventSink, TurnUsage } from './agent-event.ts';
import { MAX_CONTINUATIONS } from './constants.ts';
import { createLoopGuard } from './loop-guard.ts';
import { estimateHistoryTokens, type KnownTokens, repairSession, truncateToContextWindow } from './session-repair.ts';
import type { ToolCallRequest, ToolFilter, ToolFinishEntry, ToolRunner } from './tool-runner.ts';

/** The text sent when a reply was cut off by the token limit. */
export const CONTINUE_PROMPT = 'Please continue exactly where you stopped.';

/** What one run of the loop needs. */
export interface AgentLoopOptions {
  agent: ToolAgent;
  system: string;
  /** The history, ending with the new user message. */
  messages: readonly ModelMessage[];
  /**
   * How many leading `messages` are known to make a well-formed history (see
   * {@link AgentLoopOutcome.wellFormed}): the repair before each model call checks only the rest.
   */
  wellFormedPrefix?: number;
  /** The estimated tokens of the first `messages`, when known: the cut to the context window estimates only the rest. */
  knownTokens?: KnownTokens;
  /** The models to try, in order: the primary (or routed) model, then the fallbacks. */
  models: readonly ModelTarget[];
  resolver: ModelResolver;
  runner: ToolRunner;
  /**
   * The tools the model is shown; every call still goes through the runner. A function is read
   * again after each round of tool calls, so a tool forged in the turn is offered in the next step.
   */
  tools: readonly Tool<never>[] | (() => readonly Tool<never>[]);
  settings: Readonly<Record<string, Readonly<Record<string, JsonValue>>>>;
  /** The manifest's tool lists, enforced again on every call. */
  filter: ToolFilter;
  /** Tools whose calls wait for a human's approval. */
  approvalRequiredFor: readonly string[];
  maxIterations: number;
  maxOutputTokens: number;
  temperature: number;
  contextWindowTokens: number;
  clock: Clock;
  logger: Logger;
  signal: AbortSignal;
  emit: AgentEventSink;
  /** Stream model output (text deltas as events); without it each model call returns whole, which is cheaper. */
  stream: boolean;
  /**
   * Tokens (input + output, every model call added up) the run may use; passing it stops the run
   * after the model call that passed it, before its tool calls run. `label` names the budget in
   * the error, e.g. `activity "scrape" (token_budget.max = 4096)`.
   */
  tokenBudget?: { max: number; label: string };
  /**
   * Told of each model call as soon as it answered (with its usage and latency), in order, and of
   * a call cut off by the turn's end while it was answering (its usage estimated).
   */
  onModelCall?: (call: ModelCallUsage) => void;
  /**
   * Whether calls use the provider's prompt cache (see `planPromptCache`): on unless the
   * agent's `[model].cache` is false.
   */
  cache?: boolean;
  /** The conversation's key for the prompt cache (its session id); the agent's id when left out. */
  cacheKey?: string;
  /**
   * Context that changes from turn to turn (what the agent knows of the person it talks with):
   * sent at the start of the newest user message, after the cached prefix (tools, system prompt,
   * history), so that changing it leaves the prefix cached. Not kept in the history.
   */
  context?: string;
  /** Where the run commits each step as it happens (decision 0045); see {@link LoopJournal}. */
  journal?: LoopJournal;
  /**
   * What a resumed turn did before its daemon stopped (`messages` already ends with what it
   * said): the run goes on from there and runs again only what is safe to (see {@link LoopResume}).
   */
  resume?: LoopResume;
}

/**
 * Where a run reports its steps as they happen, each committed before the next starts (a turn's
 * journal, decision 0045): a turn its daemon stopped in resumes from them.
 */
export interface LoopJournal {
  /**
   * The model answered. `added` is every message the run added to the history since the reply it
   * reported last, this reply last. It may be held back and committed with the next step; a
   * final reply is committed by the turn's own commit.
   */
  modelReply(step: { added: ModelMessage[]; text: string; call: ModelCallUsage; toolCalls: readonly ToolCallRequest[] }): Promise<void>;
  /** A call passed every gate and is about to run; resolves once its start is committed. */
  toolStart(call: ToolCallRequest, tool: Tool<never>): Promise<void>;
  /** A call's result, with the audit record of a call that ran; resolves once committed. */
  toolResult(call: ToolCallRequest, result: { text: string; isError: boolean }, finished: ToolFinishEntry | undefined): Promise<void>;
  /** Commits what is held back (a call now waits for a person). */
  flush(): Promise<void>;
  /**
   * A call is about to wait for a person's decision on request `approvalId` (not stored yet):
   * commits it with what is held back, so that a resumed turn waits on that request again.
   */
  approval(call: ToolCallRequest, approvalId: string): Promise<void>;
}

/** What a resumed turn had done, from its journal. */
export interface LoopResume {
  /** Its model calls so far, in order. */
  calls: ModelCallUsage[];
  /** Its reply's text so far. */
  text: string;
  /** The model calls of the loop it had made (the next one is one more). */
  iterations: number;
  /**
   * The round of tool calls it stopped in: the calls its last reply asked for, the results it
   * had, and the calls that had started without a result, each with whether it was idempotent
   * (see `Tool.idempotent`) as its start recorded.
   */
  round?: { calls: ToolCallRequest[]; results: ToolResultPart[]; started: ReadonlyMap<string, boolean>; approvals?: ReadonlyMap<string, string> };
}

/** The result of a call that was running when the daemon stopped and is not safe to run again. */
export const UNKNOWN_OUTCOME_TEXT = 'the daemon stopped during this call; it may or may not have run. Check before doing it again';

/** Whether running `tool` again with `input` has the same effect as running it once (see `Tool.idempotent`). */
export function isIdempotent(tool: Tool<never> | undefined, input: unknown): boolean {
  const declared = tool?.idempotent;
  if (typeof declared === 'function') {
    try {
      return (declared as (input: unknown) => boolean)(input);
    } catch {
      return false;
    }
  }
  return declared === true;
}

const partialOutcomes = new WeakMap<object, PartialLoopOutcome>();

/**
 * What a failed run had done before it failed. When it was cancelled (its signal aborted), the
 * messages end with what the model had streamed of the step it was in (an assistant text
 * message), and a round of tool calls it was in is closed with the results of the calls that
 * ran and an error result for each that did not.
 */
export interface PartialLoopOutcome {
  messages: ModelMessage[];
  calls: ModelCallUsage[];
  /** The reply's text so far, the cut-off step's included. */
  text: string;
}

/** The messages and model calls a failed {@link runAgentLoop} got through, when `error` came from one. */
export function partialOutcomeOf(error: unknown): PartialLoopOutcome | undefined {
  return typeof error === 'object' && error !== null ? partialOutcomes.get(error) : undefined;
}

/** Usage of one model call, for cost accounting per model, and when it ran (on the loop's clock). */
export interface ModelCallUsage extends TurnUsage {
  model: ModelTarget;
  /** Of `inputTokens` (every input token), those read from the provider's prompt cache. */
  cacheReadTokens?: number;
  /** Of `inputTokens`, those written to the provider's prompt cache. */
  cacheWriteTokens?: number;
  /**
   * True when the call was cut off while it answered (the turn was cancelled) and reported no
   * usage: its tokens are estimated from what it was sent and what it had streamed.
   */
  estimated?: boolean;
  /** When the call was made, in ms since the epoch. */
  startedAt?: number;
  /** How long it took to answer (fallbacks tried included). */
  latencyMs?: number;
}

/** Text of the error result of a tool call that a turn ending early (cancelled, failed) never ran. */
export const NOT_RUN_TOOL_CALL_TEXT = 'not run: the turn ended before this call';

/** What the loop produced. */
export interface AgentLoopOutcome {
  /** The whole history after the run (the input plus what the run added). */
  messages: ModelMessage[];
  text: string;
  iterations: number;
  calls: ModelCallUsage[];
  /** The model that answered last. */
  model: ModelTarget;
  /**
   * How many leading `messages` are known to make a well-formed history: the next turn's
   * `wellFormedPrefix` for a history that starts with them.
   */
  wellFormed: number;
}

/** A call's tokens, cached input included. */
type StepUsage = Pick<ModelCallUsage, 'inputTokens' | 'outputTokens' | 'cacheReadTokens' | 'cacheWriteTokens'>;

interface StepOutcome {
  text: string;
  response: ModelMessage[];
  toolCalls: { toolCallId: string; toolName: string; input: unknown }[];
  finishReason: string;
  usage: StepUsage;
}

/** What the AI SDK reports of a call, as a step's usage: cached tokens only when there were any. */
function usageOf(usage: LanguageModelUsage): StepUsage {
  const cacheReadTokens = usage.inputTokenDetails.cacheReadTokens ?? 0;
  const cacheWriteTokens = usage.inputTokenDetails.cacheWriteTokens ?? 0;
  return {
    inputTokens: usage.inputTokens ?? 0,
    outputTokens: usage.outputTokens ?? 0,
    ...(cacheReadTokens > 0 ? { cacheReadTokens } : {}),
    ...(cacheWriteTokens > 0 ? { cacheWriteTokens } : {}),
  };
}

/** The tools in a fixed order (by name), so the cached prefix of a request does not change with the order they were registered in. */
function inFixedOrder(tools: readonly Tool<never>[]): Tool<never>[] {
  return [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

// A tool's JSON schema never changes, and building it is costly: build it once per tool.
const aiToolCache = new WeakMap<Tool<never>, ToolSet[string]>();

/** The AI SDK, loaded with the first turn: an idle daemon does not hold it. */
type AiSdk = typeof AiModule;

function toAiTools(ai: AiSdk, tools: readonly Tool<never>[]): ToolSet {
  const set: ToolSet = {};
  for (const tool of tools) {
    let converted = aiToolCache.get(tool);
    if (converted === undefined) {
      // No `execute` and no validation here: the tool runner validates and runs every call, so
      // a bad input becomes an error result the model can read rather than an SDK exception.
      converted = ai.tool({
        description: tool.description,
        inputSchema: ai.jsonSchema(toolJsonSchema(tool) as Parameters<AiSdk['jsonSchema']>[0]),
      });
      aiToolCache.set(tool, converted);
    }
    set[tool.name] = converted;
  }
  return set;
}

/**
 * The agent loop (spec/01 message flow, steps g–h): repair the history, call the model (with
 * fallback), run the tool calls it asks for through the tool runner, and repeat until it
 * answers without tools, the loop guard trips, or `maxIterations` model calls were made. A reply
 * cut off by the token limit is continued up to `MAX_CONTINUATIONS` times.
 */
export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentLoopOutcome> {
  const { emit } = options;
  const ai = await loadAi();
  const currentTools = (): readonly Tool<never>[] => (typeof options.tools === 'function' ? options.tools() : options.tools);
  const namesOf = (tools: readonly Tool<never>[]): string => tools.map((tool) => tool.name).join('\n');
  let shown = inFixedOrder(currentTools());
  let aiTools = toAiTools(ai, shown);
  const loopGuard = createLoopGuard();
  let messages = [...options.messages];
  let wellFormed = options.wellFormedPrefix ?? 0;
  let knownTokens = options.knownTokens;
  const calls: ModelCallUsage[] = [...(options.resume?.calls ?? [])];
  let text = options.resume?.text ?? '';
  const { journal } = options;
  // How many of `messages` the journal has (those it was resumed with included).
  let journaled = messages.length;
  let continuations = 0;
  let lastModel = options.models[0];
  if (lastModel === undefined) throw new Error('runAgentLoop needs at least one model');
  // What the model has streamed of the step under way: kept if the turn is cancelled mid-step.
  let streamed = '';
  const stepOptions: AgentLoopOptions = {
    ...options,
    emit: (event) => {
      if (event.type === 'text-delta') streamed += event.text;
      options.emit(event);
    },
  };
  // The model call answering now (its response began), to count if the turn ends inside it.
  let answering: { model: ModelTarget; inputTokens: number; startedAt: number } | undefined;
  // The last message of the previous call's request: the end of the prefix it cached.
  let previousEnd: ModelMessage | undefined;
  // The newest user message when the run began: per-turn context goes at its start.
  const turnMessage = options.messages.at(-1);
  // The round of tool calls under way, to close with results if the turn ends inside it.
  let round: { calls: readonly { toolCallId: string; toolName: string }[]; results: ToolResultPart[] } | undefined;

  /**
   * Runs the calls of a round the model asked for, in order, those with a result already (a
   * resumed round's) skipped; a call that had started when the daemon stopped runs again only
   * when it is idempotent, else its result says its outcome is unknown; a call that waited for a
   * person waits on the same request (`approvals`, by call id).
   */
  async function runRound(
    toolCalls: readonly ToolCallRequest[],
    results: ToolResultPart[],
    started: ReadonlyMap<string, boolean>,
    approvals?: ReadonlyMap<string, string>,
  ): Promise<{ hints: string[]; stop: string | undefined }> {
    round = { calls: toolCalls, results };
    const hints: string[] = [];
    let stop: string | undefined;
    const done = new Set(results.map((result) => result.toolCallId));
    for (const call of toolCalls) {
      if (done.has(call.toolCallId)) continue;
      // A cancelled turn starts no more calls.
      options.signal.throwIfAborted();
      emit({ type: 'tool-call', ...call });
      let result: { text: string; isError: boolean };
      let finished: ToolFinishEntry | undefined;
      if (started.get(call.toolCallId) === false) {
        result = { text: UNKNOWN_OUTCOME_TEXT, isError: true };
      } else {
        const resumeApproval = approvals?.get(call.toolCallId);
        const outcome = await options.runner.run(call, {
          agent: options.agent,
          filter: options.filter,
          approvalRequiredFor: options.approvalRequiredFor,
          emit:
            journal === undefined
              ? emit
              : (event) => {
                  // A question a tool puts to a person may wait long: what the turn said is committed first
                  // (a call's own approval request is committed before it is asked: `onApproval`).
                  if (event.type === 'approval-request') void journal.flush();
                  emit(event);
                },
          settings: options.settings,
          signal: options.signal,
          loopGuard,
          ...(journal === undefined
            ? {}
            : {
                onStart: (tool: Tool<never>) => journal.toolStart(call, tool),
                onApproval: (approvalId: string) => journal.approval(call, approvalId),
                holdFinish: true,
              }),
          ...(resumeApproval === undefined ? {} : { resumeApproval }),
        });
        result = { text: outcome.result.text, isError: outcome.result.isError === true };
        finished = outcome.finished;
        if (outcome.hint !== undefined) hints.push(outcome.hint);
        if (outcome.breakLoop !== undefined) stop = outcome.breakLoop;
      }
      // Shown before the journal commits it, so that the commit saves it with the stream (decision 0059).
      emit({ type: 'tool-result', toolCallId: call.toolCallId, toolName: call.toolName, text: result.text, isError: result.isError });
      await journal?.toolResult(call, result, finished);
      results.push({
        type: 'tool-result',
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        output: result.isError ? { type: 'error-text', value: result.text } : { type: 'text', value: result.text },
      });
    }
    messages.push({ role: 'tool', content: results });
    round = undefined;
    return { hints, stop };
  }

  /** After a round: the tools shown next, the loop guard's word; a reason to stop, when the run must end. */
  function afterRound(outcome: { hints: string[]; stop: string | undefined }, iteration: number): string | undefined {
    if (typeof options.tools === 'function') {
      const next = currentTools();
      if (namesOf(inFixedOrder(next)) !== namesOf(shown)) {
        shown = inFixedOrder(next);
        aiTools = toAiTools(ai, shown);
      }
    }
    const { hints, stop } = outcome;
    if (hints.length > 0) {
      emit({ type: 'phase', phase: 'loop-guard', detail: hints.join(' ') });
      messages.push({ role: 'user', content: hints.join('\n') });
    }
    if (stop !== undefined) {
      emit({ type: 'phase', phase: 'loop-guard', detail: stop });
      return `[stopped: ${stop}]`;
    }
    if (iteration >= options.maxIterations) {
      const note = `stopped after ${iteration} iterations ([resources].max_iterations = ${options.maxIterations})`;
      emit({ type: 'phase', phase: 'max-iterations', detail: note });
      return `[${note}]`;
    }
    return undefined;
  }

  try {
    const resumed = options.resume;
    if (resumed?.round !== undefined) {
      const ending = afterRound(
        await runRound(resumed.round.calls, [...resumed.round.results], resumed.round.started, resumed.round.approvals),
        resumed.iterations,
      );
      if (ending !== undefined)
        return { messages, text: `${text}${text === '' ? '' : '\n\n'}${ending}`, iterations: resumed.iterations, calls, model: lastModel, wellFormed };
    }
    for (let iteration = (resumed?.iterations ?? 0) + 1; ; iteration += 1) {
      // Repairs are kept in the history; the cut to the context window only shapes this request,
      // so the stored session never loses messages to it (compaction is what shortens a session).
      const repaired = repairSession(messages, { wellFormedPrefix: wellFormed });
      messages = repaired.messages;
      // What a repair changed is not re-checked as a prefix: the next call checks it whole.
      wellFormed = repaired.wellFormed ? messages.length : 0;
      knownTokens = { count: messages.length, tokens: estimateHistoryTokens(messages, repaired.wellFormed ? knownTokens : undefined) };
      const request = withContext(
        truncateToContextWindow(messages, { maxContextTokens: options.contextWindowTokens, knownTokens }).messages,
        turnMessage,
        options.context,
      );
      // The first call of a turn cached the history up to the message before the user's.
      const end = previousEnd === undefined ? request.length - 2 : request.indexOf(previousEnd);
      emit({ type: 'phase', phase: 'model-call', detail: `iteration ${iteration}` });
      const startedAt = options.clock.now();
      const { value: step, model } = await callWithFallback(
        options.models,
        (target, signal) => {
          streamed = '';
          answering = undefined;
          const call: CallRequest = {
            target,
            messages: request,
            previousEnd: end,
            tools: aiTools,
            signal,
            onAnswer: (inputTokens) => (answering = { model: target, inputTokens, startedAt }),
          };
          return (options.stream ? streamStep : generateStep)(ai, stepOptions, call);
        },
        { clock: options.clock, logger: options.logger, signal: options.signal },
      );
      streamed = '';
      answering = undefined;
      previousEnd = request.at(-1);
      lastModel = model;
      const modelCall: ModelCallUsage = { model, ...step.usage, startedAt, latencyMs: options.clock.now() - startedAt };
      calls.push(modelCall);
      options.onModelCall?.(modelCall);
      const budget = options.tokenBudget;
      if (budget !== undefined) {
        const inputTokens = calls.reduce((total, call) => total + call.inputTokens, 0);
        const outputTokens = calls.reduce((total, call) => total + call.outputTokens, 0);
        const used = inputTokens + outputTokens;
        if (used > budget.max) {
          messages.push(...step.response);
          emit({ type: 'phase', phase: 'token-budget', detail: `${used} tokens used, over the ${budget.max} of ${budget.label}` });
          throw new TokenBudgetExceededError(`stopped: ${budget.label} allows ${budget.max} tokens and ${used} were used`, {
            details: { max: budget.max, used, inputTokens, outputTokens },
          });
        }
      }
      messages.push(...step.response);
      text += step.text;
      if (journal !== undefined) {
        // A history the repair shortened is reported from where it now ends.
        const added = messages.slice(Math.min(journaled, messages.length - step.response.length));
        journaled = messages.length;
        await journal.modelReply({ added, text: step.text, call: modelCall, toolCalls: step.toolCalls });
      }

      if (step.toolCalls.length === 0) {
        if (step.finishReason === 'length' && continuations < MAX_CONTINUATIONS && iteration < options.maxIterations) {
          continuations += 1;
          emit({ type: 'phase', phase: 'continuation', detail: `continuation ${continuations} of ${MAX_CONTINUATIONS}` });
          messages.push({ role: 'user', content: CONTINUE_PROMPT });
          continue;
        }
        return { messages, text, iterations: iteration, calls, model: lastModel, wellFormed };
      }

      const ending = afterRound(await runRound(step.toolCalls, [], NONE_STARTED), iteration);
      if (ending !== undefined)
        return { messages, text: `${text}${text === '' ? '' : '\n\n'}${ending}`, iterations: iteration, calls, model: lastModel, wellFormed };
    }
  } catch (error) {
    // What the run did before it failed still counts: the caller records its usage and keeps
    // its messages (tools may have acted on the world). A round of tool calls is closed, so the
    // history stays well formed; a cancelled turn keeps what the model had said of its last step.
    if (round !== undefined) {
      const answered = new Set(round.results.map((result) => result.toolCallId));
      const notRun = round.calls
        .filter((call) => !answered.has(call.toolCallId))
        .map((call): ToolResultPart => ({
          type: 'tool-result',
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          output: { type: 'error-text', value: NOT_RUN_TOOL_CALL_TEXT },
        }));
      messages.push({ role: 'tool', content: [...round.results, ...notRun] });
    }
    // A call cut off while it answered was billed for its prompt and what it had written: it is
    // counted at an estimate, so a cancelled turn does not show it as free.
    if (answering !== undefined && options.signal.aborted) {
      const cutOff: ModelCallUsage = {
        model: answering.model,
        inputTokens: answering.inputTokens,
        outputTokens: estimateOutputTokens(streamed.length),
        estimated: true,
        startedAt: answering.startedAt,
        latencyMs: options.clock.now() - answering.startedAt,
      };
      calls.push(cutOff);
      options.onModelCall?.(cutOff);
    }
    const cut = options.signal.aborted && streamed.trim() !== '' ? streamed : '';
    if (cut !== '') messages.push({ role: 'assistant', content: [{ type: 'text', text: cut }] });
    // A value that is not an object cannot carry it (a signal aborted with a string, as the HTTP
    // server's is when the client goes away): it is thrown as an Error that can, with it as cause.
    const outcome = { messages, calls, text: text + cut };
    if (typeof error === 'object' && error !== null) {
      partialOutcomes.set(error, outcome);
      throw error;
    }
    const wrapped = new Error(String(error), { cause: error });
    partialOutcomes.set(wrapped, outcome);
    throw wrapped;
  }
}

/** A round of calls none of which ran before. */
const NONE_STARTED: ReadonlyMap<string, boolean> = new Map();

/** One model call of the loop: to which model, with what, and who to tell when it begins to answer. */
interface CallRequest {
  target: ModelTarget;
  messages: readonly ModelMessage[];
  /** Which of `messages` ended the previous call's request (-1 when none is known). */
  previousEnd: number;
  tools: ToolSet;
  signal: AbortSignal;
  /** Told, with the estimated input tokens, when the provider's streamed answer begins. */
  onAnswer: (inputTokens: number) => void;
}

/** `messages` with `context` at the start of `turnMessage` (when it is still there and a user's); `messages` itself when there is none. */
function withContext(messages: readonly ModelMessage[], turnMessage: ModelMessage | undefined, context: string | undefined): readonly ModelMessage[] {
  if (context === undefined || context === '' || turnMessage?.role !== 'user') return messages;
  const index = messages.indexOf(turnMessage);
  if (index === -1) return messages;
  const content = typeof turnMessage.content === 'string' ? [{ type: 'text' as const, text: turnMessage.content }] : turnMessage.content;
  const copy = [...messages];
  copy[index] = { ...turnMessage, content: [{ type: 'text', text: context }, ...content] };
  return copy;
}

/** `model` telling `onAnswer` when a streamed answer begins (the provider has then read the prompt). */
function answerWatched(model: LanguageModelV4, onAnswer: (inputTokens: number) => void): LanguageModelV4 {
  return delegatingModel(model, {
    async doStream(callOptions) {
      const result = await model.doStream(callOptions);
      onAnswer(estimateCallInputTokens(callOptions));
      return result;
    },
  });
}

/** What both kinds of model call send, prompt cache marks included. Retries are the fallback chain's, so the SDK makes none. */
function callSettings(options: AgentLoopOptions, call: CallRequest) {
  const model = answerWatched(options.resolver.resolve(call.target), call.onAnswer);
  const common = {
    model,
    tools: call.tools,
    maxRetries: 0,
    maxOutputTokens: options.maxOutputTokens,
    temperature: options.temperature,
    abortSignal: call.signal,
  };
  if (options.cache === false) return { ...common, system: options.system, messages: [...call.messages] };
  const names = Object.keys(call.tools);
  const plan = planPromptCache(call.target, {
    system: options.system,
    messages: call.messages,
    previousEnd: call.previousEnd,
    hasTools: names.length > 0,
    key: options.cacheKey ?? options.agent.id,
  });
  const lastName = names.at(-1);
  const lastTool = lastName === undefined ? undefined : call.tools[lastName];
  const tools =
    plan.lastToolOptions === undefined || lastName === undefined || lastTool === undefined
      ? call.tools
      : { ...call.tools, [lastName]: { ...lastTool, providerOptions: plan.lastToolOptions } };
  return {
    ...common,
    tools,
    system: plan.system,
    messages: plan.messages,
    ...(plan.providerOptions === undefined ? {} : { providerOptions: plan.providerOptions }),
  };
}

/** One model call, streamed: text deltas are emitted as they arrive. */
async function streamStep(ai: AiSdk, options: AgentLoopOptions, call: CallRequest): Promise<StepOutcome> {
  const result = ai.streamText({
    ...callSettings(options, call),
    // Errors arrive as `error` parts and are thrown below, for the fallback chain to judge.
    onError: () => undefined,
  });
  let text = '';
  const toolCalls: StepOutcome['toolCalls'] = [];
  let finishReason = 'unknown';
  let usage: StepUsage = { inputTokens: 0, outputTokens: 0 };
  for await (const part of result.fullStream) {
    switch (part.type) {
      case 'text-delta':
        text += part.text;
        options.emit({ type: 'text-delta', text: part.text });
        break;
      case 'tool-call':
        toolCalls.push({ toolCallId: part.toolCallId, toolName: part.toolName, input: part.input });
        break;
      case 'finish':
        finishReason = part.finishReason;
        usage = usageOf(part.totalUsage);
        break;
      case 'error':
        throw part.error;
      default:
        break;
    }
  }
  const response = await result.response;
  return { text, response: response.messages, toolCalls, finishReason, usage };
}

/** One model call, returned whole. */
async function generateStep(ai: AiSdk, options: AgentLoopOptions, call: CallRequest): Promise<StepOutcome> {
  const result = await ai.generateText(callSettings(options, call));
  return {
    text: result.text,
    response: result.response.messages,
    toolCalls: result.toolCalls.map((toolCall) => ({ toolCallId: toolCall.toolCallId, toolName: toolCall.toolName, input: toolCall.input as unknown })),
    finishReason: result.finishReason,
    usage: usageOf(result.usage),
  };
}
