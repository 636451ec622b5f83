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

/** `path` without its trailing slashes (`/a/b//` → `/a/b`; `/` stays): clients that normalise URLs add one. */
export function trimTrailingSlashes(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.replace(/(.)\/+$/, '$1') : path;
}
