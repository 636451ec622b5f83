/** The agent loop's stability layers: loop guard, session repair, output truncation, guidelines. */
export { canonicalJson } from './canonical-json.ts';
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
  estimateMessageTokens,
  fixToolCallReferences,
  HISTORY_TRUNCATED_TEXT,
  INTERRUPTED_TOOL_CALL_TEXT,
  mergeConsecutiveSameRole,
  removeEmptyMessages,
  repairSession,
  truncateToContextWindow,
  validateContentBlocks,
} from './session-repair.ts';
export type { RepairPhaseResult, SessionRepairOptions, SessionRepairResult } from './session-repair.ts';
export { STABILITY_GUIDELINES, withStabilityGuidelines } from './stability-guidelines.ts';
export { TOOL_OUTPUT_MAX_CHARS, truncateToolOutput } from './truncate-tool-output.ts';
