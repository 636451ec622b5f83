import { Ajv, type ValidateFunction } from 'ajv';
import type { JsonObject, JsonValue } from '../contracts/index.ts';

const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: true });

/** A compiled JSON Schema: `undefined` when the value is valid, else what is wrong, JSON paths first. */
export type SchemaCheck = (value: unknown) => string | undefined;

/**
 * Compiles a tool's JSON Schema (draft-07, as models write them) with Ajv.
 * @throws {Error} naming what is wrong when the schema itself is invalid.
 */
export function compileSchema(schema: JsonObject): SchemaCheck {
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw new Error(`not a valid JSON Schema: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return (value) => {
    if (validate(value)) return undefined;
    return (validate.errors ?? [])
      .slice(0, 5)
      .map((problem) => `${problem.instancePath === '' ? '(output)' : problem.instancePath} ${problem.message ?? 'is invalid'}`)
      .join('; ');
  };
}

/**
 * Whether `actual` matches `expected` as a test case means it: objects compare only the keys
 * `expected` names (each recursively), arrays element by element with the same length, anything
 * else by value. Returns where they differ, or `undefined`.
 */
export function subsetMismatch(expected: JsonValue, actual: JsonValue | undefined, path = ''): string | undefined {
  const here = path === '' ? 'the output' : path;
  if (expected !== null && typeof expected === 'object' && !Array.isArray(expected)) {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return `${here}: expected an object, got ${JSON.stringify(actual) ?? 'nothing'}`;
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
