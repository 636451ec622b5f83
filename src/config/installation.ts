import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder Loom is installed in: the one holding `package.json`, `bin/`, `src/` and `web/`.
 *
 * Found from this module's own URL, two folders down: this file is `src/config/installation.ts`
 * when Loom runs from its sources, and every chunk of the built daemon is `dist/daemon/<chunk>.js`
 * (`scripts/build-daemon.ts` writes them flat, for this reason), so the same relative URL finds the
 * same folder both ways. Files found next to a module (`new URL('./x', import.meta.url)`) would not:
 * in the build, that URL is the chunk's.
 */
export const INSTALL_DIR: string = fileURLToPath(new URL('../../', import.meta.url));

/** A path inside the installation, e.g. `installedPath('web', 'dist')`. */
export function installedPath(...segments: string[]): string {
  return join(INSTALL_DIR, ...segments);
}

/** Loom's version, from package.json. */
export const LOOM_VERSION: string = (JSON.parse(readFileSync(installedPath('package.json'), 'utf8')) as { version: string }).version;

/** Whether this process runs the built daemon (`dist/daemon/`) rather than the TypeScript sources. */
export const RUNS_BUILT: boolean = !import.meta.url.endsWith('/src/config/installation.ts');
