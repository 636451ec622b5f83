import { createHash } from 'node:crypto';
import { PackageError } from '../errors/index.ts';

/**
 * Install codes (spec/04 "Install Codes"): `AGNT-XXXX-XXXX` for packages and `SKIL-XXXX-XXXX`
 * for skills, in Crockford base32 (no I, L, O, U). Input is read as Crockford decodes it:
 * case-insensitive, `I` and `L` as 1, `O` as 0; `U` is refused.
 */

/** The kind a code's prefix names. */
export type InstallCodeKind = 'AGNT' | 'SKIL';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const READ_AS: Readonly<Record<string, string>> = { I: '1', L: '1', O: '0' };
const SHAPE = /^(AGNT|SKIL)-?(.{4})-?(.{4})$/i;

/** Whether the text is meant as an install code (its prefix), so it is parsed as one, not read as a path or a name. */
export function isInstallCode(text: string): boolean {
  return /^(AGNT|SKIL)-/i.test(text.trim());
}

/**
 * Parses a code into its normal form.
 * @throws {PackageError} for a wrong prefix or length, or a character outside the alphabet (named with its position).
 */
export function parseInstallCode(text: string): { kind: InstallCodeKind; code: string } {
  const trimmed = text.trim();
  const match = SHAPE.exec(trimmed);
  if (match === null) throw new PackageError(`"${text}" is not an install code: expected AGNT-XXXX-XXXX (a package) or SKIL-XXXX-XXXX (a skill), X being Crockford base32 (0-9, A-Z without I, L, O, U)`);
  const [, prefix = '', first = '', second = ''] = match;
  const groups = [first, second].map((group, groupIndex) =>
    [...group.toUpperCase()]
      .map((character, index) => {
        const read = READ_AS[character] ?? character;
        if (!ALPHABET.includes(read)) {
          const position = trimmed.toUpperCase().indexOf(group.toUpperCase(), groupIndex === 0 ? prefix.length : prefix.length + 4) + index + 1;
          throw new PackageError(`"${text}" is not an install code: "${character}" (character ${position}) is not Crockford base32, which has no I, L, O or U; the digits are 0-9 and A-Z without I, L, O, U`);
        }
        return read;
      })
      .join(''),
  );
  const kind = prefix.toUpperCase() as InstallCodeKind;
  return { kind, code: `${kind}-${groups[0] ?? ''}-${groups[1] ?? ''}` };
}

/** The code of a published name and version: the first 40 bits of SHA-256 of `name@version`, as 8 Crockford characters. */
export function installCodeFor(kind: InstallCodeKind, qualifiedName: string, version: string): string {
  const digest = createHash('sha256').update(`${qualifiedName}@${version}`).digest();
  let bits = 0n;
  for (const byte of digest.subarray(0, 5)) bits = (bits << 8n) | BigInt(byte);
  let characters = '';
  for (let index = 7; index >= 0; index -= 1) characters += ALPHABET[Number((bits >> BigInt(index * 5)) & 31n)];
  return `${kind}-${characters.slice(0, 4)}-${characters.slice(4)}`;
}
