/**
 * JSON Schemas whose checks of a value cost without bound (issue 36), and values that set them
 * off, for the tests of `measureJsonSchema` and of the doors that take schemas Loom did not write.
 */

/**
 * The attack of issue 36: a recursive `$ref` through an `anyOf` of two identical branches, as a
 * forge request's `inputSchema` may write it (its `$ref`s only to its own definitions). Every level
 * of a value nested under `a` is checked twice as often as the one above it: a value 19 levels
 * deep stalled the daemon 5-7 s on the old code, 23 levels aborted V8.
 */
export const RECURSIVE_ANY_OF = {
  type: 'object',
  properties: { a: { anyOf: [{ $ref: '#/$defs/n' }, { $ref: '#/$defs/n' }] } },
  $defs: { n: { type: 'object', properties: { a: { anyOf: [{ $ref: '#/$defs/n' }, { $ref: '#/$defs/n' }] } } } },
};

/** Where the refusal of {@link RECURSIVE_ANY_OF} points: the first branch's `$ref` of the `anyOf` inside the cycle. */
export const RECURSIVE_ANY_OF_POINTER = '/$defs/n/properties/a/anyOf/0/$ref';

/** A value `depth` levels deep under `a`, with a leaf no branch takes (so that every branch is tried). */
export function nestedUnder(depth: number, leaf: unknown = 1): Record<string, unknown> {
  let value: unknown = leaf;
  for (let level = 0; level < depth; level += 1) value = { a: value };
  return value as Record<string, unknown>;
}

/** No recursion, but a chain of `length` definitions whose two branches both lead to the next: 2^length checks of one value. */
export function doublingChain(length: number): Record<string, unknown> {
  const definitions: Record<string, unknown> = {};
  for (let index = 0; index < length; index += 1) definitions[`d${index}`] = { anyOf: [{ $ref: `#/$defs/d${index + 1}` }, { $ref: `#/$defs/d${index + 1}` }] };
  definitions[`d${length}`] = { type: 'string' };
  return { type: 'object', properties: { s: { $ref: '#/$defs/d0' } }, $defs: definitions };
}
