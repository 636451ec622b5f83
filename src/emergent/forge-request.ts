import { z } from 'zod';
import { SANDBOX_APIS } from '../manifest/index.ts';

/** How a forged tool, or a compose step, is named: what models and tool lists write. */
export const FORGED_TOOL_NAME = /^[a-z][a-z0-9_]{1,63}$/;

// An object of JSON values; written as a catch-all object rather than a record, so the JSON
// Schema shown to models has no `propertyNames` (which OpenAI's structured tools do not take).
const JsonObjectSchema = z.object({}).catchall(z.json());

/** A JSON Schema for an object, as a forged tool's input is described to models. */
const ObjectSchemaSchema = JsonObjectSchema.refine((schema) => schema['type'] === 'object', { error: 'expected a JSON Schema with "type": "object"' });

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

/** `forge_tool`'s input: spec/02's request exactly. */
export const ForgeRequestSchema = z.strictObject({
  name: z.string().regex(FORGED_TOOL_NAME, { error: 'expected 2 to 64 lowercase letters, digits or "_", starting with a letter (e.g. "parse_csv")' }),
  description: z.string().min(1, { error: 'expected what the tool does' }).max(2000),
  inputSchema: ObjectSchemaSchema,
  outputSchema: JsonObjectSchema.optional(),
  implementation: ImplementationSchema,
  testCases: z.array(TestCaseSchema).min(1, { error: 'expected at least one test case: a tool is tested before it is judged' }).max(20, { error: 'at most 20 test cases' }),
});

/** A forge request, defaults filled in. */
export type ForgeRequest = z.output<typeof ForgeRequestSchema>;

/** One compose step. */
export type ComposeStep = z.output<typeof ComposeStepSchema>;
