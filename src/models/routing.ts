/** The model tiers routing chooses between, most capable first. */
export const MODEL_TIERS = ['frontier', 'smart', 'balanced', 'fast'] as const;

/** A model tier. */
export type ModelTier = (typeof MODEL_TIERS)[number];

/** What routing looks at in a request. */
export interface ComplexityInput {
  /** The text of the user's message. */
  messageText: string;
  /** How many tools the agent may call. */
  toolCount: number;
  /** How many earlier messages the conversation holds. */
  historyDepth: number;
}

/** The `[routing]` thresholds of a manifest (see `RoutingSchema`). */
export interface RoutingThresholds {
  frontier_threshold: number;
  smart_threshold: number;
  balanced_threshold: number;
}

/** Message length (in characters) at which the length signal is full. */
export const LENGTH_SATURATION_CHARS = 2000;
/** Tool count at which the tool signal is full. */
export const TOOL_SATURATION_COUNT = 10;
/** History depth (messages) at which the history signal is full. */
export const HISTORY_SATURATION_DEPTH = 20;

const FENCED_CODE = /```/;
// Code-like syntax outside fences: calls, braces with semicolons, arrows, declarations, markup.
const CODE_LIKE = /(\b(function|const|let|var|def|class|import|return|SELECT|FROM)\b.*[({=;:])|=>|\w+\([^)]*\)\s*[;{]|[{};]\s*$|<\/?[a-z]+[^>]*>/m;

/**
 * A complexity score in [0, 1] for a request, the weighted sum of four signals, each in [0, 1]:
 *
 * | signal  | weight | full at |
 * |---------|--------|---------|
 * | length  | 0.35   | {@link LENGTH_SATURATION_CHARS} characters, linear below |
 * | code    | 0.25   | a fenced block (```) gives 1; code-like syntax without fences gives 0.6 |
 * | tools   | 0.20   | {@link TOOL_SATURATION_COUNT} tools, linear below |
 * | history | 0.20   | {@link HISTORY_SATURATION_DEPTH} earlier messages, linear below |
 *
 * A short chat message with no tools and no history scores near 0; a long message with a fenced
 * code block, many tools and a deep history scores 1.
 */
export function scoreComplexity(input: ComplexityInput): number {
  const length = Math.min(1, input.messageText.length / LENGTH_SATURATION_CHARS);
  const code = FENCED_CODE.test(input.messageText) ? 1 : CODE_LIKE.test(input.messageText) ? 0.6 : 0;
  const tools = Math.min(1, Math.max(0, input.toolCount) / TOOL_SATURATION_COUNT);
  const history = Math.min(1, Math.max(0, input.historyDepth) / HISTORY_SATURATION_DEPTH);
  const score = 0.35 * length + 0.25 * code + 0.2 * tools + 0.2 * history;
  return Math.min(1, Math.max(0, score));
}

/**
 * The tier for a complexity `score`: `frontier` at or above `frontier_threshold`, else `smart` at
 * or above `smart_threshold`, else `balanced` at or above `balanced_threshold`, else `fast`.
 */
export function pickTier(score: number, thresholds: RoutingThresholds): ModelTier {
  if (score >= thresholds.frontier_threshold) return 'frontier';
  if (score >= thresholds.smart_threshold) return 'smart';
  if (score >= thresholds.balanced_threshold) return 'balanced';
  return 'fast';
}
