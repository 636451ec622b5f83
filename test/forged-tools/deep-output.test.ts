/**
 * JSON nested thousands of levels deep, from a forged tool or into one: the call (or the forge)
 * that carries it fails alone, naming MAX_JSON_DEPTH, and nothing recursive ever walks it. Before,
 * a tool's output 5,000–30,000 levels deep overflowed the native stack of the sandbox process
 * (Node's IPC serializing it), which ended with every other agent's call in it, unlogged; a test
 * input 3,500 deep overflowed zod's stack in the daemon (a 500); and ten 3,500-level outputs made
 * the judge a request of hundreds of MB (pretty-printed, the square of the depth).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileSandboxProgram, createSandboxPool, type SandboxPool } from '../../src/forged-tools/sandbox.ts';
import { MAX_JSON_DEPTH, tooDeepMessage } from '../../src/validation/index.ts';
import { MAX_JUDGE_ISSUE_CHARS, MAX_JUDGE_ISSUES, MAX_JUDGE_VALUE_CHARS } from '../../src/forged-tools/judge.ts';
import { createRecordingLogger, type RecordingLogger } from '../support/recording-logger.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { APPROVE, DOUBLE_IT } from '../support/forge-requests.ts';
import type { ForgeOutcome } from '../../src/forged-tools/index.ts';

/** Code of a tool returning `{ a }`, `a` arrays nested `depth` deep: the output nests `depth + 1` levels. */
const nestedOutput = (depth: number): string => `function execute() { let a = []; for (let i = 1; i < ${depth}; i++) a = [a]; return { a }; }`;

/** The probe's tool: an output 8,000 levels deep, only when asked (`deep`), else `{ n }` doubled. */
const MAYBE_DEEP =
  'function execute(input) { if (input.deep) { let a = []; for (let i = 0; i < 8000; i++) a = [a]; return { a }; } return { n: input.n * 2 }; }';

/** Ten keys, each arrays nested `depth` deep. */
const branches = (depth: number): string =>
  `function execute() { const out = {}; for (let k = 0; k < 10; k++) { let a = []; for (let i = 1; i < ${depth}; i++) a = [a]; out["k" + k] = a; } return out; }`;

/** A value of arrays nested `depth` deep around `leaf`. */
function arrays(depth: number, leaf: unknown = 1): unknown {
  let value = leaf;
  for (let level = 0; level < depth; level += 1) value = [value];
  return value;
}

const OUTPUT_TOO_DEEP = tooDeepMessage("the tool's output");
const LIMITS = { timeoutMs: 10_000, memoryMb: 128, maxOutputBytes: 1_000_000 };

describe('a sandbox pool, given a tool whose output nests deeper than MAX_JSON_DEPTH', () => {
  let pool: SandboxPool;
  let logger: RecordingLogger;
  beforeEach(() => {
    logger = createRecordingLogger();
    pool = createSandboxPool({ logger });
  });
  afterEach(() => pool.close());

  it("fails that call alone, naming the limit: the sandbox process, another tool's call under way in it and later calls all live on", async () => {
    const deep = await compileSandboxProgram(nestedOutput(8000), LIMITS, { pool });
    const waiting = await compileSandboxProgram(
      'async function execute() { const response = await fetch("https://a.test/"); return { body: await response.text() }; }',
      LIMITS,
      { pool },
    );
    const plain = await compileSandboxProgram('function execute(input) { return { n: input.n * 2 }; }', LIMITS, { pool });
    const [pid] = pool.pids();
    // Another agent's call, inside its sandbox when the deep output comes back.
    let inside!: () => void;
    let answer!: (body: string) => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    const body = new Promise<string>((resolve) => (answer = resolve));
    const fetch = async () => {
      inside();
      return { url: 'https://a.test/', status: 200, statusText: 'OK', headers: {}, body: await body };
    };
    const other = waiting.run({}, { bridges: { fetch } });
    await entered;

    // On the old code: { kind: 'aborted', message: 'the sandbox process ended (exit code 1)' }, and `other` with it.
    expect(await deep.run({}, { bridges: {} })).toMatchObject({ ok: false, error: { kind: 'output', message: OUTPUT_TOO_DEEP } });
    answer('still here');
    expect(await other).toMatchObject({ ok: true, output: { body: 'still here' } });
    expect(await plain.run({ n: 21 }, { bridges: {} })).toMatchObject({ ok: true, output: { n: 42 } });
    expect(await deep.run({}, { bridges: {} })).toMatchObject({ ok: false, error: { kind: 'output', message: OUTPUT_TOO_DEEP } });
    expect(pool.pids()).toEqual([pid]);
    expect(logger.entries.filter((entry) => entry.level === 'error')).toEqual([]);
  });

  it.each([5_000, 30_000])('fails a call whose output nests %i levels the same way', async (depth) => {
    const deep = await compileSandboxProgram(nestedOutput(depth), LIMITS, { pool });
    expect(await deep.run({}, { bridges: {} })).toMatchObject({ ok: false, error: { kind: 'output', message: OUTPUT_TOO_DEEP } });
  });

  it(`passes an output of exactly ${MAX_JSON_DEPTH} levels, and refuses one more`, async () => {
    const atLimit = await compileSandboxProgram(nestedOutput(MAX_JSON_DEPTH - 1), LIMITS, { pool });
    const past = await compileSandboxProgram(nestedOutput(MAX_JSON_DEPTH), LIMITS, { pool });
    expect(await atLimit.run({}, { bridges: {} })).toMatchObject({ ok: true, output: { a: arrays(MAX_JSON_DEPTH - 2, []) } });
    expect(await past.run({}, { bridges: {} })).toMatchObject({ ok: false, error: { kind: 'output', message: OUTPUT_TOO_DEEP } });
  });

  it('refuses an input nested deeper than the limit before it reaches the sandbox', async () => {
    const plain = await compileSandboxProgram('function execute(input) { return { ok: true }; }', LIMITS, { pool });
    expect(await plain.run({ a: arrays(MAX_JSON_DEPTH) as never }, { bridges: {} })).toMatchObject({
      ok: false,
      error: { message: tooDeepMessage('the input') },
    });
  });

  it('logs a sandbox process that dies, with its exit, and fails its calls naming it', async () => {
    const waiting = await compileSandboxProgram('async function execute() { await fetch("https://a.test/"); return {}; }', LIMITS, { pool });
    const [pid] = pool.pids();
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    const call = waiting.run({}, { bridges: { fetch: () => (inside(), new Promise(() => undefined)) } });
    await entered;
    process.kill(pid as number, 'SIGKILL');
    expect(await call).toMatchObject({ ok: false, error: { kind: 'aborted', message: 'the sandbox process ended (SIGKILL)' } });
    const errors = logger.entries.filter((entry) => entry.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      bindings: { pid, signal: 'SIGKILL', calls: 1 },
      message: expect.stringContaining('a sandbox process ended unexpectedly (SIGKILL)') as unknown,
    });
  });
});

describe('through a kernel', () => {
  const server = useScriptedModelServer();
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let host: TestHost;
  beforeEach(async () => {
    dir = await makeTempDir('loom-deep-output-');
    host = await openTestHost(dir.path, { default_model: { provider: 'openai', model: 'gpt-4o', base_url: server.url } });
    await host.kernel.spawn(
      manifest(
        `name = "smith"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n[capabilities]\ntools = ["forge_tool"]\n[emergent]\nsandbox_timeout_ms = 10000\n`,
      ),
    );
  });
  afterEach(async () => {
    await host.close();
    await dir.remove();
  });

  const sandboxTool = (name: string, code: string, testCases: unknown[] = [{ input: {} }]) => ({
    name,
    description: 'A probe',
    inputSchema: { type: 'object' },
    implementation: { mode: 'sandbox', code, allowlist: [] },
    testCases,
  });

  const refusal = (outcome: ForgeOutcome): Extract<ForgeOutcome, { ok: false }> => {
    if (outcome.ok) throw new Error(`expected a refusal, but "${outcome.tool.name}" was registered`);
    return outcome;
  };

  /** The text of the last tool result in the model's request `index`. */
  const toolResultIn = (index: number): string => {
    const body = server.requests[index]?.body as { messages?: { role: string; content: unknown }[] } | undefined;
    const tool = (body?.messages ?? []).filter((message) => message.role === 'tool').at(-1);
    return typeof tool?.content === 'string' ? tool.content : JSON.stringify(tool?.content ?? null);
  };

  it("refuses the forge of the probe's tool (an output 8,000 levels deep) at its test, naming the limit, without asking the judge; the next forge works", async () => {
    const refused = refusal(await host.kernel.forgedTools.forge('smith', sandboxTool('deep_probe', nestedOutput(8000)), 'test'));
    expect(refused).toMatchObject({ stage: 'test', reason: `test 1 failed: ${OUTPUT_TOO_DEEP}` });
    expect(server.requests).toEqual([]);
    server.script([APPROVE]);
    expect(await host.kernel.forgedTools.forge('smith', DOUBLE_IT, 'test')).toMatchObject({ ok: true });
    expect(await host.kernel.runAgentTool('smith', 'double_it', { n: 4 })).toMatchObject({ structured: { n: 8 } });
  });

  it("gives a model's call of a tool that nests its output 8,000 deep on some input an error result naming the limit, every time; other sandboxed tools go on working", async () => {
    server.script([APPROVE, APPROVE]);
    expect(
      await host.kernel.forgedTools.forge('smith', sandboxTool('maybe_deep', MAYBE_DEEP, [{ input: { n: 1 }, expectedOutput: { n: 2 } }]), 'test'),
    ).toMatchObject({ ok: true });
    expect(await host.kernel.forgedTools.forge('smith', DOUBLE_IT, 'test')).toMatchObject({ ok: true });
    server.script([
      { toolCalls: [{ name: 'maybe_deep', input: { deep: true } }] },
      { toolCalls: [{ name: 'double_it', input: { n: 5 } }] },
      { toolCalls: [{ name: 'maybe_deep', input: { deep: true } }] },
      { text: 'done' },
    ]);
    expect((await host.kernel.send('smith', 'go')).text).toBe('done');
    const first = server.requests.length - 3;
    expect(toolResultIn(first)).toContain(`maybe_deep failed: ${OUTPUT_TOO_DEEP}`);
    expect(toolResultIn(first + 1)).toBe('{"n":10}');
    expect(toolResultIn(first + 2)).toContain(`maybe_deep failed: ${OUTPUT_TOO_DEEP}`);
    expect(await host.kernel.runAgentTool('smith', 'maybe_deep', { n: 3 })).toMatchObject({ structured: { n: 6 } });
    const faults = await host.kernel.audit({ agent: 'smith', type: 'tool-sandbox-fail' });
    expect(faults.map((entry) => entry.data['outcome'])).toEqual(['output', 'output']);
  });

  it('refuses a forge whose test outputs are 10 branches 3,500 deep by the depth bound: the judge gets no request at all', async () => {
    server.script([APPROVE]);
    const refused = refusal(await host.kernel.forgedTools.forge('smith', sandboxTool('wide_deep', branches(3500)), 'test'));
    expect(refused).toMatchObject({ stage: 'test', reason: `test 1 failed: ${OUTPUT_TOO_DEEP}` });
    expect(server.requests).toEqual([]);
  });

  it('sends the judge a compact document with each test value cut to MAX_JUDGE_VALUE_CHARS, saying so: under 40,000 characters for ten branches 500 deep and 900 KB of text', async () => {
    const code = `function execute() { const out = {}; for (let k = 0; k < 10; k++) { let a = []; for (let i = 1; i < 500; i++) a = [a]; out["k" + k] = a; } out.text = "x".repeat(900000); return out; }`;
    server.script([APPROVE]);
    expect(await host.kernel.forgedTools.forge('smith', sandboxTool('wide', code), 'test')).toMatchObject({ ok: true });
    const [judge] = server.requests;
    // On the old code the document was pretty-printed: ~5.9 MB (10 × 500² indentation, and the text).
    expect(JSON.stringify(judge?.body).length).toBeLessThan(40_000);
    const user = (judge?.body as { messages: { role: string; content: string }[] }).messages.find((message) => message.role === 'user')?.content ?? '';
    const document = JSON.parse(user) as { tests: { output: unknown; cut?: string[] }[] };
    expect(typeof document.tests[0]?.output).toBe('string');
    expect((document.tests[0]?.output as string).length).toBe(MAX_JUDGE_VALUE_CHARS);
    expect(document.tests[0]?.cut).toEqual(['output is 910,071 characters of JSON; only its first 4,000 are shown, as a string']);
  });

  it("refuses a forge whose test input is 10 arrays nested 3,500 deep at the request stage, naming the limit, through the engine and through the model's forge_tool call", async () => {
    const input = Object.fromEntries(Array.from({ length: 10 }, (_, index) => [`k${index}`, arrays(3500)]));
    const request = sandboxTool('deep_input', 'function execute() { return {}; }', [{ input }]);
    // On the old code zod's recursion overflowed the stack: the forge threw a RangeError.
    const refused = refusal(await host.kernel.forgedTools.forge('smith', request, 'test'));
    expect(refused.stage).toBe('request');
    expect(refused.reason).toBe(
      `invalid forge request: ${tooDeepMessage('the request', MAX_JSON_DEPTH, ['testCases', 0, 'input', 'k0', ...Array.from({ length: 2 }, () => 0)])}`,
    );
    const called = await host.kernel.runAgentTool('smith', 'forge_tool', request);
    expect(called.isError).toBe(true);
    expect(called.text).toContain(`is nested deeper than ${MAX_JSON_DEPTH} levels`);
    expect(server.requests).toEqual([]);
  });

  it(`keeps at most MAX_JUDGE_ISSUES of a judge's issues, each cut to MAX_JUDGE_ISSUE_CHARS, saying how many were left out`, async () => {
    const issues = Array.from({ length: 300 }, (_, index) => `issue ${index} ${'x'.repeat(10_000)}`);
    server.script([{ text: JSON.stringify({ approved: true, confidence: 0.9, issues }) }]);
    const outcome = await host.kernel.forgedTools.forge('smith', DOUBLE_IT, 'test');
    if (!outcome.ok) throw new Error(outcome.reason);
    const kept = outcome.verdict.issues;
    expect(kept).toHaveLength(MAX_JUDGE_ISSUES + 1);
    expect(kept.at(-1)).toBe(`… and 280 more issues, left out (Loom keeps ${MAX_JUDGE_ISSUES}, MAX_JUDGE_ISSUES)`);
    expect(kept[0]?.startsWith('issue 0 xxx')).toBe(true);
    expect(kept.slice(0, -1).every((issue) => issue.length < MAX_JUDGE_ISSUE_CHARS + 100)).toBe(true);
    const [stored] = await host.kernel.forgedTools.list({ agent: 'smith' });
    expect(JSON.stringify(stored?.verdicts).length).toBeLessThan(30_000);
  });
});
