import { describe, expect, it } from 'vitest';
import { compileSchema, subsetMismatch } from '../../src/forged-tools/output-check.ts';
import { MappingReferenceError, referenceProblems, resolveMapping } from '../../src/forged-tools/references.ts';

const scope = {
  input: { topic: 'looms', n: 3, nested: { deep: true } },
  steps: new Map<string, unknown>([['search', { output: 'found 2', hits: ['a', 'b'] }]]) as never,
  prev: { output: 'summary text', count: 2 },
};

describe('resolveMapping()', () => {
  it('resolves whole-value references to their JSON, references inside strings to their text, and keeps literals', () => {
    expect(
      resolveMapping(
        {
          all: '$input',
          n: '$input.n',
          deep: '$input.nested.deep',
          hits: '$steps.search.hits',
          prev: '$prev',
          text: 'About $input.topic: $prev.output ($prev.count) $steps.search.hits',
          method: 'GET',
          list: ['$input.n', 7],
          flag: true,
        },
        scope,
      ),
    ).toEqual({
      all: scope.input,
      n: 3,
      deep: true,
      hits: ['a', 'b'],
      prev: scope.prev,
      text: 'About looms: summary text (2) ["a","b"]',
      method: 'GET',
      list: [3, 7],
      flag: true,
    });
  });

  it('throws naming the reference when a field is missing, and keeps "__proto__" a plain key', () => {
    expect(() => resolveMapping({ x: '$prev.missing' }, scope)).toThrow(
      new MappingReferenceError('"$prev.missing" points nowhere: there is no "missing" there'),
    );
    const resolved = resolveMapping(JSON.parse('{"__proto__": {"polluted": 1}}') as never, scope);
    expect(Object.keys(resolved)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect((resolved as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});

describe('referenceProblems()', () => {
  it('names $prev in the first step, unknown or later steps, and undeclared input fields', () => {
    const problems = referenceProblems(
      [
        { name: 'one', tool: 't', inputMapping: { a: '$prev.output' } },
        { name: 'two', tool: 't', inputMapping: { b: 'see $steps.three.x', c: '$input.nope', d: '$steps.one' } },
        { name: 'three', tool: 't', inputMapping: {} },
      ],
      { type: 'object', properties: { topic: { type: 'string' } } },
    );
    expect(problems).toEqual([
      'step 1 "one": "$prev.output" points nowhere: the first step has no previous step (use $input)',
      'step 2 "two": "$steps.three.x" points nowhere: no earlier step is named "three" (earlier steps: one)',
      'step 2 "two": "$input.nope" points nowhere: the input schema has no property "nope" (it has topic)',
    ]);
  });
});

describe('subsetMismatch() and compileSchema()', () => {
  it('compares only the keys a test names, arrays by length and item', () => {
    expect(subsetMismatch({ a: 1 }, { a: 1, b: 2 })).toBeUndefined();
    expect(subsetMismatch({ rows: [{ n: 'x' }] }, { rows: [{ n: 'x', extra: 1 }] })).toBeUndefined();
    expect(subsetMismatch({ rows: [{ n: 'x' }] }, { rows: [] })).toBe('.rows: expected 1 items, got 0');
    expect(subsetMismatch({ a: { b: 2 } }, { a: { b: 3 } })).toBe('.a.b: expected 2, got 3');
    expect(subsetMismatch(5, undefined)).toBe('the output: expected 5, got nothing');
  });

  it('validates with a real JSON Schema validator and names the path', () => {
    const check = compileSchema({ type: 'object', properties: { result: { type: 'number' } }, required: ['result'] });
    expect(check({ result: 1 })).toBeUndefined();
    expect(check({ result: 'x' })).toBe('/result must be number');
    expect(check({})).toBe("(output) must have required property 'result'");
    expect(() => compileSchema({ type: 'nonsense' })).toThrow(/^not a valid JSON Schema: /);
  });
});
