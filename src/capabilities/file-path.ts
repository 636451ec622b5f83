import { matchesPattern, patternCovers } from './pattern.ts';

/**
 * File capabilities (`file_read`, `file_write`): values and patterns are POSIX paths, compared
 * after normalising, so `/data/../etc/passwd` is `/etc/passwd` and does not match `/data/*`.
 * Only absolute paths are values: a relative one depends on a working directory this check
 * cannot see, so it is denied; the tool resolves it first.
 */

/**
 * The normal form of an absolute path: no empty, `.` or `..` segments, no trailing slash.
 * `undefined` when the path is not absolute or holds a NUL (which the OS would cut it at).
 * `..` at the root stays at the root, as POSIX resolves it.
 */
export function normalizeFilePath(path: string): string | undefined {
  if (!path.startsWith('/') || path.includes('\0')) {
    return undefined;
  }
  const segments: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '..') {
      segments.pop();
    } else if (segment !== '' && segment !== '.') {
      segments.push(segment);
    }
  }
  return `/${segments.join('/')}`;
}

/**
 * The normal form of a file pattern, or `undefined` for a pattern that grants nothing: one that
 * is neither absolute nor led by `*` (so `*` alone, "any file", stays valid), and one where
 * `..` follows a segment holding `*`. That `*` may span several segments, so which one `..`
 * cancels is unknowable; refusing is the only safe reading.
 */
export function normalizeFilePattern(pattern: string): string | undefined {
  const isAbsolute = pattern.startsWith('/');
  if ((!isAbsolute && !pattern.startsWith('*')) || pattern.includes('\0')) {
    return undefined;
  }
  const segments: string[] = [];
  for (const segment of pattern.split('/')) {
    if (segment === '..') {
      // A pattern led by `*` has a `*` in its first segment, so it never reaches the root here.
      if (segments.pop()?.includes('*') === true) {
        return undefined;
      }
    } else if (segment !== '' && segment !== '.') {
      segments.push(segment);
    }
  }
  const joined = segments.join('/');
  return isAbsolute ? `/${joined}` : joined;
}

/**
 * What is wrong with a file pattern, for a message, or `undefined` when `normalizeFilePattern`
 * accepts it.
 *
 * @example
 * ```ts
 * filePatternProblem('data/*'); // 'expected an absolute path or one starting with "*", such as "/data/*", got "data/*"'
 * ```
 */
export function filePatternProblem(pattern: string): string | undefined {
  if (normalizeFilePattern(pattern) !== undefined) {
    return undefined;
  }
  const got = JSON.stringify(pattern);
  if (pattern.includes('\0')) {
    return `expected a path without a NUL character, got ${got}`;
  }
  if (!pattern.startsWith('/') && !pattern.startsWith('*')) {
    return `expected an absolute path or one starting with "*", such as "/data/*", got ${got}`;
  }
  return `expected no ".." after a segment holding "*" (that "*" may span several folders), got ${got}`;
}

/** Whether the file `path` matches the file `pattern`, both normalised. Malformed ones never match. */
export function matchesFilePath(pattern: string, path: string): boolean {
  const normalPattern = normalizeFilePattern(pattern);
  const normalPath = normalizeFilePath(path);
  return normalPattern !== undefined && normalPath !== undefined && matchesPattern(normalPattern, normalPath);
}

/** Whether the file pattern `wider` covers `narrower`, both normalised. A malformed one covers nothing and is covered by nothing. */
export function filePatternCovers(wider: string, narrower: string): boolean {
  const normalWider = normalizeFilePattern(wider);
  const normalNarrower = normalizeFilePattern(narrower);
  return normalWider !== undefined && normalNarrower !== undefined && patternCovers(normalWider, normalNarrower);
}
