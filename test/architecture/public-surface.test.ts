import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { exportedNames, importsOf, sourceFiles } from './import-graph.ts';

const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));

/** Exported though nothing outside imports them: the options type of an exported function, and the error classes a caller tells apart. */
const KEPT = /(Options|Error)$/;

/**
 * What each index is imported for from outside its folder (`src/<folder>/`, sub-folders included):
 * by src/ of other folders, the dashboard's sources (which take `src/wire/`), tests, benchmarks and
 * scripts.
 */
function namesUsedFromOutside(): Map<string, Set<string> | '*'> {
  const used = new Map<string, Set<string> | '*'>();
  const files = ['src', 'web/src', 'test', 'bench', 'scripts'].flatMap((root) => sourceFiles(REPOSITORY, root, { tests: true }));
  for (const found of files.flatMap((file) => importsOf(REPOSITORY, file))) {
    if (found.to === undefined || !found.to.startsWith('src/') || !found.to.endsWith('/index.ts')) continue;
    if (found.from.startsWith(found.to.slice(0, -'index.ts'.length))) continue;
    const names = used.get(found.to);
    if (names === '*' || found.names === '*') used.set(found.to, '*');
    else used.set(found.to, new Set([...(names ?? []), ...found.names]));
  }
  return used;
}

describe('the public surface of src/', () => {
  const used = namesUsedFromOutside();
  // Every index of src/, sub-folders' too (`http/openai`, `mcp/server`): a new folder is held to it from its first index.
  const indexes = sourceFiles(REPOSITORY, 'src').filter((file) => file.endsWith('/index.ts'));

  it('finds the indexes', () => {
    expect(indexes).toContain('src/kernel/index.ts');
    expect(indexes).toContain('src/http/openai/index.ts');
  });

  it.each(indexes)('%s exports only what another folder, the dashboard, a test, a benchmark or a script imports', (index) => {
    const folder = index.slice(0, -'index.ts'.length);
    const names = used.get(index);
    const unused = names === '*' ? [] : exportedNames(REPOSITORY, index).filter((name) => !KEPT.test(name) && names?.has(name) !== true);
    expect(
      unused,
      `${index} exports names nothing outside ${folder} imports; drop them from the index (the folder's own files import the file that defines them)`,
    ).toEqual([]);
  });
});
