/**
 * `text` percent-decoded as `decodeURIComponent` does, or `undefined` when its encoding is
 * malformed (`%E0%A4%A`), which `decodeURIComponent` throws on.
 */
export function safeDecodeUriComponent(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
