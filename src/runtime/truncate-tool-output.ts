import { formatCount } from './format-count.ts';
/**
 * The hard cap on tool output kept for the model, in UTF-16 code units (JavaScript string
 * length, "characters").
 */
export const TOOL_OUTPUT_MAX_CHARS = 50_000;

/**
 * Caps tool output at `maxChars` characters so one tool cannot flood the context window.
 *
 * Sizes are counted in UTF-16 code units (`string.length`), not UTF-8 bytes, and the marker
 * says "characters" accordingly (the spec's example says "bytes"; ours is honest about the
 * unit). Text at or under the cap is returned unchanged. Longer text keeps its first
 * `maxChars` characters, one fewer when the cut would split a surrogate pair (an emoji,
 * say), followed by a blank line and a marker that gives both sizes with thousands
 * separators. The marker comes on top of the cap.
 *
 * Throws a `RangeError` when `maxChars` is not a non-negative integer.
 *
 * @example
 * truncateToolOutput('x'.repeat(125_432));
 * // 'xxx…x\n\n[Output truncated: 125,432 characters → 50,000 characters]'
 */
export function truncateToolOutput(text: string, maxChars: number = TOOL_OUTPUT_MAX_CHARS): string {
  if (!Number.isInteger(maxChars) || maxChars < 0) {
    throw new RangeError(`cannot truncate tool output: maxChars must be a non-negative integer, got ${String(maxChars)}`);
  }
  if (text.length <= maxChars) return text;
  let end = maxChars;
  // Cutting between a high and a low surrogate would leave a lone surrogate, which is not
  // valid Unicode and which some providers reject outright.
  if (end > 0 && isHighSurrogate(text.charCodeAt(end - 1))) end -= 1;
  const marker = `[Output truncated: ${formatCount(text.length)} characters → ${formatCount(end)} characters]`;
  return `${text.slice(0, end)}\n\n${marker}`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
