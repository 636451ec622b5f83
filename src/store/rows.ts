import { z } from 'zod';
import type { JsonObject, JsonValue } from '../contracts/index.ts';
import { StoreError } from '../errors/index.ts';

/**
 * A row as a driver returns it, by column name. Both stores read their rows back through the
 * same schemas (`table-rows.ts`): SQLite and PostgreSQL give the same column names and types
 * (text, whole numbers, doubles, null), with JSON kept as text.
 */
export type Row = Record<string, unknown>;

/**
 * A JSON text column, parsed without throwing: text that is not JSON becomes a validation issue.
 * `JSON.parse` only ever yields JSON values, so the result needs no deeper check than its kind.
 */
export const jsonText = z.string().transform((text, context): JsonValue => {
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    context.addIssue({ code: 'custom', message: `invalid JSON (${error instanceof Error ? error.message : String(error)})` });
    return z.NEVER;
  }
});

/** A JSON text column that must hold an object. */
export const jsonObjectText = jsonText.pipe(
  z.custom<JsonObject>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), {
    message: 'expected a JSON object',
  }),
);

/** A JSON text column that must hold an array. */
export const jsonArrayText = jsonText.pipe(z.custom<JsonValue[]>((value) => Array.isArray(value), { message: 'expected a JSON array' }));

/** A yes/no column: SQLite's `0`/`1` integer or PostgreSQL's boolean. */
export const flag = z.union([z.boolean(), z.literal(0), z.literal(1)]).transform((value) => value === true || value === 1);

/**
 * Validates one row read back from `table`, naming the row by its `keyColumns` when it is
 * corrupt.
 *
 * @throws {StoreError} when the row does not match `schema`.
 */
export function parseRow<T>(schema: z.ZodType<T>, row: Row, table: string, keyColumns: readonly string[]): T {
  const result = schema.safeParse(row);
  if (result.success) return result.data;
  const key = keyColumns.map((column) => `${column} ${quote(row[column])}`).join(', ');
  const problems = result.error.issues.map((issue) => `${issue.path.length === 0 ? '(row)' : issue.path.join('.')}: ${issue.message}`).join('; ');
  throw new StoreError(`cannot read row ${key} of table "${table}": ${problems}; restore the database from a backup, or delete the row`, {
    cause: result.error,
    details: { table },
  });
}

/**
 * Checks a caller's `limit`: undefined when omitted (no limit), else the limit. `action` names
 * the caller's operation in the error.
 *
 * @throws {StoreError} when `limit` is not a non-negative integer.
 */
export function checkLimit(limit: number | undefined, action: string): number | undefined {
  if (limit === undefined) return undefined;
  if (!Number.isSafeInteger(limit) || limit < 0) {
    throw new StoreError(`cannot ${action}: limit must be a non-negative integer, got ${limit}`);
  }
  return limit;
}

function quote(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/**
 * The `lineage` values under `descendants` (an agent's lineage, its id and `/`) as a range both
 * stores compare byte by byte and answer from an index: `[descendants, upper)`, where `upper` is
 * `descendants` with its last `/` made `0`, the character after it.
 * @throws {StoreError} when `descendants` does not end with `/`.
 */
export function lineageRange(descendants: string, action: string): [string, string] {
  if (!descendants.endsWith('/')) throw new StoreError(`cannot ${action}: descendants must end with "/", got "${descendants}"`);
  return [descendants, `${descendants.slice(0, -1)}0`];
}

/** What reading the lifetime totals of `families` is, for messages: `total usage of agent "a" and its descendants`. */
export function familiesAction(families: readonly { agentId: string }[]): string {
  const names = families.map((family) => `"${family.agentId}"`);
  return names.length === 1 ? `total usage of agent ${names[0]} and its descendants` : `total usage of agents ${names.join(', ')}, each with its descendants`;
}
