import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { median, percentile, round } from './stats.ts';

const RUNS = 7;

/** Runs bench/resume-child.ts on `databasePath` and kills it (SIGKILL) once its turn waits for its second model call. */
async function killMidTurn(databasePath: string): Promise<void> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'resume-child.ts'), databasePath], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('waiting')) resolve();
    });
    void exited.then(() => reject(new Error('the child exited before its turn waited')));
  });
  child.kill('SIGKILL');
  await exited;
}

/**
 * `resume`: a daemon killed (SIGKILL) in a turn, after a tool call's result, is started again on
 * its database: from the start of the kernel's opening to the resumed turn's first new step (its
 * next model call, the tool call not run again).
 */
export async function resumeBench(): Promise<Record<string, unknown>> {
  const durations: number[] = [];
  for (let run = 0; run < RUNS; run += 1) {
    const dir = await mkdtemp(join(tmpdir(), 'loom-bench-resume-'));
    try {
      const databasePath = join(dir, 'loom.db');
      await killMidTurn(databasePath);
      let resumed!: () => void;
      const firstStep = new Promise<void>((resolve) => (resumed = resolve));
      let stepAt = 0;
      const model = createInstantModel({
        toolName: 'agent_list',
        onCall: () => {
          stepAt ||= performance.now();
          resumed();
        },
      });
      const started = performance.now();
      const bench = await openInstantBenchKernel(model, databasePath, { resume: true });
      await firstStep;
      durations.push(stepAt - started);
      await bench.dispose();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
  const sorted = [...durations].sort((a, b) => a - b);
  return { bench: 'resume', runs: RUNS, p50_ms: round(median(durations)), max_ms: round(percentile(sorted, 1)) };
}
