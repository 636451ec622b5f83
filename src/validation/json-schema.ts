import { compileAjvCheck, sizeOf } from './ajv-check.ts';
import { checkOnThread, startSchemaCheckThread } from './schema-check-thread.ts';
import { measureSchema, type SchemaBounds } from './schema-bounds.ts';
import { SchemaRefusedError } from './schema-refused-error.ts';

/** A compiled JSON Schema: `undefined` when the value is valid, else what is wrong, JSON paths first. */
export type SchemaCheck = (value: unknown) => string | undefined;

/** The JSON Schema dialects Loom checks: draft-07 (draft-04 and -06 read as it) and 2020-12 (2019-09 read as it). */
export type SchemaDialect = 'draft-07' | '2020-12';

/** The dialect a schema declares with `$schema`, else `fallback`. */
function dialectOf(schema: Readonly<Record<string, unknown>>, fallback: SchemaDialect): SchemaDialect {
  const declared = schema['$schema'];
  if (typeof declared !== 'string') return fallback;
  if (/draft-0[4-7]/.test(declared)) return 'draft-07';
  if (/20(19-09|20-12)/.test(declared)) return '2020-12';
  return fallback;
}

const measured = new WeakMap<object, Map<SchemaDialect, SchemaBounds | SchemaRefusedError>>();

/**
 * Checks that values can be checked against `schema` at a bounded cost, before anything compiles
 * it (its dialect as `compileJsonSchema` reads it), and says what that cost is. Remembered per
 * schema object.
 * @throws {SchemaRefusedError} naming where in the schema and the limit it passed, e.g.
 *   `at "/$defs/n/properties/a/anyOf/0/$ref": "$ref" cycle through "anyOf" …; Loom refuses
 *   schemas whose checks of one value against one subschema exceed 64`.
 */
export function measureJsonSchema(schema: Readonly<Record<string, unknown>>, options: { dialect: SchemaDialect }): SchemaBounds {
  const dialect = dialectOf(schema, options.dialect);
  let known = measured.get(schema);
  if (known === undefined) {
    known = new Map();
    measured.set(schema, known);
  }
  let bounds = known.get(dialect);
  if (bounds === undefined) {
    try {
      bounds = measureSchema(schema, dialect);
    } catch (error) {
      if (!(error instanceof SchemaRefusedError)) throw error;
      bounds = error;
    }
    known.set(dialect, bounds);
  }
  if (bounds instanceof SchemaRefusedError) throw bounds;
  return bounds;
}

let nextSchemaId = 0;

/**
 * Compiles a JSON Schema with Ajv in the dialect it declares (else `options.dialect`): the one
 * place every schema Loom did not write is compiled (a forged tool's, an MCP server's, an
 * elicitation's). It is measured first (`measureJsonSchema`), and refused if checking a value
 * against it could cost without bound. Each value is then checked within a bound
 * (docs/decisions/0035-bounded-schema-work.md): one whose check would cost more than
 * `MAX_CHECK_WORK` is refused unchecked, naming its size; a schema with regular expressions
 * (`pattern`, `patternProperties`) is checked on the schema-check thread, stopped past
 * `MAX_CHECK_MS`; any other on the main thread, its work bounded by its size. Problems name where
 * they are, `options.root` standing for the value itself: the first five.
 * @throws {SchemaRefusedError} when the schema passes one of the limits of `measureJsonSchema`.
 * @throws {Error} naming what is wrong when the schema itself is invalid.
 */
export function compileJsonSchema(schema: Readonly<Record<string, unknown>>, options: { dialect: SchemaDialect; root: string }): SchemaCheck {
  const bounds = measureJsonSchema(schema, options);
  const dialect = dialectOf(schema, options.dialect);
  // Compiled here first in every case, so that an invalid schema throws now.
  const check = compileAjvCheck(schema, { dialect, root: options.root, bounds });
  if (!bounds.matchesPatterns) return check;
  startSchemaCheckThread();
  nextSchemaId += 1;
  const job = { schemaId: nextSchemaId, schema, dialect, root: options.root, bounds };
  return (value) => sizeOf(value, bounds, options.root).problem ?? checkOnThread(job, value);
}
