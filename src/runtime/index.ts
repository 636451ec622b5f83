/**
 * The agent runtime: the loop, the tool runner, and the loop's stability layers (loop guard,
 * session repair, output truncation, guidelines, compaction).
 */
export type { AgentEvent, AgentEventSink, TurnResult } from './agent-event.ts';
export { isIdempotent, NOT_RUN_TOOL_CALL_TEXT, partialOutcomeOf, runAgentLoop, UNKNOWN_OUTCOME_TEXT } from './agent-loop.ts';
export type { AgentLoopOptions, LoopJournal, LoopResume, ModelCallUsage } from './agent-loop.ts';
export { canonicalJson } from './canonical-json.ts';
export { loadAi } from './load-ai.ts';
export { checkToolInput, toolJsonSchema } from './tool-schema.ts';
export { formatCount } from './format-count.ts';
export { compactSession, SUMMARY_PREFIX } from './compaction.ts';
export { generateReply, generateStructured, summarizeMessages } from './model-call.ts';
export type { ModelCallSettings } from './model-call.ts';
export type { CompactionOptions } from './compaction.ts';
export { DEFAULT_TOOL_TIMEOUT_MS, MAX_CONTINUATIONS } from './constants.ts';
export {
  createLoopGuard,
  LOOP_GUARD_BLOCK_AT,
  LOOP_GUARD_BREAK_AT,
  LOOP_GUARD_PING_PONG_BLOCK_AT,
  LOOP_GUARD_PING_PONG_WARN_AT,
  LOOP_GUARD_WARN_AT,
} from './loop-guard.ts';
export type { LoopGuard, LoopGuardOptions, LoopGuardVerdict } from './loop-guard.ts';
export {
  CONVERSATION_CONTINUES_TEXT,
  dropOrphanedToolResults,
  ensureAlternation,
  estimateHistoryTokens,
  estimateMessageTokens,
  fixToolCallReferences,
  HISTORY_TRUNCATED_TEXT,
  INTERRUPTED_TOOL_CALL_TEXT,
  isWellFormed,
  mergeConsecutiveSameRole,
  removeEmptyMessages,
  repairSession,
  truncateToContextWindow,
  validateContentBlocks,
} from './session-repair.ts';
export type { KnownTokens, SessionRepairOptions } from './session-repair.ts';
export { STABILITY_GUIDELINES, withStabilityGuidelines } from './stability-guidelines.ts';
export { TOOL_OUTPUT_MAX_CHARS, truncateToolOutput } from './truncate-tool-output.ts';
export { createToolRunner } from './tool-runner.ts';
export { TaintTracker } from './taint/taint-tracker.ts';
export type { TaintSettings } from './taint/taint-tracker.ts';
export type { TaintSource } from './taint/untrusted-text.ts';
export { linkAbort } from './link-abort.ts';
export type {
  ToolAuditEntry,
  ToolFinishEntry,
  ToolCallOptions,
  ToolCallFailure,
  ToolCallOutcome,
  ToolCallRequest,
  ToolFilter,
  ToolRunner,
  ToolRunnerOptions,
} from './tool-runner.ts';
