/**
 * The stability guidelines appended to every agent's system prompt, verbatim from the
 * kernel spec ("Agent Loop Stability").
 */
export const STABILITY_GUIDELINES = `STABILITY GUIDELINES
- If a tool call fails twice, try a different approach
- If you're repeating the same action, stop and reflect
- If you're unsure, ask the user instead of guessing
- If a task is blocked, report the blocker clearly
- Never retry the same failed operation more than 3 times`;

/**
 * Returns `systemPrompt` with {@link STABILITY_GUIDELINES} appended after a blank line, or
 * the guidelines alone when there is no prompt. A prompt that already ends with the
 * guidelines is returned unchanged, so applying it twice does not duplicate them.
 *
 * @example
 * withStabilityGuidelines('You are a researcher.');
 * // 'You are a researcher.\n\nSTABILITY GUIDELINES\n- If a tool call fails twice, …'
 */
export function withStabilityGuidelines(systemPrompt?: string): string {
  const prompt = systemPrompt?.trimEnd() ?? '';
  if (prompt === '') return STABILITY_GUIDELINES;
  if (prompt.endsWith(STABILITY_GUIDELINES)) return prompt;
  return `${prompt}\n\n${STABILITY_GUIDELINES}`;
}
