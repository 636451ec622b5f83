/**
 * How deep JSON nests, measured without recursion. Data from outside (request bodies, tool
 * inputs, forged tools' outputs) is measured here before anything recursive walks it: V8's
 * `JSON.stringify`, zod, Ajv, a structured clone, isolated-vm's copy and Node's IPC all recurse
 * per level, and one that runs out of native stack can end its process rather than throw.
 *
 * It imports nothing, so the sandbox process (`forged-tools/sandbox-isolate.ts`) can load it alone.
 */

/**
 * The deepest JSON Loom takes in or passes on: a request body, a tool call's input, a forge's test
 * case, a forged tool's output. Real data nests a few levels (a JSON API rarely past 20), and
 * Loom's schema checks are tested with inputs 500 levels deep; the first native stack overflow an
 * outside probe found was at ~5,000 levels (a forged tool's output, copied out of the sandbox
 * process), ten times this; and SQLite's JSON functions stop at 1,000.
 */
export const MAX_JSON_DEPTH = 512;

/** What {@link measureJsonValue} found. */
export interface JsonDepth {
  /** Levels of arrays and objects: `1` is 0, `[]` 1, `{"a":[1]}` 2; past `limit`, `limit + 1`. */
  depth: number;
  /** When deeper than `limit`: the keys leading to the first container past it (the first few only). */
  path?: (string | number)[];
}

/** How many keys of a too-deep path a message names. */
const PATH_SHOWN = 6;

/**
 * The nesting depth of JSON text: its brackets outside strings, counted in one pass. Stops at the
 * first level past `limit` and returns `limit + 1`. Text that is not JSON is measured as far as
 * its brackets go (the parser, run after, says what is wrong with it).
 */
export function jsonTextDepth(text: string, limit: number = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c)
        index += 1; // a backslash: the next character is escaped
      else if (code === 0x22) inString = false;
      continue;
    }
    if (code === 0x22) inString = true;
    else if (code === 0x5b || code === 0x7b) {
      depth += 1;
      if (depth > limit) return limit + 1;
      if (depth > deepest) deepest = depth;
    } else if (code === 0x5d || code === 0x7d) depth -= 1;
  }
  return deepest;
}

/**
 * The nesting depth of a JSON value in memory (arrays and plain objects), walked without
 * recursion and stopping at the first level past `limit`, with the path to it. A container
 * reached twice is measured once, and one that contains itself counts as deeper than any limit.
 */
export function measureJsonValue(value: unknown, limit: number = MAX_JSON_DEPTH): JsonDepth {
  if (value === null || typeof value !== 'object') return { depth: 0 };
  /** Containers measured: how many levels they hold, themselves included. */
  const heights = new Map<object, number>();
  const onPath = new Set<object>();
  /** A container being walked: its keys (none for an array), the next to visit, the levels seen below so far. */
  interface Frame {
    node: object;
    keys: string[] | undefined;
    length: number;
    next: number;
    height: number;
  }
  const stack: Frame[] = [];
  const keyAt = (frame: Frame, index: number): string | number => frame.keys?.[index] ?? index;
  // The key each open container is at now leads to the next: the path to the level past the limit.
  const tooDeep = (): JsonDepth => ({ depth: limit + 1, path: stack.slice(0, PATH_SHOWN).map((frame) => keyAt(frame, frame.next - 1)) });
  const open = (node: object): void => {
    onPath.add(node);
    const keys = Array.isArray(node) ? undefined : Object.keys(node);
    stack.push({ node, keys, length: keys?.length ?? (node as unknown[]).length, next: 0, height: 1 });
  };
  if (limit < 1) return { depth: limit + 1, path: [] };
  open(value);
  let result = 0;
  while (stack.length > 0) {
    const frame = stack[stack.length - 1] as Frame;
    if (frame.next >= frame.length) {
      stack.pop();
      onPath.delete(frame.node);
      heights.set(frame.node, frame.height);
      const parent = stack[stack.length - 1];
      if (parent === undefined) result = frame.height;
      else if (frame.height + 1 > parent.height) parent.height = frame.height + 1;
      continue;
    }
    const index = frame.next;
    frame.next += 1;
    const child: unknown = frame.keys === undefined ? (frame.node as unknown[])[index] : (frame.node as Record<string, unknown>)[frame.keys[index] as string];
    if (child === null || typeof child !== 'object') continue;
    if (onPath.has(child)) return tooDeep();
    const known = heights.get(child);
    if (known !== undefined) {
      if (stack.length + known > limit) return tooDeep();
      if (known + 1 > frame.height) frame.height = known + 1;
      continue;
    }
    if (stack.length + 1 > limit) return tooDeep();
    open(child);
  }
  return { depth: result };
}

/**
 * Why JSON is refused for its depth, or `undefined` when it is within `limit`: `what` (e.g. "the
 * request body") is named with the path to the first level past the limit when known, e.g.
 * `the request body is nested deeper than 512 levels (at /request/testCases/0/input/a/…), Loom's limit for JSON`.
 */
export function jsonDepthProblem(what: string, value: unknown, limit: number = MAX_JSON_DEPTH): string | undefined {
  const measured = measureJsonValue(value, limit);
  if (measured.depth <= limit) return undefined;
  return tooDeepMessage(what, limit, measured.path);
}

/** The message for JSON nested past `limit`: `what` first, then the limit, and where when known. */
export function tooDeepMessage(what: string, limit: number = MAX_JSON_DEPTH, path?: readonly (string | number)[]): string {
  const where = path === undefined || path.length === 0 ? '' : ` (at /${path.map(String).join('/')}/…)`;
  return `${what} is nested deeper than ${limit.toLocaleString('en-US')} levels${where}, Loom's limit for JSON (MAX_JSON_DEPTH)`;
}
