/** The outcome of {@link safeParseJson}. */
export type JsonParseResult = { ok: true; value: unknown } | { ok: false; message: string };

/**
 * Parses JSON from outside without throwing. The failure message is the parser's, which
 * names the position (line and column) of the problem.
 */
export function safeParseJson(text: string): JsonParseResult {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, message: error instanceof Error ? error.message : String(error) };
  }
}
