/**
 * Isolates that die cleanly: one that V8 itself ran out of memory in (isolated-vm can never give
 * back its heap or thread) ends with its sandbox process, not with the daemon, and the tool works
 * again at its next call; a stop ends every isolate at once, whatever it is doing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileSandboxProgram, createSandboxPool, type SandboxPool } from '../../src/forged-tools/sandbox.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { outcomeWithin } from '../support/outcome-within.ts';
import { waitFor } from '../support/wait-for.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { APPROVE } from '../support/forge-requests.ts';

/** A tool that doubles `n`, or grows a Map until V8 itself runs out of memory (faster than isolated-vm's limit). */
const MAP_BOMB = 'function execute(input) { if (input.bomb) { const m = new Map(); for (let i = 0; ; i++) m.set(i, { i }); } return { n: input.n * 2 }; }';
/** A tool that doubles `n`, or spins, or allocates arrays until its memory limit. */
const SPIN_OR_GROW =
  'function execute(input) { if (input.spin) { for (;;) {} } if (input.grow) { const a = []; for (;;) a.push(new Array(1e6).fill(1)); } return { n: input.n * 2 }; }';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('a sandbox pool', () => {
  let pool: SandboxPool;
  afterEach(() => pool.close());

  it("ends the sandbox process of an isolate V8 lost to out-of-memory, and the same program's next call works in a new one", async () => {
    pool = createSandboxPool();
    const program = await compileSandboxProgram(MAP_BOMB, { timeoutMs: 10_000, memoryMb: 32, maxOutputBytes: 1000 }, { pool });
    const [first] = pool.pids();
    expect(first).toBeDefined();
    expect(await program.run({ bomb: true }, { bridges: {} })).toMatchObject({
      ok: false,
      error: { kind: 'memory', message: 'the tool went over its 32 MB memory limit and was stopped' },
    });
    // What held the lost heap and thread is gone.
    await waitFor('the sandbox process that lost an isolate to end', () => !alive(first as number));
    expect(await program.run({ n: 2 }, { bridges: {} })).toMatchObject({ ok: true, output: { n: 4 } });
    expect(pool.pids()).not.toContain(first);
    expect(pool.pids()).toHaveLength(1);
  });

  it("keeps other programs' calls going while a process that lost an isolate is replaced", async () => {
    pool = createSandboxPool();
    const limits = { timeoutMs: 10_000, memoryMb: 32, maxOutputBytes: 1000 };
    const bomb = await compileSandboxProgram(MAP_BOMB, limits, { pool });
    const slow = await compileSandboxProgram(
      'async function execute(input) { const until = Date.now() + input.ms; while (Date.now() < until) {} return { done: true }; }',
      limits,
      { pool },
    );
    const slowCall = slow.run({ ms: 2_000 }, { bridges: {} });
    expect(await bomb.run({ bomb: true }, { bridges: {} })).toMatchObject({ ok: false, error: { kind: 'memory' } });
    expect(await slowCall).toMatchObject({ ok: true, output: { done: true } });
    expect(await slow.run({ ms: 1 }, { bridges: {} })).toMatchObject({ ok: true, output: { done: true } });
  });

  it('close() ends a call in a busy loop at once, and refuses later calls', async () => {
    pool = createSandboxPool();
    // The tool fetches first, so the test knows its code runs; then it spins for its minute.
    const program = await compileSandboxProgram(
      'async function execute() { await fetch("https://a.test/"); for (;;) {} }',
      { timeoutMs: 60_000, memoryMb: 64, maxOutputBytes: 1000 },
      { pool },
    );
    const [pid] = pool.pids();
    let running!: () => void;
    const inside = new Promise<void>((resolve) => (running = resolve));
    const fetch = () => {
      running();
      return Promise.resolve({ url: 'https://a.test/', status: 200, statusText: 'OK', headers: {}, body: '' });
    };
    const spinning = program.run({}, { bridges: { fetch } });
    await inside;
    pool.close();
    expect(await outcomeWithin(spinning, 5_000)).toMatchObject({ value: { ok: false, error: { kind: 'aborted', message: 'Loom is stopping' } } });
    await waitFor('the sandbox process to end', () => !alive(pid as number));
    expect(await program.run({ n: 1 }, { bridges: {} })).toMatchObject({ ok: false, error: { kind: 'aborted' } });
  });
});

describe('through a kernel', () => {
  const server = useScriptedModelServer();
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let host: TestHost;
  beforeEach(async () => {
    dir = await makeTempDir('loom-sandbox-oom-');
    host = await openTestHost(dir.path, { default_model: { provider: 'openai', model: 'gpt-4o', base_url: server.url } });
  });
  afterEach(async () => {
    await host.close();
    await dir.remove();
  });

  const agent = (emergent: string) =>
    manifest(
      `name = "smith"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["forge_tool"]\n[emergent]\n${emergent}`,
    );
  const request = (name: string, code: string, testInput: Record<string, unknown> = { n: 2 }) => ({
    name,
    description: 'Doubles n',
    inputSchema: { type: 'object', properties: { n: { type: 'number' }, bomb: { type: 'boolean' }, spin: { type: 'boolean' }, grow: { type: 'boolean' } } },
    implementation: { mode: 'sandbox', code, allowlist: [] },
    testCases: [{ input: testInput }],
  });

  it('a forged tool whose isolate V8 lost to out-of-memory works at its next call, and the fault is audited', async () => {
    await host.kernel.spawn(agent('sandbox_memory_mb = 32\nsandbox_timeout_ms = 10000\n'));
    server.script([APPROVE]);
    expect(await host.kernel.forgedTools.forge('smith', request('doubler', MAP_BOMB), 'test')).toMatchObject({ ok: true });
    expect(await host.kernel.runAgentTool('smith', 'doubler', { bomb: true })).toMatchObject({
      isError: true,
      text: 'doubler failed: the tool went over its 32 MB memory limit and was stopped',
    });
    expect(await host.kernel.runAgentTool('smith', 'doubler', { n: 21 })).toMatchObject({ structured: { n: 42 } });
    const faults = await host.kernel.audit({ agent: 'smith', type: 'tool-sandbox-fail' });
    expect(faults.map((entry) => entry.data['outcome'])).toEqual(['memory']);
  });

  it("a stop ends at once a forged tool's call that is allocating and a forge whose test is in a busy loop: the call fails and the forge is refused", async () => {
    await host.kernel.spawn(agent('sandbox_memory_mb = 1024\nsandbox_timeout_ms = 60000\n'));
    server.script([APPROVE]);
    expect(await host.kernel.forgedTools.forge('smith', request('grower', SPIN_OR_GROW), 'test')).toMatchObject({ ok: true });
    const growing = host.kernel.runAgentTool('smith', 'grower', { grow: true });
    const forging = host.kernel.forgedTools.forge('smith', request('spinner', SPIN_OR_GROW, { spin: true }), 'test');
    // Neither would end by itself for seconds (1 GB to allocate) or a minute (the time limit).
    const stopped = host.close();
    expect(await outcomeWithin(stopped, 10_000)).toEqual({ value: undefined });
    expect(await outcomeWithin(growing, 5_000)).toMatchObject({ value: { isError: true, text: expect.stringMatching(/^grower failed: /) as unknown } });
    expect(await outcomeWithin(forging, 5_000)).toMatchObject({ value: { ok: false } });
    host = await openTestHost(dir.path, { default_model: { provider: 'openai', model: 'gpt-4o', base_url: server.url } });
  });
});
