import { createHash } from 'node:crypto';
import { PackageError } from '../errors/index.ts';

/**
 * Install codes (spec/04 "Install Codes"): `AGNT-XXXX-XXXX` for packages and `SKIL-XXXX-XXXX`
 * for skills, eight characters of Crockford base32 (no I, L, O, U). Input is read the way
 * Crockford decoding reads it: case-insensitive, `I` and `L` as 1, `O` as 0, the hyphen between
 * the groups optional; `U` and everything else outside the alphabet is refused.
 */

/** The kind a code's prefix names: `AGNT` a package, `SKIL` a skill. */
export type InstallCodeKind = 'AGNT' | 'SKIL';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** Crockford's decoding of the letters left out of the alphabet for looking like digits. */
const READ_AS: Readonly<Record<string, string>> = { I: '1', L: '1', O: '0' };
const PREFIX = /^(AGNT|SKIL)/i;
const GROUP_LENGTH = 4;
const EXPECTED = 'expected AGNT-XXXX-XXXX (a package) or SKIL-XXXX-XXXX (a skill), each X one of 0-9 and A-Z without U (I and L read as 1, O as 0)';

/**
 * Whether the text is meant as an install code: it starts with `AGNT-` or `SKIL-`, in any case.
 * Callers use it to tell a code from a path or a qualified name, then parse it with
 * {@link parseInstallCode}, so a malformed code is refused before anything is looked up.
 */
export function isInstallCode(text: string): boolean {
  return /^(AGNT|SKIL)-/i.test(text.trim());
}

/**
 * Parses an install code into its kind and normal form (`AGNT-7QK2-M4XD`).
 * @throws {PackageError} for a wrong prefix or length, a misplaced hyphen, or a character outside
 *   the alphabet (named with its position, counted from 1).
 * @example parseInstallCode('agnt-7qk2-m4xo') // { kind: 'AGNT', code: 'AGNT-7QK2-M4X0' }
 */
export function parseInstallCode(text: string): { kind: InstallCodeKind; code: string } {
  const notACode = (problem: string): PackageError => new PackageError(`"${text}" is not an install code: ${problem}`);
  const start = text.length - text.trimStart().length;
  const trimmed = text.trim();
  const prefix = PREFIX.exec(trimmed)?.[1]?.toUpperCase() as InstallCodeKind | undefined;
  if (prefix === undefined) throw notACode(EXPECTED);
  const digits: string[] = [];
  // The digit counts a hyphen was seen at: one may follow the prefix (0) and one the first group (4).
  const hyphens = new Set<number>();
  let position = start + prefix.length;
  for (const character of trimmed.slice(prefix.length)) {
    position += 1;
    if (character === '-') {
      if ((digits.length !== 0 && digits.length !== GROUP_LENGTH) || hyphens.has(digits.length))
        throw notACode(`the hyphen at character ${position} is out of place; ${EXPECTED}`);
      hyphens.add(digits.length);
      continue;
    }
    const upper = character.charCodeAt(0) < 128 ? character.toUpperCase() : character;
    const read = READ_AS[upper] ?? upper;
    if (read.length !== 1 || !ALPHABET.includes(read)) throw notACode(`"${character}" (character ${position}) is not Crockford base32; ${EXPECTED}`);
    digits.push(read);
  }
  if (digits.length !== 2 * GROUP_LENGTH) throw notACode(`it has ${digits.length} characters after ${prefix}, not ${2 * GROUP_LENGTH}; ${EXPECTED}`);
  const body = digits.join('');
  return { kind: prefix, code: `${prefix}-${body.slice(0, GROUP_LENGTH)}-${body.slice(GROUP_LENGTH)}` };
}

/**
 * The code of a published name and version: the first 40 bits of the SHA-256 of
 * `${qualifiedName}@${version}`, as 8 Crockford characters. The same name and version always
 * give the same code, so codes can be handed out before anyone asks a registry.
 * @example installCodeFor('AGNT', '@nebo/agents/chief-of-staff', '1.0.0') // 'AGNT-…-…'
 */
export function installCodeFor(kind: InstallCodeKind, qualifiedName: string, version: string): string {
  const digest = createHash('sha256').update(`${qualifiedName}@${version}`).digest();
  let bits = 0n;
  for (const byte of digest.subarray(0, 5)) bits = (bits << 8n) | BigInt(byte);
  let characters = '';
  for (let index = 7; index >= 0; index -= 1) characters += ALPHABET[Number((bits >> BigInt(index * 5)) & 31n)] ?? '';
  return `${kind}-${characters.slice(0, GROUP_LENGTH)}-${characters.slice(GROUP_LENGTH)}`;
}
