/**
 * The agent runtime: the loop, the tool runner, and the loop's stability layers (loop guard,
 * session repair, output truncation, guidelines, compaction).
 */
export type { AgentEvent, AgentEventSink, RunPhase, TurnResult, TurnUsage } from './agent-event.ts';
export { CONTINUE_PROMPT, isIdempotent, NOT_RUN_TOOL_CALL_TEXT, partialOutcomeOf, runAgentLoop, UNKNOWN_OUTCOME_TEXT } from './agent-loop.ts';
export type { AgentLoopOptions, AgentLoopOutcome, LoopJournal, LoopResume, ModelCallUsage, PartialLoopOutcome } from './agent-loop.ts';
export { canonicalJson } from './canonical-json.ts';
export { loadAi } from './load-ai.ts';
export { checkToolInput, toolJsonSchema } from './tool-schema.ts';
export { formatCount } from './format-count.ts';
export { COMPACTION_KEEP_LAST, COMPACTION_THRESHOLD, compactSession, SUMMARY_INSTRUCTION, SUMMARY_PREFIX } from './compaction.ts';
export type { CompactionOptions, CompactionResult } from './compaction.ts';
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
  CHARS_PER_TOKEN,
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
export type { KnownTokens, RepairPhaseResult, SessionRepairOptions, SessionRepairResult } from './session-repair.ts';
export { STABILITY_GUIDELINES, withStabilityGuidelines } from './stability-guidelines.ts';
export { TOOL_OUTPUT_MAX_CHARS, truncateToolOutput } from './truncate-tool-output.ts';
export { createToolRunner } from './tool-runner.ts';
export { DEFAULT_TAINT_ACTIONS, describeTaint, MAX_REMEMBERED_FILES, TAINT_SINKS, TaintTracker } from './taint/taint-tracker.ts';
export type { TaintAction, TaintFinding, TaintSettings, TaintSink, TaintTool } from './taint/taint-tracker.ts';
export { CallArgument, normaliseText, TAINT_RUN_LENGTH, TAINT_WHOLE_LENGTH, UntrustedText } from './taint/untrusted-text.ts';
export type { TaintSource } from './taint/untrusted-text.ts';
export { linkAbort } from './link-abort.ts';
export type { ApprovalGate, TaintAuditEntry, ToolAuditEntry, ToolFinishEntry, ToolCallOptions, ToolCallFailure, ToolCallOutcome, ToolCallRequest, ToolFilter, ToolRunner, ToolRunnerOptions } from './tool-runner.ts';
