import { describe, expect, it } from 'vitest';
import { matchesPattern, patternCovers } from '../../src/capabilities/index.ts';

/** Every string over `alphabet` up to `maxLength` characters, the empty string included. */
function allStrings(alphabet: readonly string[], maxLength: number): string[] {
  const strings = [''];
  let layer = [''];
  for (let length = 1; length <= maxLength; length += 1) {
    layer = layer.flatMap((prefix) => alphabet.map((char) => prefix + char));
    strings.push(...layer);
  }
  return strings;
}

describe('matchesPattern() follows the pattern table of spec/01', () => {
  it('matches an exact pattern only to the same string', () => {
    expect(matchesPattern('api.openai.com:443', 'api.openai.com:443')).toBe(true);
    expect(matchesPattern('api.openai.com:443', 'api.openai.com:4430')).toBe(false);
    expect(matchesPattern('api.openai.com:443', 'xapi.openai.com:443')).toBe(false);
    expect(matchesPattern('api.openai.com:443', 'api.openai.com')).toBe(false);
  });

  it('matches anything with "*" alone, the empty string, "/" and "." included', () => {
    for (const value of ['', 'api.openai.com', '/etc/passwd', 'a*b', ' ']) {
      expect(matchesPattern('*', value)).toBe(true);
    }
  });

  it('matches a suffix wildcard only to strings ending with the suffix', () => {
    expect(matchesPattern('*.openai.com:443', 'api.openai.com:443')).toBe(true);
    expect(matchesPattern('*.openai.com:443', 'a.b.openai.com:443')).toBe(true);
    expect(matchesPattern('*.openai.com:443', 'api.openai.com:80')).toBe(false);
    expect(matchesPattern('*.openai.com', 'evilopenai.com')).toBe(false);
    expect(matchesPattern('*.openai.com', 'openai.com.evil.net')).toBe(false);
  });

  it('matches a prefix wildcard only to strings starting with the prefix, across "/"', () => {
    expect(matchesPattern('/data/*', '/data/reports/q4.json')).toBe(true);
    expect(matchesPattern('/data/*', '/database/x')).toBe(false);
    expect(matchesPattern('/data/*', '/other/data/x')).toBe(false);
  });

  it('matches a middle wildcard to strings with both ends, whatever lies between', () => {
    expect(matchesPattern('api.*.com', 'api.openai.com')).toBe(true);
    expect(matchesPattern('api.*.com', 'api.eu.openai.com')).toBe(true);
    expect(matchesPattern('api.*.com', 'api.openai.org')).toBe(false);
    expect(matchesPattern('api.*.com', 'xapi.openai.com')).toBe(false);
  });
});

describe('matchesPattern() beyond the table', () => {
  it('lets "*" match an empty run', () => {
    expect(matchesPattern('a*b', 'ab')).toBe(true);
    expect(matchesPattern('*a*', 'a')).toBe(true);
  });

  it('handles several "*" in one pattern', () => {
    expect(matchesPattern('/data/*/reports/*.json', '/data/eu/reports/q4.json')).toBe(true);
    expect(matchesPattern('/data/*/reports/*.json', '/data/eu/reports/q4.csv')).toBe(false);
    expect(matchesPattern('a*b*c', 'aXbYbZc')).toBe(true);
    expect(matchesPattern('a*b*c', 'aXcYb')).toBe(false);
  });

  it('compares case-sensitively', () => {
    expect(matchesPattern('web_search', 'Web_Search')).toBe(false);
  });

  it('treats regular-expression characters as themselves', () => {
    expect(matchesPattern('a.c', 'abc')).toBe(false);
    expect(matchesPattern('(x)+[y]?$', '(x)+[y]?$')).toBe(true);
    expect(matchesPattern('^.*', 'anything')).toBe(false);
    expect(matchesPattern('a\\*', 'a\\anything')).toBe(true);
  });

  it('answers a pattern built to backtrack badly without hanging', () => {
    expect(matchesPattern('*a*a*a*a*a*a*a*a*b', 'a'.repeat(20_000))).toBe(false);
  });
});

describe('patternCovers()', () => {
  it('covers a narrower glob under a prefix wildcard: "/data/reports/*" under "/data/*"', () => {
    expect(patternCovers('/data/*', '/data/reports/*')).toBe(true);
  });

  it('does not cover a wider glob: "/*" under "/data/*"', () => {
    expect(patternCovers('/data/*', '/*')).toBe(false);
  });

  it('does not cover a pattern that only shares a prefix: "/data*" under "/data/*"', () => {
    expect(patternCovers('/data/*', '/data*')).toBe(false);
  });

  it('covers "api.*.com" under "*.com" but not the reverse', () => {
    expect(patternCovers('*.com', 'api.*.com')).toBe(true);
    expect(patternCovers('api.*.com', '*.com')).toBe(false);
  });

  it('covers an exact value its glob matches, and not one it does not', () => {
    expect(patternCovers('*.openai.com', 'api.openai.com')).toBe(true);
    expect(patternCovers('*.openai.com', 'evilopenai.com')).toBe(false);
  });

  it('does not let an exact pattern cover a glob, even one spelled the same', () => {
    expect(patternCovers('api.openai.com', 'api.*.com')).toBe(false);
  });

  it('covers every pattern with "*" and "*" only with a pattern of stars', () => {
    expect(patternCovers('*', '/data/*')).toBe(true);
    expect(patternCovers('*', '*')).toBe(true);
    expect(patternCovers('**', '*')).toBe(true);
    expect(patternCovers('*x', '*')).toBe(false);
  });

  it('covers a pattern with itself', () => {
    expect(patternCovers('a*b*c', 'a*b*c')).toBe(true);
  });

  it('is sound and exact over every pair of short patterns, checked against brute force', () => {
    // "x" appears in no pattern: it stands for the text a narrower `*` can take that no wider
    // literal spells, which is what makes the answer exact and not merely sound.
    const patterns = allStrings(['a', '.', '*'], 4);
    const values = allStrings(['a', '.', 'x'], 6);
    const disagreements: string[] = [];
    for (const wider of patterns) {
      for (const narrower of patterns) {
        const included = values.every((value) => !matchesPattern(narrower, value) || matchesPattern(wider, value));
        if (patternCovers(wider, narrower) !== included) {
          disagreements.push(`${JSON.stringify(wider)} ⊇ ${JSON.stringify(narrower)}: brute force says ${String(included)}`);
        }
      }
    }
    expect(disagreements).toEqual([]);
  });
});
