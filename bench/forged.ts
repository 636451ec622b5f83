import { performance } from 'node:perf_hooks';
import { parseManifest } from '../src/manifest/index.ts';
import type { ToolResult } from '../src/contracts/index.ts';
import { compileSandboxProgram } from '../src/forged-tools/index.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { round, summarize } from './stats.ts';

const WARMUP = 200;
const CALLS = 2000;
const FORGES = 30;

const CONVERT =
  'function execute(input) { const c = input.from === "F" ? (input.value - 32) * 5 / 9 : input.value; return { result: Math.round(c * 100) / 100 }; }';

const request = (index: number, mode: 'sandbox' | 'compose') => ({
  name: `tool_${mode}_${index}`,
  description: 'Converts a temperature',
  inputSchema: { type: 'object', properties: { value: { type: 'number' }, from: { type: 'string' } }, required: ['value'] },
  implementation:
    mode === 'sandbox'
      ? { mode: 'sandbox', code: CONVERT, allowlist: [] }
      : { mode: 'compose', steps: [{ name: 'list', tool: 'agent_list', inputMapping: {} }] },
  testCases: [{ input: { value: 212, from: 'F' }, ...(mode === 'sandbox' ? { expectedOutput: { result: 100 } } : {}) }],
});

async function time(calls: number, run: () => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let call = 0; call < WARMUP + calls; call += 1) {
    const started = performance.now();
    await run();
    if (call >= WARMUP) samples.push(performance.now() - started);
  }
  return samples;
}

/**
 * Forged tools (spec/02), on an in-process judge that approves at once: a sandboxed call on a
 * warm isolate (the program alone, and through the tool runner as the agent), a compose call's
 * overhead beyond its one step (the same step called directly through the runner), and the time
 * from a forge request to a registered tool.
 */
export async function forgedBench(): Promise<Record<string, unknown>> {
  const model = createInstantModel({ json: () => ({ approved: true, confidence: 0.95, issues: [] }) });
  const bench = await openInstantBenchKernel(model);
  try {
    const manifest = parseManifest(
      'name = "smith"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n[capabilities]\ntools = ["forge_tool", "agent_list"]\n[emergent]\njudge_model = "openai/gpt-4o"\nmax_session_tools = 100\nmax_forge_attempts_per_hour = 100\n',
      { source: 'bench.toml' },
    ).manifest;
    await bench.kernel.spawn(manifest);

    const program = await compileSandboxProgram(CONVERT, { timeoutMs: 5000, memoryMb: 128, maxOutputBytes: 1_000_000 });
    const isolateOnly = summarize(await time(CALLS, () => program.run({ value: 212, from: 'F' }, { bridges: {} })));
    program.dispose();

    const forgeTimes: number[] = [];
    for (let index = 0; index < FORGES; index += 1) {
      const started = performance.now();
      const outcome = await bench.kernel.forgedTools.forge('smith', request(index, 'sandbox'), 'bench');
      if (!outcome.ok) throw new Error(`bench forge refused: ${outcome.reason}`);
      forgeTimes.push(performance.now() - started);
    }
    const compose = await bench.kernel.forgedTools.forge('smith', request(0, 'compose'), 'bench');
    if (!compose.ok) throw new Error(`bench forge refused: ${compose.reason}`);

    const call = (tool: string, input: unknown): Promise<ToolResult> => bench.kernel.runAgentTool('smith', tool, input);
    const sandboxed = summarize(await time(CALLS, () => call('tool_sandbox_0', { value: 212, from: 'F' })));
    const composed = summarize(await time(CALLS, () => call('tool_compose_0', { value: 1 })));
    const direct = summarize(await time(CALLS, () => call('agent_list', {})));
    return {
      bench: 'forged',
      sandbox_program_call: isolateOnly,
      sandboxed_tool_call: sandboxed,
      compose_tool_call: composed,
      compose_step_direct: direct,
      compose_overhead_p50_ms: round(composed.p50_ms - direct.p50_ms),
      forge_to_registered: summarize(forgeTimes),
      note: 'judge answers at once (in-process model); sandboxed tool calls run in a fresh context on a warm isolate',
    };
  } finally {
    await bench.dispose();
  }
}
