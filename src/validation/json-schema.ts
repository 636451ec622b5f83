import { createRequire } from 'node:module';
import type * as AjvModule from 'ajv';
import type { Ajv, Options, ValidateFunction } from 'ajv';
import type * as Ajv2020Module from 'ajv/dist/2020.js';

/** A compiled JSON Schema: `undefined` when the value is valid, else what is wrong, JSON paths first. */
export type SchemaCheck = (value: unknown) => string | undefined;

/** The JSON Schema dialects Loom checks: draft-07 (draft-04 and -06 read as it) and 2020-12 (2019-09 read as it). */
export type SchemaDialect = 'draft-07' | '2020-12';

// Schemas come from other programs (MCP servers, models): unknown keywords and formats are theirs
// to use, and a `$id` two servers share must not collide, so nothing is kept between compiles (a
// compiled schema is dropped from Ajv's cache at once: its callers keep what they reuse).
const OPTIONS: Options = { strict: false, allErrors: true, validateSchema: true, validateFormats: false, addUsedSchema: false, logger: false };
let validators: Record<SchemaDialect, Ajv> | undefined;

/** Ajv per dialect, loaded with the first schema: a daemon that meets none does not hold it. */
function validatorsOf(): Record<SchemaDialect, Ajv> {
  if (validators === undefined) {
    const require = createRequire(import.meta.url);
    const { Ajv: Draft07 } = require('ajv') as typeof AjvModule;
    const { Ajv2020 } = require('ajv/dist/2020.js') as typeof Ajv2020Module;
    validators = { 'draft-07': new Draft07(OPTIONS), '2020-12': new Ajv2020(OPTIONS) };
  }
  return validators;
}

/** The dialect a schema declares with `$schema`, else `fallback`. */
function dialectOf(schema: Readonly<Record<string, unknown>>, fallback: SchemaDialect): SchemaDialect {
  const declared = schema['$schema'];
  if (typeof declared !== 'string') return fallback;
  if (/draft-0[4-7]/.test(declared)) return 'draft-07';
  if (/20(19-09|20-12)/.test(declared)) return '2020-12';
  return fallback;
}

/**
 * Compiles a JSON Schema with Ajv in the dialect it declares (else `options.dialect`). Problems
 * name where they are, `options.root` standing for the value itself.
 * @throws {Error} naming what is wrong when the schema itself is invalid.
 */
export function compileJsonSchema(schema: Readonly<Record<string, unknown>>, options: { dialect: SchemaDialect; root: string }): SchemaCheck {
  const ajv = validatorsOf()[dialectOf(schema, options.dialect)];
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw new Error(`not a valid JSON Schema: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  } finally {
    ajv.removeSchema(schema);
  }
  return (value) => {
    if (validate(value)) return undefined;
    return (validate.errors ?? [])
      .slice(0, 5)
      .map((problem) => {
        const where = problem.instancePath === '' ? options.root : problem.instancePath;
        const extra = problem.keyword === 'additionalProperties' ? ` ("${String((problem.params as { additionalProperty?: unknown }).additionalProperty)}")` : '';
        return `${where} ${problem.message ?? 'is invalid'}${extra}`;
      })
      .join('; ');
  };
}
