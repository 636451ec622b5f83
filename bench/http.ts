import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { createSystemClock } from '../src/clock/index.ts';
import { ConfigSchema } from '../src/config/index.ts';
import { createHttpApp, startHttpServer } from '../src/http/index.ts';
import { createSilentLogger } from '../src/logging/index.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { openBenchKernel, openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { percentile, round, summarize } from './stats.ts';

const CHATS = 1000;
const CONCURRENCY = 50;
const bin = join(import.meta.dirname, '../bin/loom.js');

/** 1,000 chats over HTTP with SSE, 50 at a time, each on its own agent, against an in-process model. */
export async function httpTurnBench(): Promise<Record<string, unknown>> {
  const model = createInstantModel();
  const bench = await openInstantBenchKernel(model);
  const config = ConfigSchema.parse({ rate_limit: { per_minute: 10_000_000 } });
  const server = await startHttpServer(createHttpApp({ kernel: bench.kernel, config, env: {}, clock: createSystemClock(), logger: createSilentLogger() }), { host: '127.0.0.1', port: 0 });
  try {
    for (let index = 0; index < CONCURRENCY; index += 1) {
      await bench.kernel.spawn(parseManifest(`name = "chat-${index}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n`, { source: 'bench.toml' }).manifest);
    }
    const durations: number[] = [];
    let errors = 0;
    let next = 0;
    const worker = async (slot: number): Promise<void> => {
      while (next < CHATS) {
        next += 1;
        const started = performance.now();
        try {
          const response = await fetch(`${server.url}/api/agents/chat-${slot}/messages`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
            body: JSON.stringify({ message: 'hello' }),
          });
          const body = await response.text();
          if (!response.ok || !body.includes('event: run-finish')) errors += 1;
        } catch {
          errors += 1;
        }
        durations.push(performance.now() - started);
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, (_, slot) => worker(slot)));
    const elapsed = performance.now() - started;
    const summary = summarize(durations);
    return { bench: 'http-turn', p50_ms: summary.p50_ms, p99_ms: summary.p99_ms, ops_per_s: round((CHATS / elapsed) * 1000), chats: CHATS, concurrency: CONCURRENCY, errors };
  } finally {
    await server.close();
    await bench.dispose();
  }
}

/** Starts `loom start --foreground` on a fresh home and waits (bounded) until /api/health answers. */
export async function startDaemonProcess(home: string): Promise<{ pid: number; url: string; startedMs: number; stop(): Promise<void> }> {
  const started = performance.now();
  const child = spawn(process.execPath, [bin, 'start', '--foreground', '--port', '0'], { env: { PATH: process.env['PATH'] ?? '', HOME: home, LOOM_HOME: home }, stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  for (let attempt = 0; attempt < 2_000; attempt += 1) {
    try {
      const info = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')) as { url: string };
      const response = await fetch(`${info.url}/api/health`);
      if (response.ok) {
        return {
          pid: child.pid ?? 0,
          url: info.url,
          startedMs: performance.now() - started,
          stop: async () => {
            child.kill('SIGTERM');
            await exited;
          },
        };
      }
    } catch {
      // not up yet
    }
    await delay(5);
  }
  child.kill('SIGKILL');
  throw new Error('the daemon did not answer');
}

/** Process start to /api/health answering, over 5 starts. */
export async function coldStartBench(): Promise<Record<string, unknown>> {
  const times: number[] = [];
  for (let run = 0; run < 5; run += 1) {
    const home = await mkdtemp(join(tmpdir(), 'loom-bench-cold-'));
    try {
      const daemon = await startDaemonProcess(home);
      times.push(daemon.startedMs);
      await daemon.stop();
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }
  const sorted = [...times].sort((a, b) => a - b);
  // The first start after an install also fills Node's compile cache: it is the max, the others hit the cache.
  return { bench: 'cold-start', p50_ms: round(percentile(sorted, 0.5)), max_ms: round(sorted.at(-1) ?? 0), first_ms: round(times[0] ?? 0), runs: times.length, target_ms: 500 };
}

/** Resident memory of an idle daemon holding 100 agents. */
export async function idleRssBench(): Promise<Record<string, unknown>> {
  const home = await mkdtemp(join(tmpdir(), 'loom-bench-idle-'));
  try {
    const seed = await openBenchKernel(join(home, 'data', 'loom.db'));
    for (let index = 0; index < 100; index += 1) {
      await seed.kernel.spawn(parseManifest(`name = "idle-${index}"\n[model]\nprovider = "ollama"\nmodel = "llama3.2"\n`, { source: 'bench.toml' }).manifest);
    }
    await seed.dispose();
    // One start first, so Node's compile cache is warm, as for every start but the first after an install.
    await (await startDaemonProcess(home)).stop();
    const daemon = await startDaemonProcess(home);
    try {
      const agents = ((await (await fetch(`${daemon.url}/api/health`)).json()) as { agents: number }).agents;
      const status = await readFile(`/proc/${daemon.pid}/status`, 'utf8');
      const kilobytes = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 'NaN');
      return { bench: 'idle-rss', rss_mb: round(kilobytes / 1024), agents, target_mb: 100, compile_cache: 'warm' };
    } finally {
      await daemon.stop();
    }
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}
