/**
 * Serializes `value` as JSON with every object's keys sorted, recursively, so two values
 * that differ only in key order serialize identically. Arrays keep their order. Values
 * follow `JSON.stringify` otherwise: `toJSON()` is honoured, `undefined` and function
 * members are left out of objects, and a top-level `undefined` becomes `null` (so the
 * result is always a string). Bigints are written as decimal strings rather than throwing.
 *
 * Meant for model-produced tool input, which is plain JSON; a circular value overflows the
 * stack.
 *
 * @example
 * canonicalJson({ b: 1, a: { d: 2, c: 3 } }); // '{"a":{"c":3,"d":2},"b":1}'
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(normalize(value)) ?? 'null';
}

function normalize(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return value;
  if (hasToJson(value)) return normalize(value.toJSON());
  if (Array.isArray(value)) return value.map((item) => normalize(item) ?? null);
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    sorted[key] = normalize((value as Record<string, unknown>)[key]);
  }
  return sorted;
}

function hasToJson(value: object): value is { toJSON: () => unknown } {
  return typeof (value as { toJSON?: unknown }).toJSON === 'function';
}
