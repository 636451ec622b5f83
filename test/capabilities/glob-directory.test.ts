import { describe, expect, it } from 'vitest';
import { globDirectory } from '../../src/capabilities/index.ts';

describe('globDirectory()', () => {
  it('returns the directory before the first "*" of the pattern', () => {
    expect(globDirectory('/data/inbox/*.json')).toBe('/data/inbox');
    expect(globDirectory('/data/*/reports/*.csv')).toBe('/data');
  });

  it('cuts a partial name before "*" back to its directory', () => {
    expect(globDirectory('/data/in*')).toBe('/data');
  });

  it('returns the parent directory of a pattern without "*"', () => {
    expect(globDirectory('/data/report.json')).toBe('/data');
  });

  it('returns "/" for a pattern directly under the root and "." for one without "/"', () => {
    expect(globDirectory('/*.json')).toBe('/');
    expect(globDirectory('*.json')).toBe('.');
  });
});
