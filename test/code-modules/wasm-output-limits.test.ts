import { readdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CodeModuleError } from '../../src/errors/index.ts';
import type { Host } from '../../src/host/index.ts';
import { buildWasm } from '../support/build-wasm.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { createJsonLogRecorder, openTestHost, stderrLogOf, TEST_KEYS } from '../support/test-host.ts';

// The bounds docs/code-agents.md promises (written out, not imported, so the test states them).
const STDERR_LIMIT_BYTES = 16 * 2 ** 20;
const STDERR_LOGGED_LINES = 100;
const STDERR_LINE_CHARS = 1000;
/** Larger than anything a bounded run leaves in the pool's scratch folders (the request on stdin). */
const SCRATCH_BOUND_BYTES = 2 ** 20;

let modules: Awaited<ReturnType<typeof makeTempDir>>;
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: Host | undefined;
let flood = '';
/** The JSON records the host's logger wrote. */
let records: Record<string, unknown>[] = [];

beforeAll(async () => {
  modules = await makeTempDir('loom-output-limits-modules-');
  flood = await buildWasm('test/fixtures/wasm/wasi-flood.ts', join(modules.path, 'wasi-flood.wasm'));
}, 60_000);
afterAll(async () => {
  await modules.remove();
});
beforeEach(async () => {
  dir = await makeTempDir('loom-output-limits-');
  // A host as the daemon builds it, its log kept here (on a fake clock: no time limit fires).
  const recording = createJsonLogRecorder();
  records = recording.records;
  host = await openTestHost(dir.path, {}, TEST_KEYS, { logger: recording.logger });
});
afterEach(async () => {
  await host?.close();
  host = undefined;
  await dir.remove();
});

function kernel(): Host['kernel'] {
  return (host as Host).kernel;
}

function stderrLog(agent: string): string[] {
  return stderrLogOf(records, agent);
}

/** The largest file in the wasm pool's scratch folders (`loom-wasm-*` in the temp folder). */
async function largestScratchFile(): Promise<number> {
  let largest = 0;
  for (const folder of (await readdir(tmpdir())).filter((name) => name.startsWith('loom-wasm-'))) {
    const files = await readdir(join(tmpdir(), folder)).catch(() => []);
    for (const file of files)
      largest = Math.max(
        largest,
        await stat(join(tmpdir(), folder, file)).then(
          (stats) => stats.size,
          () => 0,
        ),
      );
  }
  return largest;
}

async function expectTooLarge(promise: Promise<unknown>, message: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(CodeModuleError);
  expect((error as CodeModuleError).fault).toBe('too-large');
  expect((error as Error).message).toMatch(message);
}

describe('a WASI module that floods its output', () => {
  it('writing more than [code].max_reply_bytes to stdout is stopped as it writes, fills no disk, and the agent answers its next message', async () => {
    await kernel().spawn(manifest(`name = "loud"\nmodule = "wasm:${flood}"\n[code]\nmax_reply_bytes = 100000\n`));
    await expectTooLarge(
      kernel().send('loud', 'stdout 64'),
      /^agent "loud"'s module wrote more than its limit of 100000 bytes \(\[code\]\.max_reply_bytes\) to stdout and was stopped$/,
    );
    expect(await largestScratchFile()).toBeLessThan(SCRATCH_BOUND_BYTES);
    expect(await host?.store.events.list({ type: 'code-module-fail' })).toMatchObject([{ data: { name: 'loud', fault: 'too-large' } }]);
    expect((await kernel().send('loud', 'still there?')).text).toBe('flood: still there?');
  });

  it("writing more than Loom's stderr limit is stopped as it writes, fills no disk, logs a bounded tail, and the agent answers its next message", async () => {
    await kernel().spawn(manifest(`name = "noisy"\nmodule = "wasm:${flood}"\n`));
    await expectTooLarge(
      kernel().send('noisy', 'stderr 64'),
      new RegExp(`^agent "noisy"'s module wrote more than ${STDERR_LIMIT_BYTES} bytes to stderr, .*and was stopped$`),
    );
    expect(await largestScratchFile()).toBeLessThan(SCRATCH_BOUND_BYTES);
    const logged = stderrLog('noisy');
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.length).toBeLessThanOrEqual(STDERR_LOGGED_LINES + 1);
    expect(logged[0]).toMatch(/^stderr: \d+ of \d+ bytes left out of the log/);
    expect(logged.slice(1).every((line) => line === 'x'.repeat(63))).toBe(true);
    expect((await kernel().send('noisy', 'still there?')).text).toBe('flood: still there?');
  });

  it('writing many lines to stderr logs only its last lines, after a note of what was left out, and answers', async () => {
    await kernel().spawn(manifest(`name = "chatty"\nmodule = "wasm:${flood}"\n`));
    expect((await kernel().send('chatty', 'chatty 5000')).text).toBe('chatted');
    const logged = stderrLog('chatty');
    expect(logged).toHaveLength(STDERR_LOGGED_LINES + 1);
    expect(logged[0]).toMatch(/^stderr: \d+ of \d+ bytes left out of the log/);
    expect(logged.slice(1)).toEqual(Array.from({ length: STDERR_LOGGED_LINES }, (_, index) => `line ${5000 - STDERR_LOGGED_LINES + index}`));
    expect(logged.every((line) => line.length <= STDERR_LINE_CHARS + 100)).toBe(true);
  });
});
