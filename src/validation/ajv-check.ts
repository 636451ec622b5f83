import { createRequire } from 'node:module';
import type * as AjvModule from 'ajv';
import type { Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import type * as Ajv2020Module from 'ajv/dist/2020.js';
import type { SchemaCheck, SchemaDialect } from './json-schema.ts';
import type { SchemaBounds } from './schema-bounds.ts';

/**
 * The most work Loom spends checking one value: the value's parts (every object, array and scalar
 * in it) times the subschemas each may be checked against (see `measureJsonSchema`), plus, under
 * `uniqueItems`, the pairs of items of each array compared. A larger value is refused unchecked,
 * naming its size. 5 million is about a quarter of a second of Ajv on the daemon's main thread (a
 * 6 MB array of 100,000 small objects checked against a recursive schema of JSON values); a forged
 * tool's output is at most 1 MB.
 */
export const MAX_CHECK_WORK = 5_000_000;

/**
 * The most work (as {@link MAX_CHECK_WORK} counts it) for which an invalid value is checked a
 * second time with Ajv's `allErrors`, to name up to five problems. Every value is first checked
 * without it, stopping at the first problem: with `allErrors` Ajv keeps an error for every failed
 * branch of every combinator, which is what exhausted the daemon's heap in issue 36.
 */
export const MAX_EVERY_PROBLEM_WORK = 20_000;

/** How many problems a failed check names. */
const MAX_PROBLEMS = 5;

// Schemas come from other programs (MCP servers, models): unknown keywords and formats are theirs
// to use, and a `$id` two servers share must not collide, so nothing is kept between compiles (a
// compiled schema is dropped from Ajv's cache at once: its callers keep what they reuse). A `$ref`
// is compiled once, as a function of its own, never copied into each place that uses it: inlined,
// a definition of a thousand subschemas used a thousand times compiles a million.
// `ownProperties`: a value's properties are its own, never what every object inherits. Without
// it `required: ["constructor", "toString"]` held for `{}`, and `properties: { hasOwnProperty:
// { type: "string" } }` checked the inherited function, failing every value; it costs one
// `hasOwnProperty` call per property a schema names, on the values that have it.
const OPTIONS: Options = {
  strict: false,
  allErrors: false,
  inlineRefs: false,
  validateSchema: true,
  validateFormats: false,
  addUsedSchema: false,
  logger: false,
  ownProperties: true,
};
type Validators = Record<SchemaDialect, Ajv>;
let validators: { first: Validators; every: Validators } | undefined;

/** Ajv per dialect, stopping at the first problem or not, loaded with the first schema: a daemon that meets none does not hold it. */
function validatorsOf(): { first: Validators; every: Validators } {
  if (validators === undefined) {
    const require = createRequire(import.meta.url);
    const { Ajv: Draft07 } = require('ajv') as typeof AjvModule;
    const { Ajv2020 } = require('ajv/dist/2020.js') as typeof Ajv2020Module;
    const every = { ...OPTIONS, allErrors: true };
    validators = {
      first: { 'draft-07': new Draft07(OPTIONS), '2020-12': new Ajv2020(OPTIONS) },
      every: { 'draft-07': new Draft07(every), '2020-12': new Ajv2020(every) },
    };
  }
  return validators;
}

/**
 * The work of checking `value` under `bounds`, as {@link MAX_CHECK_WORK} counts it; once past
 * `limit`, some number past it (the value is not walked further). Its parts are counted too.
 */
function workOf(value: unknown, bounds: SchemaBounds, limit: number): { work: number; parts: number } {
  let parts = 0;
  let pairs = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0 && parts * bounds.checksPerValue + pairs <= limit) {
    const part = pending.pop();
    parts += 1;
    if (Array.isArray(part)) {
      if (bounds.comparesItems) pairs += (part.length * (part.length - 1)) / 2;
      for (const item of part) pending.push(item);
    } else if (typeof part === 'object' && part !== null) {
      for (const inner of Object.values(part)) pending.push(inner);
    }
  }
  return { work: parts * bounds.checksPerValue + pairs, parts };
}

/**
 * The work of checking `value` under `bounds` ({@link MAX_CHECK_WORK}), and, past it, the problem
 * that refuses it unchecked, naming its size.
 */
export function sizeOf(value: unknown, bounds: SchemaBounds, root: string): { work: number; problem: string | undefined } {
  const { work, parts } = workOf(value, bounds, MAX_CHECK_WORK);
  if (work <= MAX_CHECK_WORK) return { work, problem: undefined };
  const size = bounds.comparesItems
    ? `more than ${parts.toLocaleString('en-US')} parts, and its arrays' items compared in pairs ("uniqueItems")`
    : `more than ${parts.toLocaleString('en-US')} parts, each checked against up to ${bounds.checksPerValue} subschemas`;
  return {
    work,
    problem: `${root} is too large to check against the schema: ${size}; Loom checks at most ${MAX_CHECK_WORK.toLocaleString('en-US')} (MAX_CHECK_WORK)`,
  };
}

/** Ajv's compiled function for `schema`, dropped from its cache at once. */
function compileWith(ajv: Ajv, schema: Readonly<Record<string, unknown>>): ValidateFunction {
  try {
    return ajv.compile(schema);
  } catch (error) {
    throw new Error(`not a valid JSON Schema: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  } finally {
    ajv.removeSchema(schema);
  }
}

/**
 * Compiles `schema` (already measured: `bounds`) with Ajv in `dialect`, on this thread: the main
 * thread's checks, and those of the schema-check thread (src/validation/schema-check-worker.ts).
 * Problems name where they are, `root` standing for the value itself: the first five (checked
 * with `allErrors` only for a small value, {@link MAX_EVERY_PROBLEM_WORK}). A value whose check
 * would cost more than {@link MAX_CHECK_WORK} is refused unchecked, with its size.
 * @throws {Error} naming what is wrong when the schema itself is invalid.
 */
export function compileAjvCheck(
  schema: Readonly<Record<string, unknown>>,
  { dialect, root, bounds }: { dialect: SchemaDialect; root: string; bounds: SchemaBounds },
): SchemaCheck {
  const validate = compileWith(validatorsOf().first[dialect], schema);
  let everyProblem: ValidateFunction | undefined;
  const describe = (errors: readonly ErrorObject[]): string =>
    errors
      .slice(0, MAX_PROBLEMS)
      .map((problem) => {
        const where = problem.instancePath === '' ? root : problem.instancePath;
        const extra =
          problem.keyword === 'additionalProperties' ? ` ("${String((problem.params as { additionalProperty?: unknown }).additionalProperty)}")` : '';
        return `${where} ${problem.message ?? 'is invalid'}${extra}`;
      })
      .join('; ');
  return (value) => {
    const { work, problem } = sizeOf(value, bounds, root);
    if (problem !== undefined) return problem;
    try {
      if (validate(value)) return undefined;
      if (work > MAX_EVERY_PROBLEM_WORK) return describe(validate.errors ?? []);
      everyProblem ??= compileWith(validatorsOf().every[dialect], schema);
      everyProblem(value);
      return describe(everyProblem.errors ?? validate.errors ?? []);
    } catch (error) {
      // Ajv's code recurses with the value: one nested thousands of levels deep runs out of stack.
      if (error instanceof RangeError) return `${root} is nested too deeply to check against the schema`;
      throw error;
    }
  };
}
