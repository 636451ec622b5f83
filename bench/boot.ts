import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseManifest } from '../src/manifest/index.ts';
import { benchManifest, openBenchKernel } from './bench-kernel.ts';
import { percentile, round } from './stats.ts';

const AGENTS = 10_000;
const RUNS = 5;
const run = promisify(execFile);

interface ChildReport {
  boot_ms: number;
  agents: number;
  rss_delta_bytes: number;
  heap_delta_bytes: number;
}

/**
 * A kernel opening a store that holds 10,000 agents and restoring them, each boot in a fresh
 * process; memory is measured after a full GC.
 */
export async function bootBench(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'loom-bench-boot-'));
  try {
    const databasePath = join(dir, 'loom.db');
    const seed = await openBenchKernel(databasePath);
    const { manifest } = parseManifest(benchManifest('template'), { source: 'bench.toml' });
    for (let index = 0; index < AGENTS; index += 1) {
      await seed.kernel.spawn({ ...manifest, name: `agent-${index}` });
    }
    for (let index = 0; index < AGENTS; index += 4) await seed.kernel.suspend(`agent-${index}`);
    await seed.dispose();

    const reports: ChildReport[] = [];
    for (let attempt = 0; attempt < RUNS; attempt += 1) {
      const { stdout } = await run(process.execPath, ['--expose-gc', join(import.meta.dirname, 'boot-child.ts'), databasePath]);
      reports.push(JSON.parse(stdout) as ChildReport);
    }
    const median = (pick: (report: ChildReport) => number): number => percentile(reports.map(pick).sort((a, b) => a - b), 0.5);
    const bootMs = median((report) => report.boot_ms);
    return {
      bench: 'boot',
      agents: reports[0]?.agents,
      runs: RUNS,
      p50_ms: round(bootMs),
      target_ms: 1000,
      rss_per_agent_bytes: Math.round(median((report) => report.rss_delta_bytes) / AGENTS),
      heap_per_agent_bytes: Math.round(median((report) => report.heap_delta_bytes) / AGENTS),
      target_per_agent_bytes: 10_240,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
