/** A logged line of a module's stderr is cut after this many characters (WebAssembly and Python alike). */
export const STDERR_LINE_CHARS = 1000;

/**
 * `line` cut after {@link STDERR_LINE_CHARS} characters, with a note of how many more it had: a
 * line of a module's stderr as Loom logs it. Imports nothing, so the WebAssembly worker can load it.
 */
export function cutLine(line: string): string {
  return line.length > STDERR_LINE_CHARS ? `${line.slice(0, STDERR_LINE_CHARS)}… (${line.length - STDERR_LINE_CHARS} more characters)` : line;
}
