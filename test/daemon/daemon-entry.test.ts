import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BUILD_RECORD, type BuildRecord, daemonEntry } from '../../src/config/daemon-build.ts';

// An installation on disk: two source files and, when built, dist/daemon/ with its record.
let root: string;
const BUILT_AT = Date.parse('2026-11-01T12:00:00Z');
const builtMain = (): string => join(root, 'dist', 'daemon', 'main.js');
const sourceMain = (): string => join(root, 'src', 'cli', 'main.ts');

function writeSource(path: string, modifiedAt: number): void {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), 'export {};\n');
  utimesSync(join(root, path), modifiedAt / 1000, modifiedAt / 1000);
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

const record = (): BuildRecord => ({ built_at: BUILT_AT, sources: ['src/cli/main.ts', 'src/kernel/kernel.ts'], inlined: ['zod'] });

describe('which code bin/loom.js runs', () => {
  it('runs the build while every file it was built from is older than it', () => {
    writeBuild(record());
    expect(daemonEntry(root, {})).toEqual({ path: builtMain(), built: true });
  });

  it('runs the sources once a file the build read changed after it, and says which', () => {
    writeBuild(record());
    writeSource('src/kernel/kernel.ts', BUILT_AT + 1_000);
    expect(daemonEntry(root, {})).toEqual({ path: sourceMain(), built: false, why: 'src/kernel/kernel.ts changed since the build' });
  });

  it('runs the sources when a file the build read is gone', () => {
    writeBuild(record());
    rmSync(join(root, 'src', 'kernel', 'kernel.ts'));
    expect(daemonEntry(root, {})).toEqual({ path: sourceMain(), built: false, why: 'src/kernel/kernel.ts is gone since the build' });
  });

  it('runs the sources when there is no build, or its record is not one', () => {
    expect(daemonEntry(root, {})).toMatchObject({ path: sourceMain(), built: false, why: 'not built (npm run build)' });
    writeBuild('{"built_at": "yesterday"}');
    expect(daemonEntry(root, {})).toMatchObject({ path: sourceMain(), built: false, why: 'build.json is not a build record' });
    writeBuild('not json');
    expect(daemonEntry(root, {})).toMatchObject({ path: sourceMain(), built: false });
  });

  it('runs the sources when LOOM_FROM_SOURCES=1, whatever the build', () => {
    writeBuild(record());
    expect(daemonEntry(root, { LOOM_FROM_SOURCES: '1' })).toEqual({ path: sourceMain(), built: false, why: 'LOOM_FROM_SOURCES=1' });
    expect(daemonEntry(root, { LOOM_FROM_SOURCES: '0' })).toMatchObject({ built: true });
  });
});
