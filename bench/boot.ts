import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseManifest } from '../src/manifest/index.ts';
import { benchManifest, openBenchKernel } from './bench-kernel.ts';
import { median, round } from './stats.ts';

const AGENTS = 10_000;
const RUNS = 5;
const run = promisify(execFile);

interface ChildReport {
  boot_ms: number;
  agents: number;
  rss_delta_bytes: number;
  heap_delta_bytes: number;
}

async function seed(databasePath: string, from: number, to: number): Promise<void> {
  const bench = await openBenchKernel(databasePath);
  const { manifest } = parseManifest(benchManifest('template'), { source: 'bench.toml' });
  for (let index = from; index < to; index += 1) {
    await bench.kernel.spawn({ ...manifest, name: `agent-${index}` });
    // A quarter of them suspended, so both states are restored.
    if (index % 4 === 0) await bench.kernel.suspend(`agent-${index}`);
  }
  await bench.dispose();
}

async function measure(databasePath: string): Promise<{ bootMs: number; rss: number; heap: number; agents: number }> {
  const reports: ChildReport[] = [];
  for (let attempt = 0; attempt < RUNS; attempt += 1) {
    const { stdout } = await run(process.execPath, ['--expose-gc', join(import.meta.dirname, 'boot-child.ts'), databasePath]);
    reports.push(JSON.parse(stdout) as ChildReport);
  }
  const medianOf = (pick: (report: ChildReport) => number): number => median(reports.map(pick));
  return {
    bootMs: medianOf((report) => report.boot_ms),
    rss: medianOf((report) => report.rss_delta_bytes),
    heap: medianOf((report) => report.heap_delta_bytes),
    agents: reports[0]?.agents ?? 0,
  };
}

/**
 * A kernel opening a store that holds 10,000 agents and restoring them, each boot in a fresh
 * process, memory read after a full GC. Resident memory per idle agent is the marginal cost:
 * the growth in RSS from booting 10,000 to booting 20,000 agents, divided by 10,000. The RSS
 * growth of the first boot also holds a fixed cost that does not grow with agents (V8's young
 * generation, which any burst of allocation commits); it is reported as `rss_delta_10k_bytes`.
 */
export async function bootBench(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'loom-bench-boot-'));
  try {
    const databasePath = join(dir, 'loom.db');
    await seed(databasePath, 0, AGENTS);
    const first = await measure(databasePath);
    await seed(databasePath, AGENTS, 2 * AGENTS);
    const second = await measure(databasePath);
    return {
      bench: 'boot',
      agents: first.agents,
      runs: RUNS,
      p50_ms: round(first.bootMs),
      target_ms: 1000,
      boot_20k_p50_ms: round(second.bootMs),
      rss_per_agent_bytes: Math.round((second.rss - first.rss) / AGENTS),
      heap_per_agent_bytes: Math.round((second.heap - first.heap) / AGENTS),
      target_per_agent_bytes: 10_240,
      rss_delta_10k_bytes: first.rss,
      heap_delta_10k_bytes: first.heap,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
