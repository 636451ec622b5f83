/**
 * `line` cut after `chars` characters, with a note of how many more it had: a line of a module's
 * stderr as Loom logs it (WebAssembly and Python alike). Imports nothing, so the WebAssembly
 * worker can load it.
 */
export function cutLine(line: string, chars: number): string {
  return line.length > chars ? `${line.slice(0, chars)}… (${line.length - chars} more characters)` : line;
}
