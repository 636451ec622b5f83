/**
 * The limits a JSON Schema Loom did not write must keep (see schema-bounds.ts), and how a refusal
 * names each.
 */

// The limits below were measured against the tool schemas of real MCP servers: the official
// server-everything and server-filesystem, the 117 input and output schemas of GitHub's server,
// the request bodies of Notion's, and Loom's own tools. Their largest hold 62 subschemas, nest 6
// deep, put 26 side by side, and check one part of a value against at most 8 subschemas.

/**
 * The most subschemas a schema may hold (every object or boolean where a schema stands): Ajv
 * compiles each into code on the daemon's main thread. 30 times the largest real one.
 */
export const MAX_SCHEMA_NODES = 2_000;

/**
 * The deepest a subschema may be nested (each `properties/x`, `items`, `anyOf/0`… one level): Ajv's
 * compiler and the walk of schema-bounds.ts recurse on it. Five times the deepest real one.
 */
export const MAX_SCHEMA_DEPTH = 32;

/**
 * The most subschemas one schema may hold side by side: the branches of an `anyOf`, `oneOf` or
 * `allOf`, its `properties`, `patternProperties`, `dependentSchemas`, tuple items. Each branch is
 * checked against the same value; and Ajv, stopping at the first problem, nests the code of each
 * in the one before, which compiles in time growing with their square (1,000 properties took
 * 0.6 s). Ten times the most seen in a real schema.
 */
export const MAX_SCHEMA_BRANCHES = 256;

/**
 * The most times one value may be checked against the same subschema: the product of the branch
 * counts of the combinators whose branches meet again (`anyOf: [{$ref: X}, {$ref: X}]` is 2, one
 * more such level 4). A recursive schema whose branches meet again has no bound at all (2^depth),
 * and is refused by this limit; real schemas meet again a few times at most (a shared base in
 * several branches of a union).
 */
export const MAX_SCHEMA_REPEATS = 64;

/**
 * The most subschemas one value may be checked against, each counted as often as it is reached:
 * what checking a value costs per part of it (`MAX_CHECK_WORK` bounds it times the value's
 * size). A `oneOf` of 256 constants is 257; real schemas are at most 8.
 */
export const MAX_SCHEMA_CHECKS = 1_024;

/**
 * The most steps this analysis takes (sets of subschemas worked out, times their size) before it
 * gives up and refuses the schema as too intricate to bound: tens of milliseconds of the daemon's
 * main thread. Real schemas take at most a few thousand (Loom's `forge_tool` 1,232).
 */
export const MAX_SCHEMA_ANALYSIS_STEPS = 500_000;

/** Counts stop here: one past every limit they are compared with. */
export const SATURATED = Math.max(MAX_SCHEMA_REPEATS, MAX_SCHEMA_CHECKS) + 1;

/** How a refusal names the limit passed: `Loom refuses schemas whose … exceed N`. */
export const LIMITS = {
  nodes: `Loom refuses schemas whose subschemas exceed ${MAX_SCHEMA_NODES}`,
  depth: `Loom refuses schemas whose nesting exceeds ${MAX_SCHEMA_DEPTH}`,
  branches: (keyword: string) => `Loom refuses schemas whose "${keyword}" subschemas side by side exceed ${MAX_SCHEMA_BRANCHES}`,
  repeats: `Loom refuses schemas whose checks of one value against one subschema exceed ${MAX_SCHEMA_REPEATS}`,
  checks: `Loom refuses schemas whose checks of one value exceed ${MAX_SCHEMA_CHECKS}`,
  steps: `Loom refuses schemas whose analysis exceeds ${MAX_SCHEMA_ANALYSIS_STEPS} steps`,
  sameCycle: 'Loom refuses "$ref" cycles that never move into a part of the value',
  references: 'Loom follows only "$ref"s into the schema itself ("#" or "#/…")',
};
