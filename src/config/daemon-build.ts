import { readFileSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';

/** Where `npm run build` (and so `npm install`) writes the built daemon, inside the installation. */
export const BUILD_DIR = ['dist', 'daemon'] as const;

/** The file beside the built daemon that says what it was built from. */
export const BUILD_RECORD = 'build.json';

/** What `scripts/build-daemon.ts` records beside the built daemon. */
export interface BuildRecord {
  /** When the build started, in ms since the epoch: a source changed after it makes the build stale. */
  built_at: number;
  /** Every file the build read, relative to the installation: Loom's sources, package.json and package-lock.json. */
  sources: string[];
  /** The libraries bundled in with Loom's code (the rest load from node_modules as they are). */
  inlined: string[];
}

/** Which code `bin/loom.js` runs. */
export interface DaemonEntry {
  /** The module to import: it exports `main`. */
  path: string;
  built: boolean;
  /** Why the sources run, when they do. */
  why?: string;
}

/**
 * The built daemon (`dist/daemon/main.js`) when it was built from the sources as they are now,
 * else the TypeScript sources: an edit to any file the build read, a file gone, no build, or
 * `LOOM_FROM_SOURCES=1` runs the sources, so what runs is never older than what is on disk.
 * Costs one `stat` per source file (~1 ms).
 */
export function daemonEntry(installDir: string, env: Readonly<Record<string, string | undefined>>): DaemonEntry {
  const sources = join(installDir, 'src', 'cli', 'main.ts');
  if (env['LOOM_FROM_SOURCES'] === '1') return { path: sources, built: false, why: 'LOOM_FROM_SOURCES=1' };
  const buildDir = join(installDir, ...BUILD_DIR);
  let record: Partial<BuildRecord>;
  try {
    record = JSON.parse(readFileSync(join(buildDir, BUILD_RECORD), 'utf8')) as Partial<BuildRecord>;
  } catch {
    return { path: sources, built: false, why: 'not built (npm run build)' };
  }
  const builtAt = record.built_at;
  if (typeof builtAt !== 'number' || !Array.isArray(record.sources)) return { path: sources, built: false, why: `${BUILD_RECORD} is not a build record` };
  // Joined by hand: a path.join for each of ~350 files is enough to get path's internals optimized
  // at every start, which costs more memory than the whole check.
  const prefix = installDir.endsWith(sep) ? installDir : installDir + sep;
  for (const file of record.sources) {
    const stats = statSync(prefix + file, { throwIfNoEntry: false });
    if (stats === undefined) return { path: sources, built: false, why: `${file} is gone since the build` };
    if (stats.mtimeMs > builtAt) return { path: sources, built: false, why: `${file} changed since the build` };
  }
  return { path: join(buildDir, 'main.js'), built: true };
}
