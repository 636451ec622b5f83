import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { daemonEntry } from '../src/config/daemon-build.ts';
import { INSTALL_DIR } from '../src/config/installation.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { openBenchKernel } from './bench-kernel.ts';
import { startDaemonProcess } from './http.ts';
import { procStat } from './proc.ts';
import { round, summarize } from './stats.ts';

/** Runs of the CLI measured, after one that warms Node's compile cache. */
const RUNS = 20;
/** Agents the daemon holds, so the list has rows to print. */
const AGENTS = 20;
/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux). */
const TICKS_PER_S = 100;
const bin = join(INSTALL_DIR, 'bin', 'loom.js');

/** CPU this process's finished children used, in ms (/proc/self/stat's cutime + cstime). */
async function childrenCpuMs(): Promise<number> {
  const fields = (await procStat(process.pid)) ?? [];
  // Fields 16 and 17 of the file (cutime, cstime), counted from field 3.
  return (((fields[13] ?? 0) + (fields[14] ?? 0)) / TICKS_PER_S) * 1000;
}

/** Runs `loom <args>` as a user does (`bin/loom.js`, its own process) and resolves with its wall time in ms. */
async function runCli(home: string, args: readonly string[]): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [bin, ...args], {
    env: { PATH: process.env['PATH'] ?? '', HOME: home, LOOM_HOME: home },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`loom ${args.join(' ')} exited with ${code}: ${stderr}`);
  return performance.now() - started;
}

/**
 * `loom agent list` against a running daemon holding 20 agents: process start to exit, run 20
 * times one after another (issue 40: ≤ 300 ms p50). Also the CPU each run used, which a busy
 * machine does not inflate as it does the wall time, and `loom --version`, the floor: starting
 * Node and loading the CLI.
 */
export async function cliAgentListBench(): Promise<Record<string, unknown>> {
  const home = await mkdtemp(join(tmpdir(), 'loom-bench-cli-'));
  try {
    const seed = await openBenchKernel(join(home, 'data', 'loom.db'));
    for (let index = 0; index < AGENTS; index += 1) {
      await seed.kernel.spawn(parseManifest(`name = "agent-${index}"\n[model]\nprovider = "ollama"\nmodel = "llama3.2"\n`, { source: 'bench.toml' }).manifest);
    }
    await seed.dispose();
    const daemon = await startDaemonProcess(home);
    try {
      const measure = async (args: readonly string[]): Promise<{ wall: ReturnType<typeof summarize>; cpu_ms_per_run: number }> => {
        await runCli(home, args);
        const cpuBefore = await childrenCpuMs();
        const times: number[] = [];
        for (let run = 0; run < RUNS; run += 1) times.push(await runCli(home, args));
        return { wall: summarize(times), cpu_ms_per_run: round(((await childrenCpuMs()) - cpuBefore) / RUNS) };
      };
      const list = await measure(['agent', 'list']);
      const version = await measure(['--version']);
      const entry = daemonEntry(INSTALL_DIR, process.env);
      return {
        bench: 'cli-agent-list',
        p50_ms: list.wall.p50_ms,
        p99_ms: list.wall.p99_ms,
        cpu_ms_per_run: list.cpu_ms_per_run,
        version_p50_ms: version.wall.p50_ms,
        version_cpu_ms_per_run: version.cpu_ms_per_run,
        runs: RUNS,
        agents: AGENTS,
        target_ms: 300,
        // This machine's load when measured: on a busy one the wall times grow, the CPU times much less.
        load_average_1m: round(loadavg()[0] ?? 0),
        code: entry.built ? 'built' : `sources (${entry.why ?? ''})`,
      };
    } finally {
      await daemon.stop();
    }
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}
