import type { SharedV4ProviderOptions } from '@ai-sdk/provider';
import type { ModelMessage, SystemModelMessage } from 'ai';
import type { ModelTarget } from './resolve-model.ts';

/** Provider options as the AI SDK takes them: per provider, its own settings. */
export type CallProviderOptions = SharedV4ProviderOptions;

/** Anthropic's limit on `cache_control` breakpoints in one request. */
export const MAX_ANTHROPIC_CACHE_BREAKPOINTS = 4;

const EPHEMERAL = { type: 'ephemeral' } as const;
const ANTHROPIC_BREAKPOINT: CallProviderOptions = { anthropic: { cacheControl: EPHEMERAL } };

/** What a model call asks of the provider's prompt cache (see {@link planPromptCache}). */
export interface PromptCachePlan {
  /** The system prompt as sent: with a breakpoint on Anthropic. */
  system: string | SystemModelMessage;
  /** The messages as sent: copies of the ones given, those marked as breakpoints with the mark added. */
  messages: ModelMessage[];
  /** Options for the whole call (OpenAI's `prompt_cache_key`); undefined when there are none. */
  providerOptions: CallProviderOptions | undefined;
  /** Options for the last tool offered (an Anthropic breakpoint after the tools); undefined when none. */
  lastToolOptions: CallProviderOptions | undefined;
}

/** What {@link planPromptCache} plans for. */
export interface PromptCacheRequest {
  system: string;
  messages: readonly ModelMessage[];
  /**
   * Which of `messages` was the last one of the previous model call of this conversation (the
   * end of what was cached then): a breakpoint there lets the provider find the cached prefix
   * however many blocks the new messages add. -1 when unknown.
   */
  previousEnd: number;
  /** Whether any tools are offered (the last gets a breakpoint). */
  hasTools: boolean;
  /** The conversation's key (its session): OpenAI routes requests with one key to one cache. */
  key: string;
}

/**
 * How a model call uses the provider's prompt cache: what is marked in its request so the
 * provider caches its stable prefix and reads it back on the next call.
 *
 * - **Anthropic** caches only up to `cache_control` breakpoints, four at most. They go after the
 *   tools, after the system prompt, on the message that ended the previous call of the
 *   conversation and on the last message: tools, system prompt and history are read from the
 *   cache, and what the new call adds is written for the next.
 * - **OpenAI** caches every long prefix by itself; `prompt_cache_key` (the conversation's key)
 *   sends the requests of one conversation to the same cache.
 * - **OpenRouter** passes a top-level `cache_control` on to Anthropic models it serves (others
 *   cache by themselves). Other OpenAI-compatible servers (Groq, Ollama, vLLM, llama.cpp) cache
 *   a repeated prefix by themselves where they can and take no option for it, and a strict one
 *   refuses fields it does not know, so nothing is sent to them.
 *
 * The request is only marked: nothing that changes per call may stand before a breakpoint, which
 * is the caller's to keep (tools in a fixed order, per-turn context after the history).
 *
 * @example
 * const plan = planPromptCache(target, { system, messages, previousEnd: -1, hasTools: true, key: sessionId });
 * generateText({ model, system: plan.system, messages: plan.messages, providerOptions: plan.providerOptions, ... });
 */
export function planPromptCache(target: ModelTarget, request: PromptCacheRequest): PromptCachePlan {
  const plain: PromptCachePlan = { system: request.system, messages: [...request.messages], providerOptions: undefined, lastToolOptions: undefined };
  switch (target.provider) {
    case 'anthropic':
      return anthropicPlan(request);
    case 'openai':
      return { ...plain, providerOptions: { openai: { promptCacheKey: request.key } } };
    case 'openrouter':
      return target.model.startsWith('anthropic/') ? { ...plain, providerOptions: { openrouter: { cache_control: EPHEMERAL } } } : plain;
    default:
      return plain;
  }
}

function anthropicPlan(request: PromptCacheRequest): PromptCachePlan {
  const { messages } = request;
  const marked = new Set<number>();
  const last = messages.length - 1;
  // The tools and the system prompt take one breakpoint each; the messages get the rest.
  const forMessages = MAX_ANTHROPIC_CACHE_BREAKPOINTS - (request.hasTools ? 2 : 1);
  if (last >= 0) marked.add(last);
  if (request.previousEnd >= 0 && request.previousEnd < last && marked.size < forMessages) marked.add(request.previousEnd);
  return {
    system: request.system === '' ? request.system : { role: 'system', content: request.system, providerOptions: ANTHROPIC_BREAKPOINT },
    messages: messages.map((message, index) => (marked.has(index) ? withBreakpoint(message) : message)),
    providerOptions: undefined,
    lastToolOptions: request.hasTools ? ANTHROPIC_BREAKPOINT : undefined,
  };
}

/** A copy of `message` marked as a breakpoint; its own provider options (Loom's metadata) are kept. */
function withBreakpoint(message: ModelMessage): ModelMessage {
  const own = message.providerOptions ?? {};
  return { ...message, providerOptions: { ...own, anthropic: { ...(own['anthropic'] ?? {}), cacheControl: EPHEMERAL } } };
}
