import { describe, expect, it } from 'vitest';
import { PackageError } from '../../src/errors/index.ts';
import { installCodeFor, isInstallCode, parseInstallCode } from '../../src/packages/install-code.ts';

const CROCKFORD_CODE = /^(AGNT|SKIL)-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/;

describe('parseInstallCode()', () => {
  it('reads a lowercase code as its uppercase normal form', () => {
    expect(parseInstallCode('agnt-7qk2-m4xd')).toEqual({ kind: 'AGNT', code: 'AGNT-7QK2-M4XD' });
    expect(parseInstallCode('Skil-abcd-ef01')).toEqual({ kind: 'SKIL', code: 'SKIL-ABCD-EF01' });
  });

  it('reads o as 0 and i and l as 1, as Crockford decoding does', () => {
    expect(parseInstallCode('SKIL-oIl0-ABCD').code).toBe('SKIL-0110-ABCD');
    expect(parseInstallCode('agnt-LOOI-iloo').code).toBe('AGNT-1001-1100');
  });

  it('accepts a code without hyphens between the groups, and surrounding spaces', () => {
    expect(parseInstallCode('AGNT7QK2M4XD').code).toBe('AGNT-7QK2-M4XD');
    expect(parseInstallCode('AGNT-7QK2M4XD').code).toBe('AGNT-7QK2-M4XD');
    expect(parseInstallCode('  agnt-7qk2-m4xd\n').code).toBe('AGNT-7QK2-M4XD');
  });

  it('refuses U, naming the character, its position and the expected form', () => {
    expect(() => parseInstallCode('AGNT-7QU2-M4XD')).toThrow(PackageError);
    expect(() => parseInstallCode('AGNT-7QU2-M4XD')).toThrow(
      '"AGNT-7QU2-M4XD" is not an install code: "U" (character 8) is not Crockford base32; expected AGNT-XXXX-XXXX',
    );
    expect(() => parseInstallCode('skil-abcd-efgu')).toThrow('"u" (character 14) is not Crockford base32');
  });

  it('counts the position in the text as typed, leading spaces included', () => {
    expect(() => parseInstallCode('  AGNT-LOUD-0000')).toThrow('"U" (character 10) is not Crockford base32');
  });

  it('refuses punctuation, spaces and letters outside ASCII inside the code', () => {
    expect(() => parseInstallCode('AGNT-12 4-5678')).toThrow('" " (character 8) is not Crockford base32');
    expect(() => parseInstallCode('AGNT-1234-56*8')).toThrow('"*" (character 13) is not Crockford base32');
    expect(() => parseInstallCode('AGNT-ßABC-0000')).toThrow('"ß" (character 6) is not Crockford base32');
  });

  it('refuses a wrong prefix, naming the expected form', () => {
    expect(() => parseInstallCode('PKG-1234-5678')).toThrow(
      '"PKG-1234-5678" is not an install code: expected AGNT-XXXX-XXXX (a package) or SKIL-XXXX-XXXX (a skill)',
    );
    expect(() => parseInstallCode('SKILL-1234-5678')).toThrow('is not an install code');
    expect(() => parseInstallCode('')).toThrow('"" is not an install code: expected AGNT-XXXX-XXXX');
  });

  it('refuses a code of the wrong length, saying how many characters it has', () => {
    expect(() => parseInstallCode('AGNT-1234-567')).toThrow('it has 7 characters after AGNT, not 8; expected AGNT-XXXX-XXXX');
    expect(() => parseInstallCode('AGNT-1234-56789')).toThrow('it has 9 characters after AGNT, not 8');
    expect(() => parseInstallCode('AGNT')).toThrow('it has 0 characters after AGNT, not 8');
  });

  it('refuses a hyphen anywhere but after the prefix and between the groups', () => {
    expect(() => parseInstallCode('AGNT-123-45678')).toThrow('the hyphen at character 9 is out of place');
    expect(() => parseInstallCode('AGNT--1234-5678')).toThrow('the hyphen at character 6 is out of place');
    expect(() => parseInstallCode('AGNT-1234-5678-')).toThrow('the hyphen at character 15 is out of place');
  });
});

describe('isInstallCode()', () => {
  it('tells a code, even a malformed one, from a path or a qualified name', () => {
    expect(isInstallCode('AGNT-7QK2-M4XD')).toBe(true);
    expect(isInstallCode('skil-abcd-efgh')).toBe(true);
    // Meant as codes, so they are parsed (and refused) rather than read as paths.
    expect(isInstallCode('AGNT-UUUU-0000')).toBe(true);
    expect(isInstallCode('agnt-1')).toBe(true);
    expect(isInstallCode('./agnt-tools')).toBe(false);
    expect(isInstallCode('examples/packages/chief-of-staff')).toBe(false);
    expect(isInstallCode('@nebo/agents/chief-of-staff')).toBe(false);
    expect(isInstallCode('agent-pack.tgz')).toBe(false);
  });
});

describe('installCodeFor()', () => {
  it('gives the same code for the same name and version, in the normal form', () => {
    const code = installCodeFor('AGNT', '@nebo/agents/chief-of-staff', '1.0.0');
    expect(code).toMatch(CROCKFORD_CODE);
    expect(installCodeFor('AGNT', '@nebo/agents/chief-of-staff', '1.0.0')).toBe(code);
    expect(parseInstallCode(code.toLowerCase()).code).toBe(code);
  });

  it('keeps the codes already handed out: the first 40 bits of SHA-256 of name@version', () => {
    // Computed independently (Python's hashlib); a change here breaks every published code.
    expect(installCodeFor('AGNT', '@nebo/agents/chief-of-staff', '1.0.0')).toBe('AGNT-CQVZ-TV4S');
    expect(installCodeFor('SKIL', '@acme/skills/note-taker', '2.1.0')).toBe('SKIL-D321-40KG');
  });

  it('gives another code for another version or name', () => {
    const first = installCodeFor('AGNT', '@nebo/agents/chief-of-staff', '1.0.0');
    expect(installCodeFor('AGNT', '@nebo/agents/chief-of-staff', '1.0.1')).not.toBe(first);
    expect(installCodeFor('AGNT', '@nebo/agents/data-pipeline', '1.0.0')).not.toBe(first);
    expect(installCodeFor('SKIL', '@nebo/skills/note-taker', '1.0.0')).toMatch(/^SKIL-/);
  });
});
