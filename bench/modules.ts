import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createSystemClock } from '../src/clock/index.ts';
import { createSilentLogger } from '../src/logging/index.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { createCostCatalog } from '../src/models/index.ts';
import { createCodeModules } from '../src/code-modules/index.ts';
import { BUILTIN_TOOLS } from '../src/tools/index.ts';
import { buildWasm } from '../test/support/build-wasm.ts';
import { openBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { round, summarize } from './stats.ts';

const WARMUP = 200;
const TURNS = 2000;
/** Turns rotate over this many agents of each kind, so no session grows past a realistic length. */
const AGENTS = 50;

const PYTHON_ECHO = 'import loom_agent\nloom_agent.run(lambda request, host: "echo: " + request["message"])\n';

/**
 * A message to a code agent through the whole durable turn (dispatch, quota, session load and
 * save, usage, file-backed SQLite): a trivial wasm module (the wasm-echo example, on a warm
 * thread), a warm Python script, and an assistant turn on a model that answers at once, all in
 * one run. Targets: wasm p50 ≤ 0.3 ms, Python p50 ≤ 1 ms.
 */
export async function modulesBench(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'loom-bench-modules-'));
  const clock = createSystemClock();
  const workspaceOf = (agent: { name: string }): string => join(dir, 'workspaces', agent.name);
  const codeModules = createCodeModules({ clock, logger: createSilentLogger(), env: { PATH: process.env['PATH'] }, workspaceOf });
  const bench = await openBenchKernel(undefined, {
    resolver: { resolve: () => createInstantModel() },
    costs: createCostCatalog(),
    tools: BUILTIN_TOOLS,
    env: {},
    workspaceOf,
    codeModules,
  });
  try {
    const wasm = await buildWasm('examples/agents/wasm-echo/assembly/index.ts', join(dir, 'echo.wasm'));
    const python = join(dir, 'echo.py');
    await writeFile(python, PYTHON_ECHO);
    const kinds = {
      wasm: `module = "wasm:${wasm}"`,
      python: `module = "python:${python}"\n[capabilities]\nshell = ["python3"]`,
      builtin: '[model]\nprovider = "openai"\nmodel = "gpt-4o"',
    };
    for (const [kind, body] of Object.entries(kinds)) {
      for (let index = 0; index < AGENTS; index += 1) {
        await bench.kernel.spawn(parseManifest(`name = "${kind}-${index}"\n${body}\n`, { source: 'bench.toml' }).manifest);
      }
    }
    const measure = async (kind: string): Promise<ReturnType<typeof summarize>> => {
      const durations: number[] = [];
      for (let turn = 0; turn < WARMUP + TURNS; turn += 1) {
        const started = performance.now();
        await bench.kernel.send(`${kind}-${turn % AGENTS}`, 'hello');
        if (turn >= WARMUP) durations.push(performance.now() - started);
      }
      return summarize(durations);
    };
    const builtin = await measure('builtin');
    const wasmTurns = await measure('wasm');
    const pythonTurns = await measure('python');
    return {
      bench: 'modules',
      wasm_p50_ms: wasmTurns.p50_ms,
      wasm_p99_ms: wasmTurns.p99_ms,
      python_p50_ms: pythonTurns.p50_ms,
      python_p99_ms: pythonTurns.p99_ms,
      builtin_p50_ms: builtin.p50_ms,
      builtin_p99_ms: builtin.p99_ms,
      ratio_wasm_vs_builtin_p50: round(wasmTurns.p50_ms / builtin.p50_ms),
      ratio_python_vs_builtin_p50: round(pythonTurns.p50_ms / builtin.p50_ms),
      samples: TURNS,
      target_wasm_p50_ms: 0.3,
      target_python_p50_ms: 1,
      includes:
        'a durable turn (dispatch, quota, session load and save, usage record) in a file-backed SQLite store; wasm: request to a warm thread, a fresh instance, reply; python: a JSON line to a warm process and back; builtin: the assistant loop on an in-process model that answers at once',
    };
  } finally {
    await bench.dispose();
    await codeModules.close();
    await rm(dir, { recursive: true, force: true });
  }
}
