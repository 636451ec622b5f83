/**
 * The directory to watch for a glob: the part of `pattern` before its first `*`, cut back to
 * the last `/`. A pattern without `/` is relative to the working directory (`.`).
 *
 * @example
 * ```ts
 * globDirectory('/data/inbox/*.json'); // "/data/inbox"
 * globDirectory('/data/in*'); // "/data"
 * globDirectory('/data/report.json'); // "/data"
 * ```
 */
export function globDirectory(pattern: string): string {
  const star = pattern.indexOf('*');
  const fixed = star === -1 ? pattern : pattern.slice(0, star);
  const slash = fixed.lastIndexOf('/');
  if (slash === -1) return '.';
  if (slash === 0) return '/';
  return fixed.slice(0, slash);
}
