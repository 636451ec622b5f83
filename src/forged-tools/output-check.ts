import type { JsonObject, JsonValue } from '../contracts/index.ts';
import { compileJsonSchema, type SchemaCheck } from '../validation/index.ts';

/**
 * Compiles a forged tool's JSON Schema (draft-07 unless it says otherwise, as models write them),
 * through the one compile point every schema Loom did not write goes through: its checks of a
 * value are bounded before it compiles (`measureJsonSchema`), and each value is checked within
 * `MAX_CHECK_WORK`. `root` names the value in a problem: the tool's input or its output.
 * @throws {SchemaRefusedError} when checking values against it could cost without bound.
 * @throws {Error} naming what is wrong when the schema itself is invalid.
 */
export function compileSchema(schema: JsonObject, root: '(input)' | '(output)' = '(output)'): SchemaCheck {
  return compileJsonSchema(schema, { dialect: 'draft-07', root });
}

/**
 * Whether `actual` matches `expected` as a test case means it: objects compare only the keys
 * `expected` names (each recursively), arrays element by element with the same length, anything
 * else by value. Returns where they differ, or `undefined`.
 */
export function subsetMismatch(expected: JsonValue, actual: JsonValue | undefined, path = ''): string | undefined {
  const here = path === '' ? 'the output' : path;
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual))
      return `${here}: expected an object, got ${JSON.stringify(actual) ?? 'nothing'}`;
    for (const [key, value] of Object.entries(expected)) {
      const problem = subsetMismatch(value, Object.hasOwn(actual, key) ? actual[key] : undefined, `${path}.${key}`);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${here}: expected an array, got ${JSON.stringify(actual) ?? 'nothing'}`;
    if (actual.length !== expected.length) return `${here}: expected ${expected.length} items, got ${actual.length}`;
    for (let index = 0; index < expected.length; index += 1) {
      const problem = subsetMismatch(expected[index] as JsonValue, actual[index], `${path}[${index}]`);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  return expected === actual ? undefined : `${here}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual) ?? 'nothing'}`;
}
