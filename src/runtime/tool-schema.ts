import { z } from 'zod';
import type { JsonObject, Tool } from '../contracts/index.ts';
import { compileJsonSchema, formatIssues, jsonDepthProblem, type SchemaCheck, SchemaRefusedError } from '../validation/index.ts';

const described = new WeakMap<Tool<never>, JsonObject>();
const checks = new WeakMap<Tool<never>, SchemaCheck>();

/**
 * A tool's input as the model and MCP clients see it: its own JSON Schema, unchanged, when it has
 * one; else its zod schema in JSON Schema.
 */
export function toolJsonSchema(tool: Tool<never>): JsonObject {
  if (tool.jsonSchema !== undefined) return tool.jsonSchema;
  let schema = described.get(tool);
  if (schema === undefined) {
    schema = z.toJSONSchema(tool.inputSchema, { io: 'input', unrepresentable: 'any' }) as JsonObject;
    described.set(tool, schema);
  }
  return schema;
}

/**
 * Checks a call's input against the tool's schema: its JSON Schema as written when it has one,
 * else its zod schema. The input to run with, or what is wrong with it. A JSON Schema whose checks
 * Loom cannot bound (`SchemaRefusedError`: an MCP server's tools with one are left out before
 * this) fails every call, naming why; one Ajv cannot compile checks only that the input is an
 * object, and leaves the rest to the tool. An input nested deeper than `MAX_JSON_DEPTH` fails
 * first, before zod or Ajv (both recursive) walk it.
 */
export function checkToolInput(tool: Tool<never>, input: unknown): { ok: true; input: unknown } | { ok: false; problems: string } {
  const tooDeep = jsonDepthProblem('(input)', input);
  if (tooDeep !== undefined) return { ok: false, problems: tooDeep };
  if (tool.jsonSchema !== undefined) {
    let check = checks.get(tool);
    if (check === undefined) {
      try {
        check = compileJsonSchema(tool.jsonSchema, { dialect: '2020-12', root: '(input)' });
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        // No input can be checked against a refused schema at a bounded cost, so none passes unchecked;
        // a schema Ajv cannot compile is the tool's fault, not the call's: its server checks.
        check =
          error instanceof SchemaRefusedError
            ? () => `(input) cannot be checked: Loom refuses the tool's input schema (inputSchema ${reason})`
            : (value) =>
                typeof value === 'object' && value !== null && !Array.isArray(value)
                  ? undefined
                  : `(input) must be an object (the tool's schema could not be read: ${reason})`;
      }
      checks.set(tool, check);
    }
    const problems = check(input);
    return problems === undefined ? { ok: true, input } : { ok: false, problems };
  }
  const parsed = (tool.inputSchema as z.ZodType).safeParse(input, { reportInput: true });
  return parsed.success ? { ok: true, input: parsed.data } : { ok: false, problems: formatIssues(parsed.error, { style: 'json' }).join('; ') };
}
