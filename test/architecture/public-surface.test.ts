import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { exportedNames, importsOf, sourceFiles } from './import-graph.ts';
import { folderOf } from './layering-check.ts';

const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The folders whose index exports only what is used outside the folder (decision 0064). The others
 * (cluster, contracts, errors, http, kernel, packages, store, telemetry) wait for the work under
 * way in them; a folder joins this list once its index is pruned.
 */
const PRUNED = ['access', 'agents', 'capabilities', 'cli', 'daemon', 'emergent', 'host', 'manifest', 'mcp', 'models', 'modules', 'runtime', 'scheduler', 'tools', 'validation'];

/** Exported though nothing outside imports them: the options type of an exported function, and the error classes a caller tells apart. */
const KEPT = /(Options|Error)$/;

/** What each index is imported for from outside its folder: by src/ of other folders, tests, benchmarks and scripts. */
function namesUsedFromOutside(): Map<string, Set<string> | '*'> {
  const used = new Map<string, Set<string> | '*'>();
  const files = ['src', 'test', 'bench', 'scripts'].flatMap((root) => sourceFiles(REPOSITORY, root, { tests: true }));
  for (const found of files.flatMap((file) => importsOf(REPOSITORY, file))) {
    if (found.to === undefined || !found.to.startsWith('src/') || !found.to.endsWith('/index.ts')) continue;
    if (found.from.startsWith('src/') && folderOf(found.from) === folderOf(found.to)) continue;
    const names = used.get(found.to);
    if (names === '*' || found.names === '*') used.set(found.to, '*');
    else used.set(found.to, new Set([...(names ?? []), ...found.names]));
  }
  return used;
}

describe('the public surface of src/', () => {
  const used = namesUsedFromOutside();

  it.each(PRUNED)('src/%s/index.ts exports only what another folder, a test, a benchmark or a script imports', (folder) => {
    const index = `src/${folder}/index.ts`;
    const names = used.get(index);
    const unused = names === '*' ? [] : exportedNames(REPOSITORY, index).filter((name) => !KEPT.test(name) && names?.has(name) !== true);
    expect(unused, `${index} exports names nothing outside src/${folder}/ imports; drop them from the index (the folder's own files import the file that defines them)`).toEqual([]);
  });
});
