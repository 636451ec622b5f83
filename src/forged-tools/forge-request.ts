import { z } from 'zod';
import { SANDBOX_APIS } from '../manifest/index.ts';
import { MCP_TOOL_PREFIX } from '../tools/index.ts';
import { measureJsonSchema, SchemaRefusedError } from '../validation/index.ts';

/** The meta-tool an agent forges with; its grant also admits the agent's own forged tools. */
export const FORGE_TOOL_NAME = 'forge_tool';

/** How a forged tool, or a compose step, is named: what models and tool lists write. */
export const FORGED_TOOL_NAME = /^[a-z][a-z0-9_]{1,63}$/;

/**
 * Why `name` may not be a forged tool's name, or undefined when it may. The one rule for every
 * door that names a forged tool (forge, import, a stored tool read back, promotion): names
 * starting with `mcp_` are MCP servers' tools (`mcp_<server>_<tool>`, src/tools/mcp-tool-name.ts),
 * which a grant such as `"mcp_github_*"` and a package step's `mcps` give. A forged tool there
 * would be offered, shared, to agents granted only that server, and run in place of its tool.
 *
 * @example
 * ```ts
 * forgedToolNameProblem('parse_csv'); // undefined
 * forgedToolNameProblem('mcp_github_create_issue'); // 'a forged tool\'s name may not start with "mcp_": …'
 * ```
 */
export function forgedToolNameProblem(name: string): string | undefined {
  if (!name.startsWith(MCP_TOOL_PREFIX)) return undefined;
  return `a forged tool's name may not start with "${MCP_TOOL_PREFIX}": names "${MCP_TOOL_PREFIX}<server>_<tool>" are MCP servers' tools, given by grants such as "${MCP_TOOL_PREFIX}github_*" and a package step's mcps; choose a name without that prefix`;
}

// An object of JSON values; written as a catch-all object rather than a record, so the JSON
// Schema shown to models has no `propertyNames` (which OpenAI's structured tools do not take).
const JsonObjectSchema = z.object({}).catchall(z.json());

/**
 * Keywords a forged tool's schemas may not use. The daemon checks every call's input and output
 * against them with Ajv on its main thread: a `pattern` is a backtracking regular expression the
 * model wrote (`^(a|a)+$` held the daemon for 3 s on 27 characters, doubling with each more), and
 * `uniqueItems` compares every pair of a large array (6.5 s on 340 KB of output).
 */
const UNSAFE_KEYWORDS: Readonly<Record<string, string>> = {
  pattern: 'a regular expression the daemon would run on every call (check the text in execute instead)',
  patternProperties: 'regular expressions the daemon would run on every call (check the names in execute instead)',
  uniqueItems: 'a comparison of every pair of items on every call (check it in execute instead)',
};

/** Keywords whose values are maps of names to schemas: there, a key is a name, not a keyword. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies']);
/** Keywords whose values are data, never schemas (a `$ref` into them is refused below). */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples', 'description', 'title', '$comment']);
/** Keywords that name a place to find a schema other than a definition of this one. */
const ELSEWHERE_KEYWORDS = new Set(['$id', '$anchor', '$dynamicRef', '$dynamicAnchor', '$recursiveRef', '$recursiveAnchor']);
/** The one `$ref` a forged tool's schema may use: to one of its own definitions. */
const DEFINITION_REF = /^#\/(\$defs|definitions)\/[^/]+$/;

/**
 * What in a schema a forged tool may not use, with its path (`properties`, `w`, `pattern`).
 * Deny by default: every value is walked as a schema wherever it stands (Ajv, not strict, checks
 * schemas under keys it does not know too), but for data keywords, and a key is taken as a
 * keyword but directly under a map of names; a `$ref` may point only at a definition, and no
 * other means of naming a schema elsewhere is allowed, so nothing the walk skipped is reached.
 */
function unsafeKeywords(schema: unknown, path: (string | number)[], names = false): { path: (string | number)[]; keyword: string; why: string }[] {
  if (Array.isArray(schema)) return schema.flatMap((inner: unknown, index) => unsafeKeywords(inner, [...path, index]));
  if (typeof schema !== 'object' || schema === null) return [];
  const found: { path: (string | number)[]; keyword: string; why: string }[] = [];
  for (const [key, value] of Object.entries(schema as Record<string, unknown>)) {
    const at = [...path, key];
    if (names) {
      found.push(...unsafeKeywords(value, at));
      continue;
    }
    if (DATA_KEYWORDS.has(key)) continue;
    const why = UNSAFE_KEYWORDS[key];
    if (why !== undefined && !(key === 'uniqueItems' && value === false)) found.push({ path: at, keyword: key, why });
    if (ELSEWHERE_KEYWORDS.has(key)) found.push({ path: at, keyword: key, why: 'a schema may be found only among its own definitions ($defs)' });
    if (key === '$ref' && (typeof value !== 'string' || !DEFINITION_REF.test(value)))
      found.push({ path: at, keyword: key, why: 'a $ref may point only at one of the schema\'s own definitions ("#/$defs/<name>")' });
    found.push(...unsafeKeywords(value, at, SCHEMA_MAPS.has(key)));
  }
  return found;
}

/** The longest a forged tool's schema may be, as JSON: it goes to the model with every request. */
const MAX_SCHEMA_CHARACTERS = 20_000;

/** A forged tool's JSON Schema: bounded in size, and without the keywords that cost the daemon without bound. */
const ForgedSchemaSchema = JsonObjectSchema.superRefine((schema, context) => {
  const length = JSON.stringify(schema).length;
  if (length > MAX_SCHEMA_CHARACTERS)
    context.addIssue({
      code: 'custom',
      message: `is ${length} characters as JSON, more than ${MAX_SCHEMA_CHARACTERS} (it is sent to the model with every request)`,
    });
  for (const { path, keyword, why } of unsafeKeywords(schema, []))
    context.addIssue({ code: 'custom', path, message: `a forged tool's schema may not use "${keyword}" here: ${why}` });
});

/** A JSON Schema for an object, as a forged tool's input is described to models. */
const ObjectSchemaSchema = ForgedSchemaSchema.refine((schema) => schema['type'] === 'object', { error: 'expected a JSON Schema with "type": "object"' });

/** One step of a compose tool: a tool called with an input built from references (see `resolveMapping`). */
export const ComposeStepSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, { error: 'expected a step name of letters, digits and "_"' }),
  tool: z.string().min(1, { error: 'expected the name of a tool' }),
  inputMapping: JsonObjectSchema.default({}),
});

/** `implementation` of spec/02: chain tools the agent holds, or run its own JavaScript in the sandbox. */
export const ImplementationSchema = z.discriminatedUnion('mode', [
  z.strictObject({
    mode: z.literal('compose'),
    steps: z.array(ComposeStepSchema).min(1, { error: 'expected at least one step' }).max(20, { error: 'at most 20 steps' }),
  }),
  z.strictObject({
    mode: z.literal('sandbox'),
    code: z.string().min(1, { error: 'expected the JavaScript source, defining execute(input)' }).max(100_000, { error: 'at most 100,000 characters' }),
    allowlist: z.array(z.enum(SANDBOX_APIS)).default([]),
  }),
]);

/** A test case: an input, and optionally what the output must contain (keys it leaves out are not compared). */
export const TestCaseSchema = z.strictObject({
  input: JsonObjectSchema,
  expectedOutput: z.json().optional(),
});

/**
 * `forge_tool`'s input: spec/02's request exactly. Its schemas are measured as every schema Loom
 * checks values against is (`measureJsonSchema`, draft-07 unless they say otherwise, as the tool
 * compiles them): one whose checks of a value could grow without bound (a recursive `$ref`
 * through an `anyOf` of branches that meet again) is refused here, before any test runs, naming
 * where in it, e.g. `inputSchema at "/$defs/n/anyOf/0/$ref": "$ref" cycle through "anyOf" …`.
 */
export const ForgeRequestSchema = z
  .strictObject({
    name: z
      .string()
      .regex(FORGED_TOOL_NAME, { error: 'expected 2 to 64 lowercase letters, digits or "_", starting with a letter (e.g. "parse_csv")' })
      .superRefine((name, context) => {
        const problem = forgedToolNameProblem(name);
        if (problem !== undefined) context.addIssue({ code: 'custom', message: problem });
      }),
    description: z.string().min(1, { error: 'expected what the tool does' }).max(2000),
    inputSchema: ObjectSchemaSchema,
    outputSchema: ForgedSchemaSchema.optional(),
    implementation: ImplementationSchema,
    testCases: z
      .array(TestCaseSchema)
      .min(1, { error: 'expected at least one test case: a tool is tested before it is judged' })
      .max(20, { error: 'at most 20 test cases' }),
  })
  .superRefine((request, context) => {
    for (const field of ['inputSchema', 'outputSchema'] as const) {
      const schema = request[field];
      if (schema === undefined) continue;
      try {
        measureJsonSchema(schema, { dialect: 'draft-07' });
      } catch (error) {
        if (!(error instanceof SchemaRefusedError)) throw error;
        // At the request's root, so that it reads `inputSchema at "/…": …`.
        context.addIssue({ code: 'custom', path: [], message: `${field} ${error.message}` });
      }
    }
  });

/** A forge request, defaults filled in. */
export type ForgeRequest = z.output<typeof ForgeRequestSchema>;

/** One compose step. */
export type ComposeStep = z.output<typeof ComposeStepSchema>;
