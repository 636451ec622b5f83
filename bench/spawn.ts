import { performance } from 'node:perf_hooks';
import { parseManifest } from '../src/manifest/index.ts';
import { benchManifest, openBenchKernel } from './bench-kernel.ts';
import { summarize } from './stats.ts';

const WARMUP = 300;
const SAMPLES = 3000;
/** spec/01: "Spawn time: ~5ms on M1 Pro", the system we measure against. */
const REFERENCE_MS = 5;

/**
 * Spawn latency into a file-backed store: manifest parse and validation, capability
 * inheritance against a parent, the SQLite commit, registration and the spawn event.
 */
export async function spawnBench(): Promise<Record<string, unknown>> {
  const bench = await openBenchKernel();
  try {
    const parentText = benchManifest('parent').replace('llm_max_tokens = 4000', 'llm_max_tokens = 100000\nagent_spawn = true');
    await bench.kernel.spawn(parseManifest(parentText, { source: 'parent.toml' }).manifest);
    const texts = Array.from({ length: WARMUP + SAMPLES }, (_, index) => benchManifest(`agent-${index}`));
    const durations: number[] = [];
    for (const [index, text] of texts.entries()) {
      const started = performance.now();
      const { manifest } = parseManifest(text, { source: 'bench.toml' });
      await bench.kernel.spawn(manifest, { parent: 'parent' });
      const elapsed = performance.now() - started;
      if (index >= WARMUP) durations.push(elapsed);
    }
    const summary = summarize(durations);
    return {
      bench: 'spawn',
      ...summary,
      target_p50_ms: 0.5,
      reference_ms: REFERENCE_MS,
      speedup_vs_reference: Math.round((REFERENCE_MS / summary.p50_ms) * 10) / 10,
      includes: 'TOML parse + validation, inheritance check, SQLite commit (WAL, synchronous=normal), registration, event',
    };
  } finally {
    await bench.dispose();
  }
}
