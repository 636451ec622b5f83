import { mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BUILD_RECORD, type BuildRecord, type BuildSource, daemonEntry, sourcesNote } from '../../src/config/daemon-build.ts';

// An installation on disk: two source files and, when built, dist/daemon/ with its record.
let root: string;
const BUILT_AT = Date.parse('2026-11-01T12:00:00Z');
const builtMain = (): string => join(root, 'dist', 'daemon', 'main.js');
const sourceMain = (): string => join(root, 'src', 'cli', 'main.ts');

function writeSource(path: string, modifiedAt: number, text = 'export {};\n'): void {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), text);
  utimesSync(join(root, path), modifiedAt / 1000, modifiedAt / 1000);
}

/** A source as a build that read it now would record it. */
function asRead(path: string): BuildSource {
  const stats = statSync(join(root, path));
  return { path, mtime_ms: stats.mtimeMs, size: stats.size };
}

function writeBuild(record: BuildRecord | string): void {
  mkdirSync(join(root, 'dist', 'daemon'), { recursive: true });
  writeFileSync(builtMain(), 'export {};\n');
  writeFileSync(join(root, 'dist', 'daemon', BUILD_RECORD), typeof record === 'string' ? record : JSON.stringify(record));
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'loom-entry-'));
  writeSource('src/cli/main.ts', BUILT_AT - 60_000);
  writeSource('src/kernel/kernel.ts', BUILT_AT - 60_000);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const record = (): BuildRecord => ({
  built_at: BUILT_AT,
  sources: [asRead('src/cli/main.ts'), asRead('src/kernel/kernel.ts')],
  files: ['main.js'],
  inlined: ['zod'],
});

describe('which code bin/loom.js runs', () => {
  it('runs the build while every file it was built from is as the build read it', () => {
    writeBuild(record());
    expect(daemonEntry(root, {})).toEqual({ path: builtMain(), built: true });
  });

  it('runs the sources once a file the build read changed, and says which', () => {
    writeBuild(record());
    writeSource('src/kernel/kernel.ts', BUILT_AT + 1_000);
    expect(daemonEntry(root, {})).toEqual({ path: sourceMain(), built: false, why: 'src/kernel/kernel.ts changed since the build' });
  });

  it('runs the sources when a file was replaced by one with an older time (a copy that keeps times) or the same time and another size', () => {
    writeBuild(record());
    writeSource('src/kernel/kernel.ts', BUILT_AT - 120_000);
    expect(daemonEntry(root, {})).toMatchObject({ built: false, why: 'src/kernel/kernel.ts changed since the build' });
    writeBuild(record());
    writeSource('src/kernel/kernel.ts', BUILT_AT - 120_000, 'export const changed = true;\n');
    expect(daemonEntry(root, {})).toMatchObject({ built: false, why: 'src/kernel/kernel.ts changed since the build' });
  });

  it('runs the sources when a file the build read is gone', () => {
    writeBuild(record());
    rmSync(join(root, 'src', 'kernel', 'kernel.ts'));
    expect(daemonEntry(root, {})).toEqual({ path: sourceMain(), built: false, why: 'src/kernel/kernel.ts is gone since the build' });
  });

  it('runs the sources when there is no build, or its record is not one', () => {
    expect(daemonEntry(root, {})).toMatchObject({ path: sourceMain(), built: false, why: 'not built (npm run build)' });
    writeBuild('{"built_at": 1, "sources": "all"}');
    expect(daemonEntry(root, {})).toMatchObject({ path: sourceMain(), built: false, why: 'build.json is not a build record' });
    writeBuild(record());
    rmSync(builtMain());
    expect(daemonEntry(root, {})).toMatchObject({ path: sourceMain(), built: false, why: 'the build has no main.js' });
    writeBuild('not json');
    expect(daemonEntry(root, {})).toMatchObject({ path: sourceMain(), built: false });
  });

  it('runs the sources when LOOM_FROM_SOURCES=1, whatever the build', () => {
    writeBuild(record());
    expect(daemonEntry(root, { LOOM_FROM_SOURCES: '1' })).toEqual({ path: sourceMain(), built: false, why: 'LOOM_FROM_SOURCES=1' });
    expect(daemonEntry(root, { LOOM_FROM_SOURCES: '0' })).toMatchObject({ built: true });
  });
});

describe("what the daemon's start line says of the sources it runs", () => {
  it('says why, and how to get the build back, when the sources run because the build is out of date or missing', () => {
    writeBuild(record());
    writeSource('src/kernel/kernel.ts', BUILT_AT + 1_000);
    expect(sourcesNote(daemonEntry(root, {}))).toEqual({
      why: 'src/kernel/kernel.ts changed since the build',
      hint: "running from the TypeScript sources (src/kernel/kernel.ts changed since the build); `npm run build` brings back the built daemon's faster, lighter start",
    });
    rmSync(join(root, 'dist'), { recursive: true });
    expect(sourcesNote(daemonEntry(root, {})).hint).toContain('(not built (npm run build))');
  });

  it('gives no hint when the sources were asked for, and says when they were started directly beside an up-to-date build', () => {
    writeBuild(record());
    expect(sourcesNote(daemonEntry(root, { LOOM_FROM_SOURCES: '1' }))).toEqual({ why: 'LOOM_FROM_SOURCES=1' });
    expect(sourcesNote(daemonEntry(root, {}))).toEqual({ why: 'started from the sources, not through bin/loom.js' });
  });
});
