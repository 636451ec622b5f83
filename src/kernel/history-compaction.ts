import type { ModelMessage } from 'ai';
import type { Clock, Logger } from '../contracts/index.ts';
import type { ModelResolver, ModelTarget } from '../models/index.ts';
import { type AgentEventSink, compactSession, type KnownTokens, type ModelCallUsage, summarizeMessages } from '../runtime/index.ts';
import type { AgentEntry } from './agent-entry.ts';
import type { AgentRuntime } from './agent-runtime.ts';
import { contextWindowOf } from './model-choice.ts';

/** What a turn's history is compacted with (see {@link compactHistory}). */
export interface CompactionRequest {
  runtime: AgentRuntime;
  entry: AgentEntry;
  clock: Clock;
  /** The model the turn plans for (its context window), which writes the summary too. */
  model: ModelTarget;
  /** What the summary call resolves its model through (the turn's metered resolver). */
  resolver: ModelResolver;
  signal: AbortSignal;
  emit: AgentEventSink;
  logger: Logger;
  /** Receives the summary call's usage: it is paid for like any other. */
  calls: ModelCallUsage[];
  knownTokens?: KnownTokens;
}

/**
 * The history as a turn sends it: compacted past the agent's `[compaction]` threshold (spec/03),
 * the summary call paid for like any other, a `compaction` phase announced; `messages` itself
 * when it was not compacted.
 */
export async function compactHistory(messages: ModelMessage[], request: CompactionRequest): Promise<ModelMessage[]> {
  const { runtime, entry, model } = request;
  const settings = entry.manifest.compaction;
  if (!settings.enabled) return messages;
  const compaction = await compactSession(messages, {
    contextWindowTokens: contextWindowOf(runtime, entry, model),
    threshold: settings.threshold,
    keepLast: settings.keep_last_n,
    summarize: (older) => summarize(request, model, older),
    logger: request.logger,
    ...(request.knownTokens === undefined ? {} : { knownTokens: request.knownTokens }),
  });
  if (!compaction.compacted) return messages;
  request.emit({ type: 'phase', phase: 'compaction', detail: `history compacted from ~${compaction.tokensBefore} to ~${compaction.tokensAfter} tokens` });
  return compaction.messages;
}

/** A summary of `older` by `model`, paid for like any other call (its usage goes to `turn.calls`). */
export function summarize(
  turn: Pick<CompactionRequest, 'resolver' | 'clock' | 'signal' | 'calls'>,
  model: ModelTarget,
  older: readonly ModelMessage[],
): Promise<string> {
  return summarizeMessages({ resolver: turn.resolver, model, clock: turn.clock, signal: turn.signal, onCall: (used) => turn.calls.push(used) }, older);
}
