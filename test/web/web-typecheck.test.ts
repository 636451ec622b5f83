import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

describe('the dashboard sources', () => {
  // The root `tsc --noEmit` does not cover web/ (it needs the DOM lib and Preact's JSX); this does.
  it('type-check with web/tsconfig.json without errors', async () => {
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const result = await promisify(execFile)(process.execPath, [tsc, '-p', join(root, 'web/tsconfig.json')], { cwd: root }).catch(
      (error: { stdout?: string; code?: number }) => ({ stdout: error.stdout ?? '', failed: error.code }),
    );
    expect(result.stdout).toBe('');
    expect('failed' in result ? result.failed : 0).toBe(0);
  }, 60_000);
});
