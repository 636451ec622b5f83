/**
 * Attempts to get out of the sandbox, run against the isolate alone (the code check is
 * bypassed: the isolate is the boundary). Each must be contained within its time limit, leave
 * the host untouched, and leave the program (and a new one) working. The end-to-end cases (an
 * audit entry for each fault, fetches to loopback and metadata addresses through the bridge,
 * reads outside the globs) are at the bottom, through a kernel.
 */
import { spawn } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { compileSandboxProgram, type SandboxedProgram } from '../../src/forged-tools/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { APPROVE } from '../support/forge-requests.ts';

const TIMEOUT_MS = 300;
/** A generous upper bound for containment: the limit plus the host's grace and a slow machine. */
const CONTAINED_MS = TIMEOUT_MS + 2000;
const LIMITS = { timeoutMs: TIMEOUT_MS, memoryMb: 32, maxOutputBytes: 100_000 };

const programs: SandboxedProgram[] = [];
afterEach(() => {
  for (const compiled of programs.splice(0)) compiled.dispose();
});

async function attempt(body: string, input: Record<string, unknown> = {}) {
  const compiled = await compileSandboxProgram(`async function execute(input) {\n${body}\n}`, LIMITS);
  programs.push(compiled);
  const started = performance.now();
  const outcome = await compiled.run(input as never, { bridges: {} });
  const elapsed = performance.now() - started;
  // The same program still answers afterwards.
  const again = await compiled.run({}, { bridges: {} });
  return { outcome, elapsed, again, compiled };
}

const canary = { touched: false };
(globalThis as Record<string, unknown>)['loomCanary'] = canary;

describe('realm escapes find nothing of the host', () => {
  const probes: Record<string, string> = {
    'Function constructor through a function': 'return typeof (() => 0).constructor.constructor("return typeof process")();',
    'async function constructor': 'const AsyncFunction = (async () => {}).constructor; return await AsyncFunction("return typeof require")();',
    'this.constructor.constructor': 'return typeof this.constructor.constructor("return this")().process;',
    'globalThis.process and friends':
      'return [typeof globalThis.process, typeof globalThis.require, typeof globalThis.module, typeof globalThis.Buffer, typeof globalThis.loomCanary].join(",");',
    'Error.prepareStackTrace':
      'Error.prepareStackTrace = (e, frames) => frames.map((f) => typeof f.getThis()); try { null.x; } catch (e) { return String(e.stack); }',
    'arguments.callee.caller':
      'function probe() { return arguments.callee.caller; } const caller = probe(); return caller ? caller.constructor("return typeof process")() : "none";',
    'import()': 'try { await import("node:fs"); return "imported"; } catch (e) { return "refused"; }',
  };
  for (const [name, body] of Object.entries(probes)) {
    it(`${name}: no process, require, module or host global`, async () => {
      const { outcome, again } = await attempt(body);
      const text = JSON.stringify(outcome);
      expect(text).not.toMatch(/"(function|object)"/);
      expect(text).not.toContain('imported');
      expect(canary.touched).toBe(false);
      expect(again.ok || again.error.kind === 'thrown').toBe(true);
    });
  }
});

describe('what crosses is data', () => {
  it('input with __proto__ keys pollutes nothing, inside or out; output keys stay plain keys', async () => {
    const input = JSON.parse('{"__proto__": {"polluted": "yes"}, "constructor": {"prototype": {"polluted": "yes"}}}') as Record<string, unknown>;
    const { outcome } = await attempt(
      'const inside = ({}).polluted; return JSON.parse(\'{"__proto__": {"polluted": "out"}, "constructor": {"prototype": {"polluted": "out"}}, "inside": \' + JSON.stringify(inside ?? null) + "}");',
      input,
    );
    expect(outcome.ok).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    if (!outcome.ok) return;
    const output = outcome.output as Record<string, unknown>;
    expect(Object.keys(output)).toEqual(['__proto__', 'constructor', 'inside']);
    expect(output['inside']).toBeNull();
    expect(Object.getPrototypeOf(output)).toBe(Object.prototype);
  });

  it('a getter or proxy in the output is flattened to its value once, inside', async () => {
    const { outcome } = await attempt('let reads = 0; return { get sneaky() { reads += 1; return reads; } };');
    expect(outcome).toMatchObject({ ok: true, output: { sneaky: 1 } });
  });
});

describe('hangs and bombs are stopped in time', () => {
  const cases: Record<string, [string, string]> = {
    'a sync loop': ['while (true) {}', 'timeout'],
    'a loop after an await': ['await null; while (true) {}', 'timeout'],
    'a promise that never settles': ['await new Promise(() => {});', 'timeout'],
    'a growing array': ['const a = []; for (;;) a.push(new Array(1e6).fill(1));', 'memory'],
    'a doubling string': ['let s = "x"; for (;;) s += s;', 'thrown|memory'],
    'deep recursion': ['const f = (n) => f(n + 1) + 1; return f(0);', 'thrown'],
  };
  for (const [name, [body, kinds]] of Object.entries(cases)) {
    it(`${name}: ${kinds}`, async () => {
      const { outcome, elapsed, again } = await attempt(body);
      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.error.kind).toMatch(new RegExp(`^(${kinds})$`));
      expect(elapsed).toBeLessThan(CONTAINED_MS);
      // The program is rebuilt if its isolate was stopped, and runs again.
      expect(again.ok ? 'ok' : again.error.kind).toMatch(/^(ok|thrown|timeout|memory)$/);
    });
  }

  it('a huge output is refused before the host parses it', async () => {
    const { outcome } = await attempt('return { blob: "y".repeat(5_000_000) };');
    expect(outcome).toMatchObject({ ok: false, error: { kind: 'output' } });
  });

  it('after the corpus, a new program runs correctly', async () => {
    const compiled = await compileSandboxProgram('function execute(input) { return { sum: input.a + input.b }; }', LIMITS);
    programs.push(compiled);
    expect(await compiled.run({ a: 2, b: 3 }, { bridges: {} })).toMatchObject({ ok: true, output: { sum: 5 } });
  });
});

describe('memory outside the heap, and what leaves the isolate, are bounded', () => {
  it('has no WebAssembly, SharedArrayBuffer or Atomics, however the name is spelled (their memory is outside the limit)', async () => {
    const { outcome } = await attempt(
      'const g = globalThis; return ["Web" + "Assembly", "Shared" + "ArrayBuffer", "Ato" + "mics"].map((name) => typeof g[name]);',
    );
    expect(outcome).toMatchObject({ ok: true, output: ['undefined', 'undefined', 'undefined'] });
  });

  it('cuts what the tool throws, and refuses data to hash or a request body over the output cap, inside the isolate', async () => {
    const thrown = await attempt('throw new Error("x".repeat(5_000_000));');
    expect(thrown.outcome).toMatchObject({ ok: false, error: { kind: 'thrown' } });
    expect(thrown.outcome.ok ? 0 : thrown.outcome.error.message.length).toBeLessThanOrEqual(2001);

    const compiled = await compileSandboxProgram(
      'function execute(input) { return crypto.createHash("sha256").update("x".repeat(input.size)).digest("hex"); }',
      LIMITS,
    );
    programs.push(compiled);
    expect(await compiled.run({ size: 150_000 }, { bridges: { crypto: true } })).toMatchObject({
      ok: false,
      error: { kind: 'thrown', message: 'the data to hash is 150000 characters, more than the 100000 a tool may pass out' },
    });
    expect(await compiled.run({ size: 10 }, { bridges: { crypto: true } })).toMatchObject({ ok: true });
  });
});

describe('the tool cannot reach the host entry or pose as a limit', () => {
  it("replacing a global named like the entry changes nothing: the host calls the prelude's own", async () => {
    const compiled = await compileSandboxProgram(
      'function execute() { return { honest: true }; }\nfor (const name of ["__loom_run", "__loom_entry"]) Object.defineProperty(globalThis, name, { get() { return async () => ({ fake: true }); }, set() {} });',
      LIMITS,
    );
    programs.push(compiled);
    expect(await compiled.run({}, { bridges: {} })).toMatchObject({ ok: true, output: { honest: true } });
  });

  it("throwing isolated-vm's own messages is a thrown failure, not a timeout or memory fault", async () => {
    const { outcome } = await attempt('throw new Error("Isolate was disposed during execution due to memory limit");');
    expect(outcome).toMatchObject({ ok: false, error: { kind: 'thrown' } });
  });
});

/**
 * Runs `script` (an ES module) in a child Node process and gives back its first line of output.
 * The child is killed after that line: once V8 has lost an isolate to out-of-memory, its thread
 * never returns and the process cannot exit by itself.
 */
function firstLineOf(script: string, timeoutMs: number): Promise<{ line: string | undefined; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '--no-warnings', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let line: string | undefined;
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      const end = stdout.indexOf('\n');
      if (end !== -1 && line === undefined) {
        line = stdout.slice(0, end);
        child.kill('SIGKILL');
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    child.on('exit', (_code, signal) => {
      clearTimeout(timer);
      resolve({ line, signal, stderr: stderr.slice(-2000) });
    });
  });
}

describe('V8 running out of memory inside an isolate', () => {
  it("a growing Map (V8's own out-of-memory, faster than isolated-vm's limit) fails the call as memory and the process lives on", async () => {
    const sandbox = new URL('../../src/forged-tools/sandbox.ts', import.meta.url).href;
    const script = `
      import { compileSandboxProgram } from ${JSON.stringify(sandbox)};
      const limits = { timeoutMs: 5000, memoryMb: 32, maxOutputBytes: 1000 };
      const bomb = await compileSandboxProgram('function execute() { const m = new Map(); for (let i = 0; ; i++) m.set(i, { i }); }', limits);
      const first = await bomb.run({}, { bridges: {} });
      const again = await bomb.run({}, { bridges: {} });
      const fresh = await compileSandboxProgram('function execute(input) { return input.n + 1; }', limits);
      const other = await fresh.run({ n: 1 }, { bridges: {} });
      process.stdout.write(JSON.stringify({ first, again, other }) + '\\n');
    `;
    const { line, stderr } = await firstLineOf(script, 25_000);
    // Without onCatastrophicError the child aborts (SIGABRT) before it can print anything.
    expect(line, stderr).toBeDefined();
    const result = JSON.parse(line ?? '{}') as Record<string, { ok: boolean; error?: { kind: string; message: string }; output?: unknown }>;
    expect(result['first']).toMatchObject({ ok: false, error: { kind: 'memory', message: 'the tool went over its 32 MB memory limit and was stopped' } });
    // The lost isolate's sandbox process is replaced: the program runs (and bombs) again in a new one.
    expect(result['again']).toMatchObject({ ok: false, error: { kind: 'memory', message: 'the tool went over its 32 MB memory limit and was stopped' } });
    expect(result['other']).toMatchObject({ ok: true, output: 2 });
  });
});

describe('through a kernel: faults audited, bridges bound by the agent', () => {
  const server = useScriptedModelServer();
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let host: TestHost;
  beforeAll(async () => {
    dir = await makeTempDir('loom-escape-');
  });
  afterAll(async () => {
    await dir.remove();
  });
  afterEach(async () => {
    await host.close();
  });

  const tool = (name: string, code: string, allowlist: string[] = []) => ({
    name,
    description: 'probe',
    inputSchema: { type: 'object', properties: { target: { type: 'string' }, loop: { type: 'boolean' } } },
    implementation: { mode: 'sandbox', code, allowlist },
    testCases: [{ input: { target: 'none' } }],
  });

  it('a tool that hangs, bombs memory or floods its output at call time is stopped, each fault audited, and the daemon answers the next call', async () => {
    host = await openTestHost(dir.path, { default_model: { provider: 'openai', model: 'gpt-4o', base_url: server.url } });
    await host.kernel.spawn(
      manifest(
        `name = "prober"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["forge_tool"]\n[emergent]\nsandbox_timeout_ms = 300\nsandbox_memory_mb = 32\n`,
      ),
    );
    server.script([APPROVE]);
    const code = [
      'function execute(input) {',
      '  if (input.target === "loop") { while (true) {} }',
      '  if (input.target === "bomb") { const a = []; for (;;) a.push(new Array(1e6).fill(1)); }',
      '  if (input.target === "flood") return { blob: "z".repeat(3000000) };',
      '  return { fine: true };',
      '}',
    ].join('\n');
    const forged = await host.kernel.forgedTools.forge('prober', tool('sleeper', code), 'test');
    expect(forged.ok).toBe(true);
    expect(await host.kernel.runAgentTool('prober', 'sleeper', { target: 'loop' })).toMatchObject({
      isError: true,
      text: expect.stringContaining('ran past its 300 ms time limit') as unknown,
    });
    expect(await host.kernel.runAgentTool('prober', 'sleeper', { target: 'bomb' })).toMatchObject({
      isError: true,
      text: expect.stringContaining('went over its 32 MB memory limit') as unknown,
    });
    expect(await host.kernel.runAgentTool('prober', 'sleeper', { target: 'flood' })).toMatchObject({
      isError: true,
      text: expect.stringContaining('over the 1,000,000-byte cap') as unknown,
    });
    expect(await host.kernel.runAgentTool('prober', 'sleeper', { target: 'ok' })).toMatchObject({ structured: { fine: true } });
    const faults = await host.kernel.audit({ agent: 'prober', type: 'tool-sandbox-fail' });
    expect(faults.map((entry) => entry.data['outcome'])).toEqual(['timeout', 'memory', 'output']);
    expect(await host.kernel.forgedTools.get((forged as { tool: { id: string } }).tool.id)).toMatchObject({ calls: 4, successRate: 0.25 });
  });

  it("fetch to loopback and metadata addresses is refused by the agent's own address guard, and audited", async () => {
    host = await openTestHost(dir.path, { default_model: { provider: 'openai', model: 'gpt-4o', base_url: server.url } });
    await host.kernel.spawn(
      manifest(
        `name = "fetcher"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["forge_tool", "http_request", "file_read"]\nnetwork = ["*"]\nfile_read = ["${dir.path}/allowed/*"]\n[emergent]\nallowed_sandbox_apis = ["fetch", "fs.readFile"]\nfetch_domain_allowlist = ["127.0.0.1", "169.254.169.254", "localhost", "metadata.google.internal"]\n`,
      ),
    );
    const code =
      'async function execute(input) { if (input.target === "none") return { skipped: true }; try { const r = input.target.startsWith("http") ? await fetch(input.target) : await fs.readFile(input.target); return { leaked: typeof r === "string" ? r : r.status }; } catch (e) { return { refused: e.message }; } }';
    server.script([APPROVE]);
    const forged = await host.kernel.forgedTools.forge('fetcher', tool('probe', code, ['fetch', 'fs.readFile']), 'test');
    expect(forged.ok).toBe(true);
    for (const target of [
      'http://127.0.0.1:9/',
      'http://169.254.169.254/latest/meta-data/',
      'http://localhost:9/',
      'http://metadata.google.internal/',
      '/etc/passwd',
      `${dir.path}/../outside.txt`,
    ]) {
      const result = await host.kernel.runAgentTool('fetcher', 'probe', { target });
      expect(result.structured, target).toHaveProperty('refused');
      expect(result.structured, target).not.toHaveProperty('leaked');
    }
    // A domain outside fetch_domain_allowlist never reaches the tool runner.
    const outside = await host.kernel.runAgentTool('fetcher', 'probe', { target: 'http://example.org/' });
    expect(outside.structured).toMatchObject({ refused: expect.stringContaining('not in [emergent].fetch_domain_allowlist') as unknown });
    // Every refused bridge call is in the audit log (and the runner's own refusals besides).
    const faults = (await host.kernel.audit({ agent: 'fetcher', type: 'tool-sandbox-fail' })).map((entry) => entry.data['outcome']);
    expect(faults).toEqual(['bridge-refused', 'bridge-refused', 'bridge-refused', 'bridge-refused', 'bridge-refused', 'bridge-refused', 'fetch-domain']);
    expect((await host.kernel.audit({ agent: 'fetcher', type: 'tool-deny' })).length).toBeGreaterThanOrEqual(2);
  });
});
