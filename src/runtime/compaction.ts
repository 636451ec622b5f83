import type { ModelMessage } from 'ai';
import type { Logger } from '../contracts/index.ts';
import { QuotaExceededError, TokenBudgetExceededError } from '../errors/index.ts';
import { estimateHistoryTokens, type KnownTokens } from './session-repair.ts';

/** Messages kept verbatim after a compaction. */
export const COMPACTION_KEEP_LAST = 20;

/** Share of the context window past which the history is compacted. */
export const COMPACTION_THRESHOLD = 0.75;

/** The prefix of the message that replaces compacted history. */
export const SUMMARY_PREFIX = '[Summary of the earlier conversation]';

/** Options for {@link compactSession}. */
export interface CompactionOptions {
  contextWindowTokens: number;
  threshold?: number;
  keepLast?: number;
  /** The estimated tokens of the first messages, when the caller knows them. */
  knownTokens?: KnownTokens;
  /** Summarises the older messages; usually a call to the agent's own model. */
  summarize: (older: readonly ModelMessage[]) => Promise<string>;
  logger: Logger;
}

/** The history after compaction, and whether it changed. */
export interface CompactionResult {
  messages: ModelMessage[];
  compacted: boolean;
  /** Estimated tokens before and after. */
  tokensBefore: number;
  tokensAfter: number;
}

/** Where the kept tail starts: at least `keepLast` back, moved earlier so no tool result loses its call. */
function splitPoint(messages: readonly ModelMessage[], keepLast: number): number {
  let start = Math.max(0, messages.length - keepLast);
  // A tool message answers the assistant message before it: keep them together.
  while (start > 0 && messages[start]?.role === 'tool') start -= 1;
  return start;
}

/**
 * Compacts a history past `threshold` of the context window (spec/03): the older messages are
 * summarised by the model and replaced by one message, the last `keepLast` kept as they are,
 * never splitting a tool call from its result. The result is a new array (the caller swaps it
 * in at once, so a failure leaves the old history whole); when summarising fails, the failure is
 * logged and the history is returned unchanged.
 * @throws {QuotaExceededError} {TokenBudgetExceededError} when a budget refused the summary's
 *   model call: the turn's next call would be refused too, so the turn ends here.
 */
export async function compactSession(messages: readonly ModelMessage[], options: CompactionOptions): Promise<CompactionResult> {
  const tokensBefore = estimateHistoryTokens(messages, options.knownTokens);
  const unchanged = { messages: [...messages], compacted: false, tokensBefore, tokensAfter: tokensBefore };
  if (tokensBefore <= options.contextWindowTokens * (options.threshold ?? COMPACTION_THRESHOLD)) return unchanged;
  const start = splitPoint(messages, options.keepLast ?? COMPACTION_KEEP_LAST);
  if (start === 0) return unchanged;
  let summary: string;
  try {
    summary = await options.summarize(messages.slice(0, start));
  } catch (error) {
    if (error instanceof QuotaExceededError || error instanceof TokenBudgetExceededError) throw error;
    options.logger.warn({ err: error }, 'could not compact the session; carrying on with the full history');
    return unchanged;
  }
  const compacted: ModelMessage[] = [{ role: 'user', content: `${SUMMARY_PREFIX}\n${summary}` }, ...messages.slice(start)];
  // The summary is a user message; a kept tail that starts with one too would read as two turns.
  if (compacted[1]?.role === 'user') compacted.splice(1, 0, { role: 'assistant', content: 'Understood.' });
  const tokensAfter = estimateHistoryTokens(compacted);
  return { messages: compacted, compacted: true, tokensBefore, tokensAfter };
}

/** The instruction given to the model that writes the summary. */
export const SUMMARY_INSTRUCTION =
  "Summarise the conversation so far for your own later reference: the user's goals, decisions made, facts learned, tool results that matter, and open questions. Be concise and specific.";
