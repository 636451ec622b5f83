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
/** Parts of a request (list items, questions) at which the parts signal is full. */
export const PARTS_SATURATION_COUNT = 5;
/** Distinct reasoning words at which the reasoning signal is full. */
export const REASONING_SATURATION_COUNT = 3;
/** Tool count at which the tool signal is full. */
export const TOOL_SATURATION_COUNT = 10;
/** History depth (messages) at which the history signal is full. */
export const HISTORY_SATURATION_DEPTH = 20;

const FENCED_CODE = /```/;
// Code-like syntax outside fences: calls, braces with semicolons, arrows, declarations, markup.
const CODE_LIKE = /(\b(function|const|let|var|def|class|import|return|SELECT|FROM)\b.*[({=;:])|=>|\w+\([^)]*\)\s*[;{]|[{};]\s*$|<\/?[a-z]+[^>]*>/m;
// The parts of a request: list items (`1.`, `2)`, `-`, `*`, `•` at a line's start) and questions.
const LIST_ITEM = /^\s*(?:\d+[.)]|[-*•])\s+\S/gm;
const QUESTION = /\?(?=\s|$)/g;
// Words that ask for reasoning rather than recall, each counted once.
const REASONING_WORDS =
  /\b(analy[sz]\w*|compar\w*|design\w*|architect\w*|prove|proof|deriv\w*|optimi[sz]\w*|refactor\w*|debug\w*|trade-?offs?|step by step|evaluat\w*|algorithm\w*|implement\w*|diagnos\w*|why)\b/gi;

/** What the message itself asks for, in [0, 1]: length, code, parts, reasoning words. */
function messageComplexity(text: string): number {
  const length = Math.min(1, text.length / LENGTH_SATURATION_CHARS);
  const code = FENCED_CODE.test(text) ? 1 : CODE_LIKE.test(text) ? 0.6 : 0;
  const parts = Math.min(1, ((text.match(LIST_ITEM)?.length ?? 0) + (text.match(QUESTION)?.length ?? 0)) / PARTS_SATURATION_COUNT);
  const words = new Set((text.match(REASONING_WORDS) ?? []).map((word) => word.toLowerCase().slice(0, 6)));
  const reasoning = Math.min(1, words.size / REASONING_SATURATION_COUNT);
  return 0.45 * length + 0.25 * code + 0.15 * parts + 0.15 * reasoning;
}

/**
 * A complexity score in [0, 1] for a request: what its message asks for, raised by the context it
 * runs in. The message alone spans the whole range, so a first message with no tools can reach
 * any tier; the context (tools, history) can raise a score by at most half of what is left to 1,
 * never make a short chat `frontier`. `score = 1 − (1 − message) × (1 − context)`, where:
 *
 * | part    | signal    | weight | full at |
 * |---------|-----------|--------|---------|
 * | message | length    | 0.45   | {@link LENGTH_SATURATION_CHARS} characters, linear below |
 * | message | code      | 0.25   | a fenced block (```) gives 1; code-like syntax without fences gives 0.6 |
 * | message | parts     | 0.15   | {@link PARTS_SATURATION_COUNT} list items and questions |
 * | message | reasoning | 0.15   | {@link REASONING_SATURATION_COUNT} distinct words such as analyse, compare, design, prove, optimise, debug, trade-off, why |
 * | context | tools     | 0.25   | {@link TOOL_SATURATION_COUNT} tools, linear below |
 * | context | history   | 0.25   | {@link HISTORY_SATURATION_DEPTH} earlier messages, linear below |
 *
 * Examples (docs/agents.md has more): `hi there` scores 0.002 (fast); 600 characters of prose,
 * 0.14 (fast); the same length asking to analyse, compare and say why, in 9 questions, 0.44
 * (balanced); "Why does this fail? Debug it:" over a 750-character fenced block, 0.55 (smart); five
 * numbered asks (analyse, compare, optimise, trade-offs) over 1,950 characters with a fenced
 * block, 0.99 (frontier), each as a first message with no tools; a one-line question with 10
 * tools after 20 messages, 0.52 (smart).
 */
export function scoreComplexity(input: ComplexityInput): number {
  const message = messageComplexity(input.messageText);
  const tools = Math.min(1, Math.max(0, input.toolCount) / TOOL_SATURATION_COUNT);
  const history = Math.min(1, Math.max(0, input.historyDepth) / HISTORY_SATURATION_DEPTH);
  const context = 0.25 * tools + 0.25 * history;
  return Math.min(1, Math.max(0, 1 - (1 - message) * (1 - context)));
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
