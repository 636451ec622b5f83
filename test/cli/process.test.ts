import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/index.ts';
import { makeTempDir } from '../support/test-kernel.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const bin = join(root, 'bin/loom.js');

let dir: Awaited<ReturnType<typeof makeTempDir>>;

beforeEach(async () => {
  dir = await makeTempDir('loom-process-');
});

afterEach(async () => {
  await dir.remove();
});

async function loom(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], {
      env: { PATH: process.env['PATH'] ?? '', HOME: dir.path, LOOM_HOME: join(dir.path, 'home'), ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

describe('the loom executable', () => {
  it('exits 0 and prints JSON for a valid spawn', async () => {
    const result = await loom(['agent', 'spawn', join(root, 'examples/agents/assistant.json'), '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ name: 'assistant', state: 'running' });
  });

  it('exits 2 with one clear line and no stack trace for a bad manifest', async () => {
    const result = await loom(['manifest', 'check', join(dir.path, 'missing.toml')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`error: cannot load manifest "${join(dir.path, 'missing.toml')}": no such file\n`);
  });

  it('prints the stack trace when LOOM_DEBUG=1', async () => {
    const result = await loom(['manifest', 'check', join(dir.path, 'missing.toml')], { LOOM_DEBUG: '1' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/\n\s+at /);
  });
});

describe('a crash in the middle of spawning', () => {
  it('loses no agent whose id was printed and leaves the database intact', async () => {
    const databasePath = join(dir.path, 'crash.db');
    const child = spawn(process.execPath, [join(import.meta.dirname, '../fixtures/spawn-loop.ts'), databasePath], { stdio: ['ignore', 'pipe', 'inherit'] });
    const printed: string[] = [];
    let buffered = '';
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        printed.push(...lines);
        if (printed.length >= 200) {
          child.kill('SIGKILL');
          resolve();
        }
      });
    });
    expect(await exited).toBe('SIGKILL');

    const store = openSqliteStore({ path: databasePath });
    try {
      expect(store.integrityCheck()).toEqual(['ok']);
      const stored = new Set((await store.agents.list()).map((agent) => agent.id));
      const missing = printed.filter((id) => !stored.has(id));
      expect(missing).toEqual([]);
      expect(stored.size).toBeGreaterThanOrEqual(printed.length);
    } finally {
      await store.close();
    }
  });
});
