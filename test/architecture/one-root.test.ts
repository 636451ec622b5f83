import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importsOf, sourceFiles } from './import-graph.ts';

const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));

/** The files of src/ outside `folder` that import `name` (a value, or a type when `kind` says so). */
function importersOf(name: string, outside: string): string[] {
  return sourceFiles(REPOSITORY, 'src')
    .filter((file) => !file.startsWith(outside))
    .filter((file) => importsOf(REPOSITORY, file).some((found) => found.kind === 'value' && found.names !== '*' && found.names.includes(name)))
    .sort();
}

/**
 * `src/host/open-host.ts` is the one composition root (decision 0066): it builds the kernel's
 * services, the forged-tools engine on their ports, then the kernel proper with the engine
 * (decision 0069). The kernel builds no part it is handed.
 */
describe('the one composition root', () => {
  it('is the only file of src/ that builds the forged-tools engine; the kernel is handed it', () => {
    expect(importersOf('createEmergentEngine', 'src/forged-tools/')).toEqual(['src/host/open-host.ts']);
  });

  it('is the only file of src/ that builds a kernel, in its two halves', () => {
    expect(importersOf('createKernelServices', 'src/kernel/')).toEqual(['src/host/open-host.ts']);
    expect(importersOf('createKernel', 'src/kernel/')).toEqual(['src/host/open-host.ts']);
  });
});
