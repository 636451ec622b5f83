import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';

/** Where `npm run build` (and so `npm install`) writes the built daemon, inside the installation. */
export const BUILD_DIR = ['dist', 'daemon'] as const;

/** The file beside the built daemon that says what it was built from. */
export const BUILD_RECORD = 'build.json';

/** The module the daemon's sources start from, inside the installation: what the build bundles. */
export const SOURCE_ENTRY = ['src', 'cli', 'main.ts'] as const;

/** A file the build read, as it was when read. */
export interface BuildSource {
  /** Relative to the installation, with `/`. */
  path: string;
  mtime_ms: number;
  size: number;
}

/** What `scripts/build-daemon.ts` records beside the built daemon. */
export interface BuildRecord {
  /** When the build started, in ms since the epoch. */
  built_at: number;
  /** Every file the build read: Loom's sources, package.json and package-lock.json. */
  sources: BuildSource[];
  /** The files the build wrote beside this record. */
  files: string[];
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

/** The record in `buildDir`, as far as it parses; undefined when there is none. */
export function readBuildRecord(buildDir: string): Partial<BuildRecord> | undefined {
  try {
    return JSON.parse(readFileSync(join(buildDir, BUILD_RECORD), 'utf8')) as Partial<BuildRecord>;
  } catch {
    return undefined;
  }
}

/**
 * The built daemon (`dist/daemon/main.js`) when it was built from the sources as they are now,
 * else the TypeScript sources: any file the build read with another modification time or size
 * than it had then (edited, replaced, checked out again), a file gone, no build, or
 * `LOOM_FROM_SOURCES=1` runs the sources, so what runs is never older than what is on disk. A new
 * source runs only once a file the build read imports it, which changes that file. Costs one
 * `stat` per source file (~340, ~1 ms).
 */
export function daemonEntry(installDir: string, env: Readonly<Record<string, string | undefined>>, buildDir = join(installDir, ...BUILD_DIR)): DaemonEntry {
  const sources = join(installDir, ...SOURCE_ENTRY);
  if (env['LOOM_FROM_SOURCES'] === '1') return { path: sources, built: false, why: 'LOOM_FROM_SOURCES=1' };
  const built = join(buildDir, 'main.js');
  const record = readBuildRecord(buildDir);
  if (record === undefined) return { path: sources, built: false, why: 'not built (npm run build)' };
  if (!Array.isArray(record.sources)) return { path: sources, built: false, why: `${BUILD_RECORD} is not a build record` };
  if (!existsSync(built)) return { path: sources, built: false, why: 'the build has no main.js' };
  // Joined by hand: a path.join for each of ~350 files is enough to get path's internals optimized
  // at every start, which costs more memory than the whole check.
  const prefix = installDir.endsWith(sep) ? installDir : installDir + sep;
  for (const source of record.sources as Partial<BuildSource>[]) {
    if (typeof source.path !== 'string') return { path: sources, built: false, why: `${BUILD_RECORD} is not a build record` };
    const stats = statSync(prefix + source.path, { throwIfNoEntry: false });
    if (stats === undefined) return { path: sources, built: false, why: `${source.path} is gone since the build` };
    if (stats.mtimeMs !== source.mtime_ms || stats.size !== source.size) return { path: sources, built: false, why: `${source.path} changed since the build` };
  }
  return { path: built, built: true };
}

/**
 * Why a process started from the sources runs them, for the daemon's start line: `entry`'s reason
 * (what `bin/loom.js` went by), or, when the build is up to date, that the sources were started
 * directly. With it, a hint when the sources run only because the build is missing or out of
 * date, which `npm run build` mends; none when they were asked for (`LOOM_FROM_SOURCES=1`).
 */
export function sourcesNote(entry: DaemonEntry): { why: string; hint?: string } {
  if (entry.built) return { why: 'started from the sources, not through bin/loom.js' };
  const why = entry.why ?? 'not built (npm run build)';
  if (why === 'LOOM_FROM_SOURCES=1') return { why };
  return { why, hint: `running from the TypeScript sources (${why}); \`npm run build\` brings back the built daemon's faster, lighter start` };
}
