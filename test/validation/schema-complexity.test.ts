import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ForgeRequestSchema } from '../../src/forged-tools/index.ts';
import { toolJsonSchema } from '../../src/runtime/index.ts';
import { BUILTIN_TOOLS } from '../../src/tools/index.ts';
import {
  boundedSchemaValidator,
  compileJsonSchema,
  formatIssues,
  MAX_CHECK_MS,
  MAX_CHECK_WORK,
  MAX_SCHEMA_BRANCHES,
  MAX_SCHEMA_CHECKS,
  MAX_SCHEMA_DEPTH,
  MAX_SCHEMA_NODES,
  MAX_SCHEMA_REPEATS,
  measureJsonSchema,
  SchemaRefusedError,
} from '../../src/validation/index.ts';
import { doublingChain, nestedUnder, RECURSIVE_ANY_OF, RECURSIVE_ANY_OF_POINTER } from '../support/hostile-schemas.ts';
import { BOOK_SCHEMA } from '../mcp/book-schema.ts';

/** The refusal `measureJsonSchema` throws for `schema`, failing when it accepts it. */
function refusalOf(schema: Record<string, unknown>, dialect: 'draft-07' | '2020-12' = '2020-12'): SchemaRefusedError {
  try {
    measureJsonSchema(schema, { dialect });
  } catch (error) {
    if (error instanceof SchemaRefusedError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(schema).slice(0, 200)} to be refused`);
}

describe('measureJsonSchema refuses schemas whose checks of a value grow without bound', () => {
  it('refuses the recursive $ref through an anyOf of identical branches (issue 36) before Ajv compiles it, naming the $ref and the limit', () => {
    const refusal = refusalOf(RECURSIVE_ANY_OF, 'draft-07');
    expect(refusal.pointer).toBe(RECURSIVE_ANY_OF_POINTER);
    expect(refusal.message).toMatch(
      /^at "\/\$defs\/n\/properties\/a\/anyOf\/0\/\$ref": "\$ref" cycle through "anyOf": "anyOf\/0" and "anyOf\/1" both lead on to "\/\$defs\/n"/,
    );
    expect(refusal.message).toContain(`Loom refuses schemas whose checks of one value against one subschema exceed ${MAX_SCHEMA_REPEATS}`);
    expect(refusal.code).toBe('SCHEMA_REFUSED');
    // The one compile point refuses it too: nothing compiles, no value is checked.
    expect(() => compileJsonSchema(RECURSIVE_ANY_OF, { dialect: 'draft-07', root: '(input)' })).toThrow(SchemaRefusedError);
  });

  it('refuses the same cycle wherever the anyOf stands: in the definition itself, or as a oneOf or allOf', () => {
    const inDefinition = {
      type: 'object',
      properties: { a: { $ref: '#/$defs/n' } },
      $defs: {
        n: {
          anyOf: [
            { type: 'object', properties: { a: { $ref: '#/$defs/n' } } },
            { type: 'object', properties: { a: { $ref: '#/$defs/n' } } },
          ],
        },
      },
    };
    expect(refusalOf(inDefinition).message).toMatch(/^at "\/\$defs\/n\/anyOf\/0": "\$ref" cycle through "anyOf"/);
    for (const keyword of ['oneOf', 'allOf']) {
      const schema = { $defs: { n: { type: 'object', properties: { a: { [keyword]: [{ $ref: '#/$defs/n' }, { $ref: '#/$defs/n' }] } } } }, $ref: '#/$defs/n' };
      expect(refusalOf(schema).message).toContain(`cycle through "${keyword}"`);
    }
  });

  it('refuses branches that meet again without recursion once their product passes the limit: the product of branch counts along a path through refs', () => {
    expect(() => measureJsonSchema(doublingChain(6), { dialect: '2020-12' })).not.toThrow(); // 2^6 = 64 checks of one value: at the limit
    const refusal = refusalOf(doublingChain(23));
    expect(refusal.message).toMatch(
      /^at "\/\$defs\/d0\/anyOf\/0\/\$ref": "anyOf\/0" and "anyOf\/1" of "\/\$defs\/d0" both lead to "\/\$defs\/d\d+", so a value 1 level deep \("\/s"\) is checked against it/,
    );
    expect(refusal.message).toContain(`exceed ${MAX_SCHEMA_REPEATS}`);
  });

  it('refuses a $ref cycle that never moves into the value, which Ajv would follow without end', () => {
    const refusal = refusalOf({ type: 'object', allOf: [{ $ref: '#/$defs/a' }], $defs: { a: { not: { $ref: '#' } } } });
    expect(refusal.pointer).toBe('/$defs/a/not/$ref');
    expect(refusal.message).toContain('"$ref" cycle that never moves into a part of the value ("" → "/allOf/0" → "/$defs/a" → "/$defs/a/not" → "")');
  });

  it('refuses a combinator of too many branches, too many subschemas, and nesting too deep, each naming where and the limit', () => {
    const wide = refusalOf({ type: 'object', properties: { c: { oneOf: Array.from({ length: MAX_SCHEMA_BRANCHES + 1 }, (_, index) => ({ const: index })) } } });
    expect(wide.message).toBe(
      `at "/properties/c/oneOf": ${MAX_SCHEMA_BRANCHES + 1} branches; Loom refuses schemas whose "oneOf" subschemas side by side exceed ${MAX_SCHEMA_BRANCHES}`,
    );
    const flat = refusalOf({
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: MAX_SCHEMA_BRANCHES + 1 }, (_, index) => [`p${index}`, { type: 'string' }])),
    });
    expect(flat.message).toBe(
      `at "/properties": ${MAX_SCHEMA_BRANCHES + 1} subschemas side by side; Loom refuses schemas whose "properties" subschemas side by side exceed ${MAX_SCHEMA_BRANCHES}`,
    );
    const object = (size: number) => ({
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: size }, (_, index) => [`p${index}`, { type: 'string' }])),
    });
    const many = refusalOf({
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 10 }, (_, index) => [`o${index}`, object(MAX_SCHEMA_NODES / 10)])),
    });
    expect(many.message).toBe(`at "": more than ${MAX_SCHEMA_NODES} subschemas; Loom refuses schemas whose subschemas exceed ${MAX_SCHEMA_NODES}`);
    let deep: Record<string, unknown> = { type: 'string' };
    for (let level = 0; level <= MAX_SCHEMA_DEPTH; level += 1) deep = { type: 'array', items: deep };
    const nested = refusalOf(deep);
    expect(nested.pointer).toBe(`/items`.repeat(MAX_SCHEMA_DEPTH + 1));
    expect(nested.message).toContain(`Loom refuses schemas whose nesting exceeds ${MAX_SCHEMA_DEPTH}`);
  });

  it('refuses one value checked against more subschemas than the limit, counted as often as they are reached', () => {
    const union = (tag: number) => ({ anyOf: Array.from({ length: 200 }, (_, index) => ({ const: `${tag}-${index}` })) });
    const refusal = refusalOf({ type: 'object', properties: { v: { allOf: [union(1), union(2), union(3), union(4), union(5), union(6)] } } });
    expect(refusal.message).toContain('a part of the value ("/v") would be checked against');
    expect(refusal.message).toContain(`Loom refuses schemas whose checks of one value exceed ${MAX_SCHEMA_CHECKS}`);
  });

  it('follows only $refs into the schema itself, and refuses what would make Ajv resolve one elsewhere', () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ type: 'object', properties: { a: { $ref: 'https://example.com/other.json#/x' } } }, '/properties/a/$ref', 'outside the schema'],
      [{ type: 'object', properties: { a: { $ref: '#thing' } }, $defs: { t: { $anchor: 'thing' } } }, '/properties/a/$ref', 'the anchor "#thing"'],
      [
        { type: 'object', $defs: { t: { $id: 'https://example.com/t.json', type: 'string' } }, properties: { a: { $ref: '#/$defs/t' } } },
        '/$defs/t/$id',
        'a "$id" below the root',
      ],
      [{ type: 'object', properties: { a: { $dynamicRef: '#meta' } } }, '/properties/a/$dynamicRef', 'a "$dynamicRef"'],
      [{ type: 'object', properties: { a: { $ref: '#/$defs/missing' } } }, '/properties/a/$ref', 'points at no schema'],
    ];
    for (const [schema, pointer, reason] of cases) {
      const refusal = refusalOf(schema);
      expect(refusal.pointer).toBe(pointer);
      expect(refusal.message).toContain(reason);
      expect(refusal.message).toContain('Loom follows only "$ref"s into the schema itself');
    }
    // A $ref to the schema's own $id, and into a part of it Ajv does not know as a keyword, is followed.
    const own = {
      $id: 'https://example.com/tool.json',
      type: 'object',
      properties: { a: { $ref: 'https://example.com/tool.json#/x-shapes/leaf' }, b: { $ref: 'tool.json' } },
      'x-shapes': { leaf: { type: 'string' } },
    };
    expect(measureJsonSchema(own, { dialect: '2020-12' }).checksPerValue).toBeGreaterThan(0);
  });
});

describe('measureJsonSchema accepts ordinary schemas', () => {
  it("accepts every built-in tool's JSON Schema and forge_tool's, each checking a part of a value against at most a few subschemas", () => {
    const schemas = [
      ...BUILTIN_TOOLS.map((tool) => [tool.name, toolJsonSchema(tool)] as const),
      ['forge_tool', z.toJSONSchema(ForgeRequestSchema, { io: 'input', unrepresentable: 'any' })] as const,
    ];
    expect(schemas.length).toBeGreaterThan(15);
    for (const [name, schema] of schemas) {
      const bounds = measureJsonSchema(schema, { dialect: '2020-12' });
      expect(bounds.checksPerValue, name).toBeLessThanOrEqual(8);
    }
  });

  it('accepts recursive schemas whose branches recurse through different types or properties: JSON values, trees, optional children, unions of shapes', () => {
    const jsonValue = {
      $ref: '#/$defs/v',
      $defs: {
        v: {
          anyOf: [
            { type: 'string' },
            { type: 'number' },
            { type: 'boolean' },
            { type: 'null' },
            { type: 'array', items: { $ref: '#/$defs/v' } },
            { type: 'object', additionalProperties: { $ref: '#/$defs/v' } },
          ],
        },
      },
    };
    const tree = {
      $ref: '#/$defs/node',
      $defs: {
        node: {
          type: 'object',
          properties: { value: { type: 'number' }, left: { $ref: '#/$defs/node' }, right: { $ref: '#/$defs/node' } },
          required: ['value'],
        },
      },
    };
    // As pydantic writes a model whose children are optional (`list[Node] | None`).
    const optionalChildren = {
      $defs: {
        Node: {
          type: 'object',
          properties: { name: { type: 'string' }, children: { anyOf: [{ type: 'array', items: { $ref: '#/$defs/Node' } }, { type: 'null' }], default: null } },
          required: ['name'],
        },
      },
      type: 'object',
      properties: { root: { $ref: '#/$defs/Node' } },
    };
    // A filter language: its operators recurse through properties of their own.
    const filter = {
      $defs: {
        Filter: {
          oneOf: [
            { type: 'object', properties: { and: { type: 'array', items: { $ref: '#/$defs/Filter' } } }, required: ['and'], additionalProperties: false },
            { type: 'object', properties: { or: { type: 'array', items: { $ref: '#/$defs/Filter' } } }, required: ['or'], additionalProperties: false },
            { type: 'object', properties: { not: { $ref: '#/$defs/Filter' } }, required: ['not'], additionalProperties: false },
            { type: 'object', properties: { field: { type: 'string' }, equals: {} }, required: ['field', 'equals'], additionalProperties: false },
          ],
        },
      },
      type: 'object',
      properties: { where: { $ref: '#/$defs/Filter' } },
    };
    for (const schema of [jsonValue, tree, optionalChildren, filter, BOOK_SCHEMA])
      expect(() => measureJsonSchema(schema, { dialect: '2020-12' })).not.toThrow();
    expect(measureJsonSchema(jsonValue, { dialect: '2020-12' }).checksPerValue).toBe(8); // the root's $ref, the definition, its six branches
  });

  it('accepts a large schema: 200 properties of unions of constants, arrays of objects and shared definitions', () => {
    const choice = { oneOf: Array.from({ length: 200 }, (_, index) => ({ const: `choice-${index}`, title: `Choice ${index}` })) };
    const schema = {
      type: 'object',
      $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' }, zip: { type: 'string' } } }, choice },
      properties: Object.fromEntries(
        Array.from({ length: 200 }, (_, index) => [
          `field_${index}`,
          index % 3 === 0
            ? { $ref: '#/$defs/choice' }
            : index % 3 === 1
              ? { type: 'array', items: { allOf: [{ $ref: '#/$defs/address' }, { type: 'object', properties: { label: { type: 'string' } } }] } }
              : { type: 'string', maxLength: 100 },
        ]),
      ),
    };
    const bounds = measureJsonSchema(schema, { dialect: '2020-12' });
    expect(bounds.checksPerValue).toBe(202);
    expect(
      compileJsonSchema(schema, { dialect: '2020-12', root: '(input)' })({ field_0: 'choice-7', field_1: [{ street: 'Main', label: 'home' }] }),
    ).toBeUndefined();
  });
});

describe('compileJsonSchema checks values within a bound', () => {
  const PERSON = {
    type: 'object',
    properties: { name: { type: 'string' }, age: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
    required: ['name'],
    additionalProperties: false,
  };

  it('names up to five problems of a small value, where each is, as before', () => {
    const check = compileJsonSchema(PERSON, { dialect: '2020-12', root: '(input)' });
    expect(check({ name: 'Ada', age: 36 })).toBeUndefined();
    expect(check({ age: 'old', tags: [1, 2, 3, 4], extra: true })).toBe(
      '(input) must have required property \'name\'; (input) must NOT have additional properties ("extra"); /age must be integer; /tags/0 must be string; /tags/1 must be string',
    );
  });

  it('names the first problem only of a value past MAX_EVERY_PROBLEM_WORK, without allErrors', () => {
    const check = compileJsonSchema(PERSON, { dialect: '2020-12', root: '(input)' });
    const tags = Array.from({ length: 30_000 }, (_, index) => (index < 10 ? index : `tag ${index}`));
    expect(check({ name: 'Ada', age: 'old', tags })).toBe('/age must be integer');
  });

  it('refuses unchecked a value whose check would pass MAX_CHECK_WORK, naming its size', () => {
    const check = compileJsonSchema(
      { type: 'array', items: { anyOf: Array.from({ length: 200 }, (_, index) => ({ const: index })) } },
      { dialect: '2020-12', root: '(output)' },
    );
    expect(check([1, 2, 3])).toBeUndefined();
    const problem = check(Array.from({ length: MAX_CHECK_WORK / 200 }, (_, index) => index % 200));
    expect(problem).toMatch(
      /^\(output\) is too large to check against the schema: more than [\d,]+ parts, each checked against up to 201 subschemas; Loom checks at most 5,000,000 \(MAX_CHECK_WORK\)$/,
    );
  });

  it('counts the pairs of items "uniqueItems" compares: 5,000 objects are 12.5 million pairs, refused', () => {
    const check = compileJsonSchema({ type: 'array', uniqueItems: true, items: { type: 'object' } }, { dialect: '2020-12', root: '(input)' });
    expect(check([{ a: 1 }, { a: 1 }])).toBe('(input) must NOT have duplicate items (items ## 0 and 1 are identical)');
    expect(check(Array.from({ length: 5_000 }, (_, index) => ({ index })))).toContain('its arrays\' items compared in pairs ("uniqueItems")');
  });

  it('checks a schema with a regular expression on the schema-check thread, and stops a check that backtracks past MAX_CHECK_MS; the next check gets a new thread', () => {
    const check = compileJsonSchema({ type: 'object', properties: { w: { type: 'string', pattern: '^(a|a)*$' } } }, { dialect: '2020-12', root: '(input)' });
    expect(check({ w: 'aaaa' })).toBeUndefined();
    expect(check({ w: 'ab' })).toBe('/w must match pattern "^(a|a)*$"');
    const started = performance.now();
    expect(check({ w: `${'a'.repeat(40)}b` })).toBe(
      `(input) could not be checked against the schema within ${MAX_CHECK_MS} ms (a "pattern" that backtracks?); Loom stops a check at ${MAX_CHECK_MS} ms (MAX_CHECK_MS)`,
    );
    expect(performance.now() - started).toBeLessThan(MAX_CHECK_MS + 1_000);
    expect(check({ w: 'aaa' })).toBeUndefined();
    expect(check({ w: 'b' })).toBe('/w must match pattern "^(a|a)*$"');
  });

  it('serves the MCP SDK as its validator provider: a refused schema throws, values come back valid or with the problems', () => {
    expect(() => boundedSchemaValidator.getValidator(RECURSIVE_ANY_OF)).toThrow(SchemaRefusedError);
    const validate = boundedSchemaValidator.getValidator<{ name: string }>(PERSON);
    expect(validate({ name: 'Ada' })).toEqual({ valid: true, data: { name: 'Ada' }, errorMessage: undefined });
    expect(validate({})).toEqual({ valid: false, data: undefined, errorMessage: "(value) must have required property 'name'" });
  });
});

describe('a forge request', () => {
  it("is refused with its schema's path and the limit when its inputSchema or outputSchema is the attack of issue 36", () => {
    const request = {
      name: 'nest_it',
      description: 'Nests',
      inputSchema: RECURSIVE_ANY_OF,
      outputSchema: { type: 'object', properties: { out: { $ref: '#/$defs/d0' } }, $defs: doublingChain(10)['$defs'] },
      implementation: { mode: 'sandbox', code: 'function execute(input) { return input; }', allowlist: [] },
      testCases: [{ input: nestedUnder(19) }],
    };
    const parsed = ForgeRequestSchema.safeParse(request);
    expect(parsed.success).toBe(false);
    const problems = parsed.success ? [] : formatIssues(parsed.error, { style: 'json' });
    expect(problems[0]).toMatch(/^inputSchema at "\/\$defs\/n\/properties\/a\/anyOf\/0\/\$ref": "\$ref" cycle through "anyOf"/);
    expect(problems[1]).toMatch(/^outputSchema at "\/\$defs\/d0\/anyOf\/0\/\$ref": /);
  });
});
