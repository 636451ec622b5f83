/**
 * docs/reference/manifest.md, written from the manifest schema (src/manifest/schema.ts): every
 * field with its type, default, limits and the description the schema gives it (`.describe()`).
 */
import { z } from 'zod';
import { ManifestSchema } from '../../src/manifest/index.ts';

/** The part of a JSON Schema this page reads. */
interface JsonSchema {
  type?: string | string[];
  description?: string | undefined;
  default?: unknown;
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  required?: string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/**
 * A field's JSON Schema as an author writes it (`io: 'input'`). A field whose input zod cannot
 * express (a preprocess, a transform) is read as its output instead, which has the same keys.
 */
function fieldSchema(schema: z.ZodType): JsonSchema {
  const input = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  if (input.type !== undefined || input.anyOf !== undefined || input.enum !== undefined) return input;
  const output = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema;
  return {
    ...output,
    ...(input.description === undefined ? {} : { description: input.description }),
    ...('default' in input ? { default: input.default } : {}),
  };
}

const isTable = (schema: JsonSchema): boolean => schema.type === 'object' && schema.properties !== undefined;
const isTableArray = (schema: JsonSchema): boolean => schema.type === 'array' && schema.items !== undefined && isTable(schema.items);
const isTableMap = (schema: JsonSchema): boolean =>
  schema.type === 'object' && schema.properties === undefined && typeof schema.additionalProperties === 'object' && isTable(schema.additionalProperties);

/** `1–20`, `≥ 0`, `> 0`: the range a number must lie in, or '' when it is any. */
function range(schema: JsonSchema): string {
  const low =
    schema.minimum !== undefined
      ? { value: schema.minimum, strict: false }
      : schema.exclusiveMinimum !== undefined
        ? { value: schema.exclusiveMinimum, strict: true }
        : undefined;
  const high =
    schema.maximum !== undefined && schema.maximum < MAX_SAFE
      ? { value: schema.maximum, strict: false }
      : schema.exclusiveMaximum !== undefined
        ? { value: schema.exclusiveMaximum, strict: true }
        : undefined;
  if (low !== undefined && high !== undefined && !low.strict && !high.strict) return `${low.value}–${high.value}`;
  const parts = [
    low === undefined ? '' : `${low.strict ? '>' : '≥'} ${low.value}`,
    high === undefined ? '' : `${high.strict ? '<' : '≤'} ${high.value}`,
  ].filter((part) => part !== '');
  return parts.join(', ');
}

/** How the type reads (a table cell escapes its `|`). */
function typeOf(schema: JsonSchema): string {
  if (schema.enum !== undefined) return schema.enum.map((value) => `\`${JSON.stringify(value)}\``).join(' | ');
  const union = schema.anyOf ?? schema.oneOf;
  if (union !== undefined) return union.map(typeOf).join(' or ');
  if (isTable(schema)) return 'table';
  if (isTableArray(schema)) return 'array of tables';
  if (isTableMap(schema)) return 'tables by name';
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    case 'integer':
    case 'number': {
      const bounds = range(schema);
      const name = schema.type === 'integer' ? 'integer' : 'number';
      return bounds === '' ? name : `${name}, ${bounds}`;
    }
    case 'array':
      if (schema.items === undefined) return 'array';
      return schema.items.enum === undefined ? `${typeOf(schema.items).replace(/, .*$/, '')}[]` : `array of ${typeOf(schema.items)}`;
    case 'object':
      return 'table';
    default:
      return 'any';
  }
}

/** The default as TOML would write it, or how a missing value reads. */
function defaultOf(schema: JsonSchema, required: boolean): string {
  if (!('default' in schema)) return required ? 'required' : 'none';
  const value = schema.default;
  if (isTable(schema) && typeof value === 'object' && value !== null && Object.keys(value).length === 0) return "each key's default";
  return `\`${JSON.stringify(value)}\``;
}

/** Text safe in a table cell: one line, `|` escaped. */
const cell = (text: string | undefined): string => (text ?? '').replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');

/** The header a table's keys are written under in TOML. */
function header(path: readonly string[], array: boolean): string {
  return array ? `[[${path.join('.')}]]` : `[${path.join('.')}]`;
}

/** Every table of the manifest, nested ones included, in the order they appear. */
function tables(path: readonly string[], schema: JsonSchema): { path: string[]; array: boolean; schema: JsonSchema }[] {
  const found: { path: string[]; array: boolean; schema: JsonSchema }[] = [];
  for (const [key, value] of Object.entries(schema.properties ?? {})) {
    const here = [...path, key];
    if (isTable(value)) found.push({ path: here, array: false, schema: value }, ...tables(here, value));
    else if (isTableArray(value) && value.items !== undefined)
      found.push({ path: here, array: true, schema: { ...value.items, description: value.description } }, ...tables(here, value.items));
    else if (isTableMap(value) && typeof value.additionalProperties === 'object') {
      const named = [...path, `${key}.<name>`];
      found.push(
        { path: named, array: false, schema: { ...value.additionalProperties, description: value.description } },
        ...tables(named, value.additionalProperties),
      );
    }
  }
  return found;
}

/** The rows of one table's keys. */
function rows(schema: JsonSchema, tableName: (key: string, value: JsonSchema) => string): string[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([key, value]) => {
    const name = tableName(key, value);
    return `| ${name} | ${cell(typeOf(value))} | ${defaultOf(value, required.has(key) && !('default' in value))} | ${cell(value.description)} |`;
  });
}

const GITHUB_SLUG = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');

/** docs/reference/manifest.md. */
export function manifestReference(): string {
  const top: JsonSchema = { type: 'object', properties: {} };
  const shape = ManifestSchema.shape;
  for (const [key, field] of Object.entries(shape)) (top.properties ??= {})[key] = fieldSchema(field as z.ZodType);
  const nested = tables([], top);
  const anchorOf = (path: readonly string[], array: boolean): string => `#${GITHUB_SLUG(header(path, array))}`;
  const topRows = rows(top, (key, value) => {
    if (isTable(value)) return `[\`[${key}]\`](${anchorOf([key], false)})`;
    if (isTableArray(value)) return `[\`[[${key}]]\`](${anchorOf([key], true)})`;
    if (isTableMap(value)) return `[\`[${key}.<name>]\`](${anchorOf([`${key}.<name>`], false)})`;
    return `\`${key}\``;
  });
  const sections = nested.map(({ path, array, schema }) => {
    const lines = [`## \`${header(path, array)}\``, ''];
    if (schema.description !== undefined) lines.push(schema.description, '');
    lines.push(
      '| key | type | default | meaning |',
      '|---|---|---|---|',
      ...rows(schema, (key, value) =>
        isTable(value) || isTableArray(value) ? `[\`${key}\`](${anchorOf([...path, key], isTableArray(value))})` : `\`${key}\``,
      ),
    );
    return lines.join('\n');
  });
  return [
    '# Manifest fields',
    '',
    '<!-- Generated by scripts/generate-docs.ts from src/manifest/schema.ts: do not edit by hand. -->',
    '',
    'Every field of an agent manifest, as the schema in `src/manifest/schema.ts` defines it (its',
    "descriptions are the schema's own). A manifest is TOML or JSON; every key is optional but where",
    'marked required, and an unknown key is refused with its name. How manifests are written and',
    'checked: [Manifests](../manifest.md); what each capability grants: [Capabilities](../capabilities.md);',
    'the agent types and their tables: [Agent types](../agent-types.md); code agents:',
    '[code-agents.md](../code-agents.md); forging tools: [forged-tools.md](../forged-tools.md).',
    '',
    '## Top level',
    '',
    '| field | type | default | meaning |',
    '|---|---|---|---|',
    ...topRows,
    '',
    sections.join('\n\n'),
    '',
  ].join('\n');
}
