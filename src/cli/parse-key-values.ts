import type { JsonObject, JsonValue } from '../contracts/index.ts';
import { UsageError } from '../errors/index.ts';
import { safeParseJson } from '../validation/index.ts';

/** A repeatable `name=value` flag, as its usage error words it. */
export interface KeyValueFlag {
  /** The flag: `--input`. */
  name: string;
  /** What one entry looks like: `key=value`. */
  form: string;
  /** An entry that works: `topic="solar storage"`. */
  example: string;
}

/**
 * The entries of a repeated `name=value` flag as one object: a value that reads as JSON (a
 * number, `true`, a list) is taken as such, anything else as text.
 * @throws {UsageError} for an entry without a name before its `=`, with `flag`'s example.
 * @example parseKeyValues({ name: '--input', form: 'key=value', example: 'topic=x' }, ['depth=3', 'topic=heat pumps'])
 * // { depth: 3, topic: 'heat pumps' }
 */
export function parseKeyValues(flag: KeyValueFlag, entries: readonly string[]): JsonObject {
  const values: JsonObject = {};
  for (const entry of entries) {
    const equals = entry.indexOf('=');
    if (equals <= 0) throw new UsageError(`${flag.name} "${entry}": expected ${flag.form}, e.g. ${flag.name} ${flag.example}`);
    const text = entry.slice(equals + 1);
    const parsed = safeParseJson(text);
    values[entry.slice(0, equals)] = parsed.ok ? (parsed.value as JsonValue) : text;
  }
  return values;
}
