import { describe, expect, it } from 'vitest';
import { jsonDepthProblem, jsonTextDepth, MAX_JSON_DEPTH, measureJsonValue } from '../../src/validation/index.ts';

describe('measureJsonValue', () => {
  it('counts levels of arrays and objects, scalars none', () => {
    expect(measureJsonValue(1)).toEqual({ depth: 0 });
    expect(measureJsonValue([])).toEqual({ depth: 1 });
    expect(measureJsonValue({ x: [1, { y: [2] }], z: 3 })).toEqual({ depth: 4 });
  });

  it('stops at the first level past the limit without recursion, naming the first keys of the path to it', () => {
    let value: unknown = 1;
    for (let level = 0; level < 100_000; level += 1) value = [value];
    expect(measureJsonValue({ a: { b: value } }, 10)).toEqual({ depth: 11, path: ['a', 'b', 0, 0, 0, 0] });
    expect(jsonDepthProblem('the input', { a: value })).toBe(
      `the input is nested deeper than ${MAX_JSON_DEPTH} levels (at /a/0/0/0/0/0/…), Loom's limit for JSON (MAX_JSON_DEPTH)`,
    );
  });

  it('measures a container reached twice once (2^100 paths, 100 levels), and one holding itself as too deep', () => {
    let shared: unknown = 1;
    for (let level = 0; level < 100; level += 1) shared = [shared, shared];
    expect(measureJsonValue(shared)).toEqual({ depth: 100 });
    expect(measureJsonValue(shared, 99).depth).toBe(100);
    const cycle: Record<string, unknown> = {};
    cycle['self'] = cycle;
    expect(measureJsonValue({ q: [cycle] })).toEqual({ depth: MAX_JSON_DEPTH + 1, path: ['q', 0, 'self'] });
  });
});

describe('jsonTextDepth', () => {
  it('counts brackets outside strings, escaped quotes included', () => {
    expect(jsonTextDepth('{"a":[[[]]]}')).toBe(4);
    expect(jsonTextDepth(JSON.stringify({ a: '[[[{"\\"[[' }))).toBe(1);
    expect(jsonTextDepth('"just a string"')).toBe(0);
  });

  it('stops at the first level past the limit', () => {
    expect(jsonTextDepth('['.repeat(1_000_000), 512)).toBe(513);
    expect(jsonTextDepth(`${'['.repeat(512)}${']'.repeat(512)}`, 512)).toBe(512);
  });
});
