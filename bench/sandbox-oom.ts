import { readdir, readFile } from 'node:fs/promises';
import { parseManifest } from '../src/manifest/index.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { round } from './stats.ts';

const ATTEMPTS = 50;
const MEMORY_MB = 128;

/**
 * Out-of-memory tools, half of each kind: a growing Map (V8's own out-of-memory, which
 * isolated-vm can never release: it costs the sandbox process) and growing arrays (isolated-vm's
 * limit: the isolate is disposed).
 */
const BOMBS = [
  'function execute() { const m = new Map(); for (let i = 0; ; i++) m.set(i, { i }); }',
  'function execute() { const a = []; for (;;) a.push(new Array(1e6).fill(1)); }',
];

/** A field of /proc/<pid>/status in kB or as a count; undefined once the process is gone. */
async function statusField(pid: number | 'self', field: 'VmRSS' | 'Threads'): Promise<number | undefined> {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(await readFile(`/proc/${pid}/status`, 'utf8'));
    return match?.[1] === undefined ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

/** The processes this one started that still run (its sandbox process). */
async function children(): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // A killed process not yet reaped holds nothing.
      if (Number(parent) === process.pid && state !== 'Z') pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

interface Sample {
  attempts: number;
  daemon_rss_mb: number;
  daemon_heap_used_mb: number;
  daemon_threads: number;
  sandbox_processes: number;
  sandbox_rss_mb: number;
  sandbox_threads: number;
}

async function sample(attempts: number): Promise<Sample> {
  const sandboxes = await children();
  let rss = 0;
  let threads = 0;
  for (const pid of sandboxes) {
    rss += (await statusField(pid, 'VmRSS')) ?? 0;
    threads += (await statusField(pid, 'Threads')) ?? 0;
  }
  return {
    attempts,
    daemon_rss_mb: round(process.memoryUsage().rss / 1024 / 1024),
    daemon_heap_used_mb: round(process.memoryUsage().heapUsed / 1024 / 1024),
    daemon_threads: (await statusField('self', 'Threads')) ?? 0,
    sandbox_processes: sandboxes.length,
    sandbox_rss_mb: round(rss / 1024),
    sandbox_threads: threads,
  };
}

/**
 * Forge attempts whose test runs a tool out of its 128 MB (spec/02's default) through the real
 * forge path, each refused at its test: the daemon's RSS and threads (process.memoryUsage().rss,
 * /proc/self/status) and its sandbox processes' (/proc/<pid>/status) after the first, the 10th and
 * the 50th. The daemon holds no isolate, so it does not grow; a sandbox process that V8 lost an
 * isolate in is replaced and killed.
 */
export async function sandboxOomBench(): Promise<Record<string, unknown>> {
  const model = createInstantModel({ json: () => ({ approved: true, confidence: 0.95, issues: [] }) });
  const bench = await openInstantBenchKernel(model);
  try {
    const manifest = parseManifest(
      `name = "bomber"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n[capabilities]\ntools = ["forge_tool"]\n[emergent]\njudge_model = "openai/gpt-4o"\nsandbox_memory_mb = ${MEMORY_MB}\nsandbox_timeout_ms = 20000\nmax_forge_attempts_per_hour = 1000\n`,
      { source: 'bench.toml' },
    ).manifest;
    await bench.kernel.spawn(manifest);
    const samples: Sample[] = [await sample(0)];
    const kinds = { memory: 0, other: [] as string[] };
    const started = performance.now();
    for (let attempt = 1; attempt <= ATTEMPTS; attempt += 1) {
      const outcome = await bench.kernel.forgedTools.forge(
        'bomber',
        {
          name: `bomb_${attempt}`,
          description: 'Runs out of memory',
          inputSchema: { type: 'object' },
          implementation: { mode: 'sandbox', code: BOMBS[attempt % BOMBS.length], allowlist: [] },
          testCases: [{ input: {} }],
        },
        'bench',
      );
      if (!outcome.ok && outcome.stage === 'test' && outcome.reason.includes(`${MEMORY_MB} MB memory limit`)) kinds.memory += 1;
      else kinds.other.push(outcome.ok ? 'registered' : `${outcome.stage}: ${outcome.reason}`);
      if (attempt === 1 || attempt === 10 || attempt === ATTEMPTS) samples.push(await sample(attempt));
    }
    const elapsed = performance.now() - started;
    const [before, first, tenth, last] = samples as [Sample, Sample, Sample, Sample];
    return {
      bench: 'sandbox-oom',
      attempts: ATTEMPTS,
      sandbox_memory_mb: MEMORY_MB,
      refused_for_memory: kinds.memory,
      other_outcomes: kinds.other.slice(0, 3),
      mean_attempt_ms: round(elapsed / ATTEMPTS),
      samples: [before, first, tenth, last],
      daemon_rss_growth_mb_first_to_last: round(last.daemon_rss_mb - first.daemon_rss_mb),
      daemon_threads_growth_first_to_last: last.daemon_threads - first.daemon_threads,
      sandbox_rss_growth_mb_first_to_last: round(last.sandbox_rss_mb - first.sandbox_rss_mb),
      note: `each attempt's test runs a tool out of its ${MEMORY_MB} MB, half by a growing Map (V8's own out-of-memory: the sandbox process is replaced) and half by growing arrays (isolated-vm's limit: the isolate is disposed); samples after attempts 0, 1, 10 and ${ATTEMPTS}`,
    };
  } finally {
    await bench.dispose();
  }
}
