import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkLayering, type LayeringRules } from './layering-check.ts';

const RULES: LayeringRules = {
  floors: [['base'], ['middle'], ['top']],
  entries: { 'src/middle/lazy.ts': 'loads alone' },
  leaves: { 'src/top/leaf.ts': { floor: 0, why: 'imports nothing' } },
  exceptions: {},
  nodeFree: { folders: ['middle'], allowed: { 'node:crypto': 'hashes' } },
};

let repository: string | undefined;

/** A throw-away repository whose `src/` holds `files` (path → text). */
function sources(files: Record<string, string>): string {
  repository = mkdtempSync(join(tmpdir(), 'loom-layering-'));
  const base = {
    'src/base/index.ts': 'export const base = 1;\n',
    'src/middle/index.ts': "import { base } from '../base/index.ts';\nexport const middle = base;\n",
    'src/top/index.ts': "import { middle } from '../middle/index.ts';\nexport const top = middle;\n",
  };
  for (const [path, text] of Object.entries({ ...base, ...files })) {
    mkdirSync(dirname(join(repository, path)), { recursive: true });
    writeFileSync(join(repository, path), text);
  }
  return repository;
}

afterEach(() => {
  if (repository !== undefined) rmSync(repository, { recursive: true, force: true });
  repository = undefined;
});

describe('checkLayering()', () => {
  it('finds nothing in sources that keep the rules', () => {
    const root = sources({
      'src/middle/lazy.ts': 'export const lazy = 1;\n',
      'src/top/leaf.ts': 'export const leaf = 1;\n',
      'src/base/uses-leaf.ts': "export { leaf } from '../top/leaf.ts';\n",
      'src/top/load.ts': "export const load = () => import('../middle/lazy.ts');\n",
    });
    expect(checkLayering(root, RULES)).toEqual([]);
  });

  it('reports a cycle made by a type import alone, naming the file and the import', () => {
    const root = sources({ 'src/base/types.ts': "import type { top } from '../top/index.ts';\nexport type Top = typeof top;\n" });
    const cycles = checkLayering(root, RULES).filter((problem) => problem.rule === 'cycle');
    expect(cycles.map((problem) => problem.message)).toEqual([expect.stringContaining('src/base/ -> src/top/ -> src/middle/ -> src/base/') as string]);
    expect(cycles[0]?.message).toContain("src/base/types.ts:1 imports '../top/index.ts' (type)");
  });

  it('reports an arrow up the floors and an import past an index', () => {
    const root = sources({
      'src/top/inner.ts': 'export const inner = 1;\n',
      'src/middle/uses.ts': "import { inner } from '../top/inner.ts';\nexport const uses = inner;\n",
    });
    const problems = checkLayering(root, RULES);
    expect(problems.map((problem) => problem.rule).sort()).toEqual(['around the index', 'cycle', 'up the floors']);
    expect(problems.find((problem) => problem.rule === 'around the index')?.message).toContain(
      "src/middle/uses.ts:1 imports '../top/inner.ts' (value), past the index of src/top/: import from '../top/index.ts'",
    );
    expect(problems.find((problem) => problem.rule === 'up the floors')?.message).toContain('src/middle/ (floor 1) imports src/top/ (floor 2)');
  });

  it('reports a node: module outside the allowed ones, a folder on no floor and an exception nothing needs', () => {
    const root = sources({
      'src/middle/disk.ts': "import { readFileSync } from 'node:fs';\nimport { createHash } from 'node:crypto';\nexport { createHash, readFileSync };\n",
      'src/extra/index.ts': "export { base } from '../base/index.ts';\n",
    });
    const problems = checkLayering(root, { ...RULES, exceptions: { 'base -> top': 'once needed' } });
    expect(problems.map((problem) => problem.message)).toEqual([
      'src/extra/ stands on no floor: add it to the floors of test/architecture/layering-rules.ts, above every folder it imports',
      'the exception "base -> top" is needed no more: no import makes that arrow; remove it from the exceptions',
      "src/middle/disk.ts:1 imports 'node:fs' (value) into src/middle/, which stays free of Node's edges (STYLE.md): take it as a dependency, or add it to the allowed node: modules with the reason",
    ]);
  });

  it('does not take an import written in a string or a comment for an import', () => {
    const root = sources({ 'src/base/text.ts': "// import { top } from '../top/index.ts';\nexport const text = \"import { top } from '../top/index.ts'\";\n" });
    expect(checkLayering(root, RULES)).toEqual([]);
  });
});
