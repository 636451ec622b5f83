import { describe, expect, it } from 'vitest';
import { canonicalJson, DEFAULT_TOOL_TIMEOUT_MS, MAX_CONTINUATIONS, STABILITY_GUIDELINES, withStabilityGuidelines } from '../../src/runtime/index.ts';

describe('withStabilityGuidelines()', () => {
  it('holds the five guidelines of the spec under their heading', () => {
    expect(STABILITY_GUIDELINES.split('\n')).toEqual([
      'STABILITY GUIDELINES',
      '- If a tool call fails twice, try a different approach',
      "- If you're repeating the same action, stop and reflect",
      "- If you're unsure, ask the user instead of guessing",
      '- If a task is blocked, report the blocker clearly',
      '- Never retry the same failed operation more than 3 times',
    ]);
  });

  it('appends the guidelines after a blank line', () => {
    expect(withStabilityGuidelines('You are a researcher.\n')).toBe(`You are a researcher.\n\n${STABILITY_GUIDELINES}`);
  });

  it('returns the guidelines alone when there is no prompt or an empty one', () => {
    expect(withStabilityGuidelines()).toBe(STABILITY_GUIDELINES);
    expect(withStabilityGuidelines('  ')).toBe(STABILITY_GUIDELINES);
  });

  it('does not append the guidelines twice when applied twice', () => {
    const once = withStabilityGuidelines('Be brief.');
    expect(withStabilityGuidelines(once)).toBe(once);
  });
});

describe('runtime constants', () => {
  it('allow 3 continuations and 60 seconds per tool call', () => {
    expect(MAX_CONTINUATIONS).toBe(3);
    expect(DEFAULT_TOOL_TIMEOUT_MS).toBe(60_000);
  });
});

describe('canonicalJson()', () => {
  it('sorts object keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
  });

  it('leaves out undefined members, honours toJSON and writes bigints as strings', () => {
    expect(canonicalJson({ a: undefined, at: new Date(0), n: 10n })).toBe('{"at":"1970-01-01T00:00:00.000Z","n":"10"}');
    expect(canonicalJson(undefined)).toBe('null');
  });
});
