import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkSandboxCode, compileSandboxProgram, formatCodeProblems, type SandboxedProgram } from '../../src/forged-tools/index.ts';
import { MAX_BRIDGE_CALLS } from '../../src/forged-tools/sandbox.ts';

const LIMITS = { timeoutMs: 1000, memoryMb: 32, maxOutputBytes: 10_000 };
const programs: SandboxedProgram[] = [];

async function program(code: string, limits = LIMITS): Promise<SandboxedProgram> {
  const compiled = await compileSandboxProgram(code, limits);
  programs.push(compiled);
  return compiled;
}

afterEach(() => {
  for (const compiled of programs.splice(0)) compiled.dispose();
});

describe('checkSandboxCode()', () => {
  it("refuses spec/02's blocked APIs, each with its line and column", () => {
    const code = [
      'function execute(input) {',
      '  eval("1");',
      '  const f = new Function("return 1");',
      '  const m = require("fs");',
      '  import("x");',
      '  process.exit(1);',
      '  fs.writeFile("/x", "y");',
      '  return (() => 1).constructor;',
      '}',
    ].join('\n');
    const problems = checkSandboxCode(code, ['fs.readFile']);
    expect(problems.map((problem) => `${problem.line}:${problem.column}`)).toEqual(['2:3', '3:17', '4:13', '5:3', '6:3', '7:6', '8:20']);
    expect(formatCodeProblems(problems)).toContain('line 2, column 3: "eval" is not allowed in a sandboxed tool: it runs arbitrary code');
    expect(formatCodeProblems(problems)).toContain(
      'line 7, column 6: "fs.writeFile" is not allowed in a sandboxed tool: a tool may only read files (fs.readFile)',
    );
  });

  it('names an API the allowlist leaves out, a missing execute, and a syntax error', () => {
    expect(checkSandboxCode('async function execute(input) { return (await fetch(input.url)).status; }', [])).toEqual([
      {
        line: 1,
        column: 47,
        message:
          '"fetch" is used but "fetch" is not in the tool\'s allowlist; add "fetch" to implementation.allowlist (and the agent\'s [emergent].allowed_sandbox_apis)',
      },
    ]);
    expect(checkSandboxCode('async function execute(input) { return (await fetch(input.url)).status; }', ['fetch'])).toEqual([]);
    expect(checkSandboxCode('function run(input) { return input; }', [])[0]?.message).toContain('must define execute(input)');
    expect(checkSandboxCode('function execute(input) { return {', [])[0]).toMatchObject({
      line: 1,
      message: expect.stringMatching(/^syntax error: /) as unknown,
    });
  });

  it('lets property names and object keys that look like blocked names pass', () => {
    expect(
      checkSandboxCode('function execute(input) { const o = { process: 1, eval: 2 }; return { n: o.process + o.eval, label: input.require }; }', []),
    ).toEqual([]);
  });
});

describe('compileSandboxProgram()', () => {
  it('runs sync and async execute with a copy of the input, and gives JSON back', async () => {
    const compiled = await program(
      'async function execute(input) { input.mutated = true; await null; return { doubled: input.n * 2, seen: Object.keys(input) }; }',
    );
    const input = { n: 21 };
    const outcome = await compiled.run(input, { bridges: {} });
    expect(outcome).toMatchObject({ ok: true, output: { doubled: 42, seen: ['n', 'mutated'] } });
    expect(input).toEqual({ n: 21 });
  });

  it('gives each call a fresh context: a global set in one call is gone in the next', async () => {
    const compiled = await program('function execute() { const before = typeof globalThis.leftover; globalThis.leftover = 1; return { before }; }');
    expect(await compiled.run({}, { bridges: {} })).toMatchObject({ output: { before: 'undefined' } });
    expect(await compiled.run({}, { bridges: {} })).toMatchObject({ output: { before: 'undefined' } });
  });

  it('stays within its memory over many calls: released contexts do not pile up in the isolate', async () => {
    const compiled = await program('function execute(input) { return { n: input.n + 1 }; }', { ...LIMITS, memoryMb: 16 });
    let failures = 0;
    for (let call = 0; call < 600; call += 1) if (!(await compiled.run({ n: call }, { bridges: {} })).ok) failures += 1;
    expect(failures).toBe(0);
  });

  it('fails a call that throws, returns undefined, or returns too much, saying which', async () => {
    expect(await (await program('function execute() { throw new Error("bad input: no rows"); }')).run({}, { bridges: {} })).toMatchObject({
      ok: false,
      error: { kind: 'thrown', message: 'bad input: no rows' },
    });
    expect(await (await program('function execute() { }')).run({}, { bridges: {} })).toMatchObject({
      ok: false,
      error: { kind: 'output', message: expect.stringContaining('returned undefined, not a JSON value') as unknown },
    });
    expect(await (await program('function execute() { return () => 1; }')).run({}, { bridges: {} })).toMatchObject({
      ok: false,
      error: { kind: 'output', message: expect.stringContaining('returned a function') as unknown },
    });
    expect(await (await program('function execute() { const a = {}; a.self = a; return a; }')).run({}, { bridges: {} })).toMatchObject({
      ok: false,
      error: { kind: 'output', message: expect.stringContaining('cannot be turned into JSON') as unknown },
    });
    expect(await (await program('function execute() { return "x".repeat(20000); }')).run({}, { bridges: {} })).toMatchObject({
      ok: false,
      error: { kind: 'output', message: expect.stringContaining('over the 10,000-byte cap') as unknown },
    });
  });

  it('has no fetch, fs or crypto unless given, and calls a bridge with plain strings; a rejection is catchable inside', async () => {
    const absent = await program('function execute() { return [typeof fetch, typeof fs, typeof crypto, typeof require, typeof process, typeof setTimeout]; }');
    expect(await absent.run({}, { bridges: {} })).toMatchObject({ output: ['undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined'] });
    const fetcher = vi.fn((request: { url: string }) =>
      request.url.includes('fail')
        ? Promise.reject(new Error('refused: not granted'))
        : Promise.resolve({ url: request.url, status: 200, statusText: 'OK', headers: { 'Content-Type': 'text/plain' }, body: 'hello' }),
    );
    const compiled = await program(
      'async function execute(input) { const r = await fetch(input.url, { method: "head" }); let error = null; try { await fetch("https://fail.test/"); } catch (e) { error = e.message; } return { status: r.status, ok: r.ok, type: r.headers.get("content-type"), body: await r.text(), error }; }',
    );
    const outcome = await compiled.run({ url: 'https://ok.test/' }, { bridges: { fetch: fetcher } });
    expect(outcome).toMatchObject({ ok: true, output: { status: 200, ok: true, type: 'text/plain', body: 'hello', error: 'refused: not granted' } });
    expect(fetcher).toHaveBeenCalledWith({ url: 'https://ok.test/', method: 'HEAD', headers: {} });
  });

  it('hashes on the host when crypto is given', async () => {
    const compiled = await program(
      'function execute(input) { return { sha: crypto.createHash("sha256").update(input.text).digest("hex"), mac: crypto.createHmac("sha256", "k").update("x").digest("base64") }; }',
    );
    expect(await compiled.run({ text: 'abc' }, { bridges: { crypto: true } })).toMatchObject({
      output: { sha: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' },
    });
  });

  it('a thrown message never passes for a limit: "Script execution timed out." and "memory limit" stay thrown', async () => {
    for (const message of ['Script execution timed out.', 'went over its memory limit', '__LOOM_OUTPUT_TOO_LARGE__:99']) {
      const compiled = await program(`function execute() { throw new Error(${JSON.stringify(message)}); }`);
      expect(await compiled.run({}, { bridges: {} })).toMatchObject({ ok: false, error: { kind: 'thrown', message } });
    }
    const atLoad = await program('throw new Error("Script execution timed out."); function execute() { return 1; }');
    expect(await atLoad.run({}, { bridges: {} })).toMatchObject({ ok: false, error: { kind: 'thrown' } });
  });

  it("a call stopped for its caller (abort) does not take another caller's call with it", async () => {
    const compiled = await program('async function execute(input) { await fs.readFile("x"); return input.who; }');
    // Every read waits until the second call has been stopped, so all three are in flight at the abort.
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slowRead = async (): Promise<string> => {
      await held;
      return 'data';
    };
    const controller = new AbortController();
    const first = compiled.run({ who: 'first' }, { bridges: { readFile: slowRead } });
    const second = compiled.run({ who: 'second' }, { bridges: { readFile: slowRead }, signal: controller.signal });
    const third = compiled.run({ who: 'third' }, { bridges: { readFile: slowRead } });
    controller.abort();
    expect(await second).toMatchObject({ ok: false, error: { kind: 'aborted' } });
    release();
    expect(await first).toMatchObject({ ok: true, output: 'first' });
    expect(await third).toMatchObject({ ok: true, output: 'third' });
  });

  it('checks what the isolate sends a bridge: a tool that replaces JSON.stringify cannot hand the host a malformed request', async () => {
    const fetcher = vi.fn(() => Promise.resolve({ url: 'https://a.test/', status: 200, statusText: 'OK', headers: {}, body: '' }));
    const compiled = await program(
      'async function execute() { JSON.stringify = () => \'{"url":{"href":"x"},"method":7,"headers":{"__proto__":{"x":"1"}},"extra":true}\'; try { await fetch("https://a.test/"); return "sent"; } catch (e) { return e.message; } }',
    );
    const outcome = await compiled.run({}, { bridges: { fetch: fetcher } });
    expect(outcome).toMatchObject({ ok: true, output: expect.stringContaining('fetch(): bad arguments') as unknown });
    expect(fetcher).not.toHaveBeenCalled();
  });

  it('counts crypto calls apart from fetch and reads: hashing 100 rows is not a bridge failure', async () => {
    const compiled = await program(
      'function execute() { const out = []; for (let i = 0; i < 100; i++) out.push(crypto.createHash("sha256").update(String(i)).digest("hex").slice(0, 4)); return out.length; }',
    );
    expect(await compiled.run({}, { bridges: { crypto: true } })).toMatchObject({ ok: true, output: 100 });
  });

  it('fails with a bridge failure past MAX_BRIDGE_CALLS fetches, even if the tool catches the refusal', async () => {
    const fetcher = vi.fn(() => Promise.resolve({ url: 'https://a.test/', status: 200, statusText: 'OK', headers: {}, body: '' }));
    const compiled = await program(
      `async function execute() { for (let i = 0; i <= ${MAX_BRIDGE_CALLS}; i++) { try { await fetch("https://a.test/"); } catch {} } return "done"; }`,
    );
    expect(await compiled.run({}, { bridges: { fetch: fetcher } })).toMatchObject({
      ok: false,
      error: { kind: 'bridge', message: expect.stringContaining(`more than ${MAX_BRIDGE_CALLS} bridge calls`) as unknown },
    });
    expect(fetcher).toHaveBeenCalledTimes(MAX_BRIDGE_CALLS);
  });

  it('stops a call when the signal aborts', async () => {
    const compiled = await program('async function execute() { await new Promise(() => {}); }');
    const controller = new AbortController();
    const running = compiled.run({}, { bridges: {}, signal: controller.signal });
    controller.abort();
    expect(await running).toMatchObject({ ok: false, error: { kind: 'aborted' } });
  });
});
