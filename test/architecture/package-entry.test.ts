import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));

interface PackageJson {
  bin?: string | Record<string, string>;
  main?: string;
  exports?: unknown;
}

/** Every path a field of `package.json` names, however deep (the strings of `exports` and `bin`). */
function pathsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(pathsIn);
  return [];
}

describe('package.json', () => {
  const manifest = JSON.parse(readFileSync(join(REPOSITORY, 'package.json'), 'utf8')) as PackageJson;

  it('names only files that exist', () => {
    const named = [manifest.bin, manifest.main, manifest.exports].flatMap(pathsIn);
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((path) => !existsSync(join(REPOSITORY, path)))).toEqual([]);
  });

  it('offers no library entry: Loom is used through its command and its APIs (docs/architecture.md)', () => {
    expect({ main: manifest.main, exports: manifest.exports }).toEqual({ main: undefined, exports: undefined });
  });
});
