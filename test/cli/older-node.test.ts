import { execFile, execFileSync } from 'node:child_process';
import { accessSync, constants, realpathSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/test-kernel.ts';

const run = promisify(execFile);
const bin = join(import.meta.dirname, '../../bin/loom.js');

/** A `node` on the PATH older than 24 (the machine's own, which npm scripts put behind Node 24), if any. */
function olderNode(): string | undefined {
  const ours = realpathSync(process.execPath);
  for (const folder of (process.env['PATH'] ?? '').split(delimiter)) {
    const candidate = join(folder, 'node');
    try {
      accessSync(candidate, constants.X_OK);
      if (realpathSync(candidate) === ours) continue;
      const major = Number(/^v(\d+)\./.exec(execFileSync(candidate, ['--version'], { encoding: 'utf8' }))?.[1]);
      if (major < 24) return candidate;
    } catch {
      // not there, or not a Node
    }
  }
  return undefined;
}

const older = olderNode();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
beforeEach(async () => {
  dir = await makeTempDir('loom-older-node-');
});
afterEach(async () => {
  await dir.remove();
});

/** Runs `<older node> bin/loom.js <args>`, as a shell runs `node_modules/.bin/loom`. */
async function loom(node: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(node, [bin, ...args], { env: { PATH: process.env['PATH'] ?? '', LOOM_HOME: join(dir.path, 'home'), HOME: dir.path } }).then(
    (result) => ({ code: 0, ...result }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

// Only where the machine has an older Node on its PATH (this project's machines do: npm scripts
// and npx put Node 24 in front of it).
describe.skipIf(older === undefined)('bin/loom.js started by an older Node', () => {
  it('runs the command on the Node 24 the installation brings, with its output and exit status, where it refused', async () => {
    const node = older as string;
    expect(await loom(node, ['--version'])).toEqual({ code: 0, stdout: '0.1.0\n', stderr: '' });
    expect(await loom(node, ['agent', 'list'])).toMatchObject({ code: 0, stdout: 'No agents. Spawn one with: loom agent spawn <manifest.toml>\n' });
    const wrong = await loom(node, ['agent', 'nope']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("error: unknown command 'nope'");
  });
});
