/**
 * The one glob matcher of spec/01 ("Pattern Matching Rules"). `*` is the only special
 * character: it matches any run of characters, empty included, `/`, `.` and `:` included.
 * Every other character matches itself, case-sensitively. So a pattern without `*` is an exact
 * match, `*` alone matches anything, and `*.openai.com`, `/data/*` and `api.*.com` are the
 * suffix, prefix and middle wildcards of the spec; any number of `*` may appear.
 *
 * No regular expression is built from the pattern, so no pattern can change the matcher's
 * meaning or make it backtrack exponentially: both functions run in O(pattern × value) time.
 */

const STAR = '*';

/**
 * Whether `value` matches the glob `pattern` (see the module comment for the rules).
 *
 * @example
 * ```ts
 * matchesPattern('*.openai.com', 'api.openai.com'); // true
 * matchesPattern('*.openai.com', 'evilopenai.com'); // false
 * matchesPattern('/data/*', '/data/reports/q4.json'); // true
 * ```
 */
export function matchesPattern(pattern: string, value: string): boolean {
  let patternIndex = 0;
  let valueIndex = 0;
  let starIndex = -1;
  let starValueIndex = 0;
  // On a mismatch, let the most recent `*` swallow one more character and retry. Going back to
  // the latest `*` only is enough, since it can absorb whatever an earlier one would have; it
  // keeps the worst case at O(pattern × value).
  while (valueIndex < value.length) {
    const patternChar = pattern[patternIndex];
    if (patternChar === STAR) {
      starIndex = patternIndex;
      starValueIndex = valueIndex;
      patternIndex += 1;
    } else if (patternChar !== undefined && patternChar === value[valueIndex]) {
      patternIndex += 1;
      valueIndex += 1;
    } else if (starIndex >= 0) {
      patternIndex = starIndex + 1;
      starValueIndex += 1;
      valueIndex = starValueIndex;
    } else {
      return false;
    }
  }
  while (pattern[patternIndex] === STAR) {
    patternIndex += 1;
  }
  return patternIndex === pattern.length;
}

/**
 * Whether every string `narrower` matches is also matched by `wider`: the test for "a child's
 * grant stays inside its parent's".
 *
 * Sound: it never answers true when some string matches `narrower` but not `wider`. It matches
 * `wider` against the text of `narrower`, in which each `*` is a symbol that only a `*` of
 * `wider` may consume, so whatever text that `*` stands for, the same `*` of `wider` takes it.
 * For plain globs over unrestricted strings this is also exact, since a `*` of `narrower` may
 * stand for text `wider` never spells. Its false negatives, refused on the safe side, are
 * contrived: they need values drawn from a smaller alphabet than the patterns assume. If every
 * value were a run of `a`s, `a*` would cover `*a` (both match every non-empty run), yet
 * `patternCovers('a*', '*a')` is false.
 *
 * @example
 * ```ts
 * patternCovers('/data/*', '/data/reports/*'); // true
 * patternCovers('/data/*', '/*'); // false
 * patternCovers('*.com', 'api.*.com'); // true
 * ```
 */
export function patternCovers(wider: string, narrower: string): boolean {
  // A literal character of `wider` is never `*`, so it can never consume a `*` of `narrower`:
  // matching `wider` against `narrower` as plain text is exactly the match described above.
  return matchesPattern(wider, narrower);
}
