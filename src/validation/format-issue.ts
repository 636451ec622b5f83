import type { z } from 'zod';

/**
 * How a field path is written: `toml` for our own files (`[schedule].mode`,
 * `fallback_models[0].provider`), `json` for request bodies (`schedule.mode`).
 */
export type PathStyle = 'toml' | 'json';

/** Options for {@link formatIssue}. */
export interface FormatIssueOptions {
  style: PathStyle;
  /** The keys an object at `path` may hold, for "did you mean" hints on unknown keys. */
  knownKeys?: (path: readonly PropertyKey[]) => readonly string[] | undefined;
  /** Extra advice for an unknown key, e.g. where it probably belongs. */
  unknownKeyHint?: (key: string, path: readonly PropertyKey[]) => string | undefined;
}

const BARE_KEY = /^[A-Za-z0-9_-]+$/;

function quoteKey(key: string): string {
  return BARE_KEY.test(key) ? key : JSON.stringify(key);
}

/**
 * Writes a field path the way a user would look for it in their file.
 * @example formatPath(['schedule', 'mode'], 'toml') // "[schedule].mode"
 */
export function formatPath(path: readonly PropertyKey[], style: PathStyle): string {
  const parts = path.map((segment) => (typeof segment === 'number' ? segment : quoteKey(String(segment))));
  if (style === 'json') {
    return parts.map((part, index) => (typeof part === 'number' ? `[${part}]` : index === 0 ? part : `.${part}`)).join('');
  }
  // TOML: the leading run of keys before the last key (and before any array index) is a table.
  const firstIndex = parts.findIndex((part) => typeof part === 'number');
  const keysEnd = firstIndex === -1 ? parts.length : firstIndex;
  const tableEnd = Math.max(keysEnd - 1, 0);
  const table = parts.slice(0, tableEnd);
  const rest = parts.slice(tableEnd);
  const tail = rest.map((part, index) => (typeof part === 'number' ? `[${part}]` : index === 0 ? part : `.${part}`)).join('');
  if (table.length === 0) return tail;
  return `[${table.join('.')}]${tail === '' ? '' : `.${tail}`}`;
}

/** Describes a value as a user would name it in a TOML or JSON file. */
export function describeValue(value: unknown, style: PathStyle = 'toml'): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return 'a date';
  return style === 'toml' ? 'a table' : 'an object';
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  array: 'an array',
  object: 'a table',
  record: 'a table',
};

function expectedType(expected: string, style: PathStyle): string {
  if (expected === 'object' || expected === 'record') return style === 'toml' ? 'a table' : 'an object';
  return TYPE_NAMES[expected] ?? expected;
}

/** The Levenshtein distance between two short strings. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The known key closest to `key`, when it is close enough to be a likely typo. */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 3)) ? best : undefined;
}

function bound(issue: { minimum?: unknown; maximum?: unknown; inclusive?: boolean }, side: 'min' | 'max'): string {
  const value = side === 'min' ? issue.minimum : issue.maximum;
  const operator = side === 'min' ? (issue.inclusive === false ? '>' : '>=') : issue.inclusive === false ? '<' : '<=';
  return `${operator} ${String(value)}`;
}

function sizeMessage(issue: z.core.$ZodIssueTooSmall | z.core.$ZodIssueTooBig, style: PathStyle): string {
  const side = issue.code === 'too_small' ? 'min' : 'max';
  const got = describeValue(issue.input, style);
  switch (issue.origin) {
    case 'string':
      if (issue.code === 'too_small' && issue.minimum === 1) return `expected a non-empty string, got ${got}`;
      return `expected a string of length ${bound(issue, side)}, got ${got}`;
    case 'array':
    case 'set':
      return `expected ${bound(issue, side)} items, got ${Array.isArray(issue.input) ? issue.input.length : got}`;
    default:
      return `expected a number ${bound(issue, side)}, got ${got}`;
  }
}

/**
 * Turns zod issues into lines of the form `<path>: <what was expected>, got <what was found>`.
 * An issue about several unknown keys gives one line per key.
 */
export function formatIssue(issue: z.core.$ZodIssue, options: FormatIssueOptions): string[] {
  const { style } = options;
  const at = (path: readonly PropertyKey[], text: string): string => {
    const where = formatPath(path, style);
    return where === '' ? text : `${where}: ${text}`;
  };
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => {
        const known = options.knownKeys?.(issue.path) ?? [];
        const suggestion = closestKey(key, known);
        const hint = options.unknownKeyHint?.(key, issue.path);
        const advice = suggestion === undefined ? (hint ?? (known.length > 0 ? `expected one of ${known.join(', ')}` : '')) : `did you mean "${suggestion}"?`;
        return at([...issue.path, key], `unknown key${advice === '' ? '' : `, ${advice}`}`);
      });
    case 'invalid_value': {
      const values = issue.values.map((value) => (typeof value === 'string' ? value : String(value)));
      const choices = values.length === 1 ? `${JSON.stringify(issue.values[0])}` : `one of ${values.join(', ')}`;
      return [at(issue.path, issue.input === undefined ? `missing, expected ${choices}` : `expected ${choices}, got ${describeValue(issue.input, style)}`)];
    }
    case 'invalid_type': {
      const expected = expectedType(issue.expected, style);
      return [at(issue.path, issue.input === undefined ? `missing, expected ${expected}` : `expected ${expected}, got ${describeValue(issue.input, style)}`)];
    }
    case 'too_small':
    case 'too_big':
      return [at(issue.path, sizeMessage(issue, style))];
    case 'invalid_format':
      return [at(issue.path, `${issue.message}, got ${describeValue(issue.input, style)}`)];
    case 'invalid_union':
    case 'invalid_key':
    case 'invalid_element':
    case 'not_multiple_of':
    case 'custom':
      return [at(issue.path, issue.message)];
  }
}

/** All issues of a zod error, formatted, in order. */
export function formatIssues(error: z.ZodError, options: FormatIssueOptions): string[] {
  return error.issues.flatMap((issue) => formatIssue(issue, options));
}
