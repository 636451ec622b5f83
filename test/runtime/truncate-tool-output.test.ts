import { describe, expect, it } from 'vitest';
import { TOOL_OUTPUT_MAX_CHARS, truncateToolOutput } from '../../src/runtime/index.ts';

describe('truncateToolOutput()', () => {
  it('caps output at 50,000 characters by default', () => {
    expect(TOOL_OUTPUT_MAX_CHARS).toBe(50_000);
  });

  it('writes the spec marker with thousands separators when output is over the default cap', () => {
    const output = truncateToolOutput('x'.repeat(125_432));
    expect(output).toBe(`${'x'.repeat(50_000)}\n\n[Output truncated: 125,432 characters → 50,000 characters]`);
  });

  it('returns output exactly at the limit unchanged', () => {
    expect(truncateToolOutput('abcde', 5)).toBe('abcde');
    expect(truncateToolOutput('x'.repeat(50_000))).toBe('x'.repeat(50_000));
  });

  it('truncates output one character over the limit', () => {
    expect(truncateToolOutput('abcdef', 5)).toBe('abcde\n\n[Output truncated: 6 characters → 5 characters]');
  });

  it('returns short and empty output unchanged', () => {
    expect(truncateToolOutput('', 5)).toBe('');
    expect(truncateToolOutput('abc', 5)).toBe('abc');
  });

  it('counts an accented character as one character, not two UTF-8 bytes', () => {
    expect(truncateToolOutput('ééééé', 5)).toBe('ééééé');
    expect(truncateToolOutput('éééééé', 5)).toBe('ééééé\n\n[Output truncated: 6 characters → 5 characters]');
  });

  it('keeps one character fewer rather than split an emoji at the cut, and says so in the marker', () => {
    const output = truncateToolOutput('abcd😀', 5);
    expect(output).toBe('abcd\n\n[Output truncated: 6 characters → 4 characters]');
    expect(output.isWellFormed()).toBe(true);
  });

  it('keeps an emoji that ends exactly at the cut', () => {
    expect(truncateToolOutput('abc😀de', 5)).toBe('abc😀\n\n[Output truncated: 7 characters → 5 characters]');
  });

  it('keeps nothing of the output with a limit of 0', () => {
    expect(truncateToolOutput('abc', 0)).toBe('\n\n[Output truncated: 3 characters → 0 characters]');
  });

  it('throws a RangeError for a negative or fractional limit', () => {
    expect(() => truncateToolOutput('abc', -1)).toThrow(/maxChars must be a non-negative integer, got -1/);
    expect(() => truncateToolOutput('abc', 1.5)).toThrow(RangeError);
  });
});
