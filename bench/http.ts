import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { streamText } from 'ai';
import { createSystemClock } from '../src/clock/index.ts';
import { ConfigSchema } from '../src/config/index.ts';
import { daemonEntry } from '../src/config/daemon-build.ts';
import { INSTALL_DIR } from '../src/config/installation.ts';
import { createHttpApp, startHttpServer } from '../src/http/index.ts';
import { createSilentLogger } from '../src/logging/index.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { startScriptedModelServer } from '../src/models/scripted-model-server.ts';
import { openBenchKernel, openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { percentile, round, summarize } from './stats.ts';

const CHATS = 1000;
const CONCURRENCY = 50;
const bin = join(import.meta.dirname, '../bin/loom.js');

/** Runs `bench/http-load.ts` in its own process against `url` and returns what it saw. */
async function runLoadGenerator(url: string, chats: number, concurrency: number): Promise<{ durations: number[]; errors: number; elapsedMs: number }> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'http-load.ts'), url, String(chats), String(concurrency)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`the load generator exited with ${code}`);
  return JSON.parse(output) as { durations: number[]; errors: number; elapsedMs: number };
}

/**
 * 1,000 chats over HTTP with SSE, 50 at a time, each on its own agent, against an in-process
 * model. The load comes from another process, so the figures are the daemon's; the daemon's
 * event-loop delay is sampled while it serves them.
 */
export async function httpTurnBench(): Promise<Record<string, unknown>> {
  const model = createInstantModel();
  const bench = await openInstantBenchKernel(model);
  const config = ConfigSchema.parse({ rate_limit: { per_minute: 10_000_000 } });
  const server = await startHttpServer(createHttpApp({ kernel: bench.kernel, config, env: {}, clock: createSystemClock(), logger: createSilentLogger() }), { host: '127.0.0.1', port: 0 });
  try {
    for (let index = 0; index < CONCURRENCY; index += 1) {
      await bench.kernel.spawn(parseManifest(`name = "chat-${index}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n`, { source: 'bench.toml' }).manifest);
    }
    // A first round warms the daemon (compiled code, caches) as a running daemon is.
    await runLoadGenerator(server.url, CONCURRENCY * 2, CONCURRENCY);
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    const cpuBefore = process.cpuUsage();
    const load = await runLoadGenerator(server.url, CHATS, CONCURRENCY);
    const cpu = process.cpuUsage(cpuBefore);
    loop.disable();
    const summary = summarize(load.durations);
    // Then the floor: the same chats against a server with nothing of Loom in it.
    const bare = await measureBareServer();
    return {
      bench: 'http-turn',
      p50_ms: summary.p50_ms,
      p99_ms: summary.p99_ms,
      p99_over_p50: round(summary.p99_ms / summary.p50_ms),
      ops_per_s: round((CHATS / load.elapsedMs) * 1000),
      chats: CHATS,
      concurrency: CONCURRENCY,
      errors: load.errors,
      // The daemon's own CPU (user and system) per chat: what bounds its rate on one core, whatever the load generator takes.
      daemon_cpu_ms_per_chat: round((cpu.user + cpu.system) / 1000 / CHATS),
      event_loop_delay_p50_ms: round(loop.percentile(50) / 1e6),
      event_loop_delay_p99_ms: round(loop.percentile(99) / 1e6),
      event_loop_delay_max_ms: round(loop.max / 1e6),
      bare_server_ops_per_s: bare.opsPerSecond,
      bare_server_cpu_ms_per_chat: bare.cpuMsPerChat,
      loom_cpu_share_ms_per_chat: round((cpu.user + cpu.system) / 1000 / CHATS - bare.cpuMsPerChat),
      targets: { p99_over_p50: 4, ops_per_s: 800, errors: 0 },
      load_generator: 'its own process',
      bare_server: 'the same chats against Hono, its SSE helper and the AI SDK\'s streamText on the same model, in this process: no agent, no checks, nothing stored',
    };
  } finally {
    await server.close();
    await bench.dispose();
  }
}

/**
 * The floor under a streamed chat: a server with the same libraries and nothing of Loom (Hono's
 * SSE helper, the AI SDK's `streamText` on the instant model, the same event names), answering
 * the same load generator. Its rate is what the libraries and the machine allow.
 */
async function measureBareServer(): Promise<{ opsPerSecond: number; cpuMsPerChat: number }> {
  const model = createInstantModel();
  const app = new Hono();
  app.post('/api/agents/:agent/messages', async (c) => {
    const { message } = await c.req.json<{ message: string }>();
    return streamSSE(c, async (stream) => {
      await stream.writeSSE({ event: 'run-start', data: JSON.stringify({ type: 'run-start', agentName: c.req.param('agent') }) });
      const result = streamText({ model, messages: [{ role: 'user', content: message }], maxRetries: 0 });
      for await (const part of result.fullStream) {
        if (part.type === 'text-delta') await stream.writeSSE({ event: 'text-delta', data: JSON.stringify({ type: 'text-delta', text: part.text }) });
      }
      await stream.writeSSE({ event: 'run-finish', data: JSON.stringify({ type: 'run-finish', result: { text: await result.text } }) });
    });
  });
  const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  try {
    await runLoadGenerator(server.url, CONCURRENCY * 2, CONCURRENCY);
    const cpuBefore = process.cpuUsage();
    const load = await runLoadGenerator(server.url, CHATS, CONCURRENCY);
    const cpu = process.cpuUsage(cpuBefore);
    if (load.errors > 0) throw new Error(`the bare server answered ${load.errors} chats wrongly`);
    return { opsPerSecond: round((CHATS / load.elapsedMs) * 1000), cpuMsPerChat: round((cpu.user + cpu.system) / 1000 / CHATS) };
  } finally {
    await server.close();
  }
}

/**
 * What `bin/loom.js` runs, and so what the daemon figures measure: `built` (dist/daemon/, as after
 * `npm install`) or `sources (why)`, e.g. after an edit without `npm run build`.
 */
function daemonCode(): string {
  const entry = daemonEntry(INSTALL_DIR, process.env);
  return entry.built ? 'built' : `sources (${entry.why ?? ''})`;
}

/** `LOOM_FROM_SOURCES` as the bench was given it, so that `LOOM_FROM_SOURCES=1 npm run bench` measures the sources. */
const fromSources = (): Record<string, string> => (process.env['LOOM_FROM_SOURCES'] === undefined ? {} : { LOOM_FROM_SOURCES: process.env['LOOM_FROM_SOURCES'] });

/** Starts `loom start --foreground` on a fresh home and waits (bounded) until /api/health answers. */
export async function startDaemonProcess(home: string): Promise<{ pid: number; url: string; startedMs: number; stop(): Promise<void> }> {
  const started = performance.now();
  const child = spawn(process.execPath, [bin, 'start', '--foreground', '--port', '0'], { env: { PATH: process.env['PATH'] ?? '', HOME: home, LOOM_HOME: home, ...fromSources() }, stdio: 'ignore' });
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
  return { bench: 'cold-start', p50_ms: round(percentile(sorted, 0.5)), max_ms: round(sorted.at(-1) ?? 0), first_ms: round(times[0] ?? 0), runs: times.length, target_ms: 200, code: daemonCode() };
}

/** How long the daemon is left alone before its resident memory is read as idle. */
const IDLE_AFTER_MS = 3_000;
/** Chats a daemon serves before its memory is read idle again, and how many at a time. */
const CHATS_BEFORE_IDLE = 800;
const CONCURRENCY_BEFORE_IDLE = 20;
/** How long the daemon is left alone after its chats before its resident memory is read again. */
const IDLE_AFTER_LOAD_MS = 12_000;

/**
 * Resident memory of an idle daemon holding 100 agents: just started, and idle again after it
 * served chats (through a scripted model server on loopback, so the provider's client runs).
 */
export async function idleRssBench(): Promise<Record<string, unknown>> {
  const home = await mkdtemp(join(tmpdir(), 'loom-bench-idle-'));
  const model = await startScriptedModelServer({ steps: [{ text: 'Hello there, this is the reply.' }], loop: true, recordRequests: false });
  try {
    const seed = await openBenchKernel(join(home, 'data', 'loom.db'));
    // Named as the load generator names its slots' agents.
    for (let index = 0; index < 100; index += 1) {
      await seed.kernel.spawn(parseManifest(`name = "chat-${index}"\n[model]\nprovider = "openai-compatible"\nmodel = "scripted"\nbase_url = "${model.url}"\n`, { source: 'bench.toml' }).manifest);
    }
    await seed.dispose();
    // One start first, so Node's compile cache is warm, as for every start but the first after an install.
    await (await startDaemonProcess(home)).stop();
    const daemon = await startDaemonProcess(home);
    try {
      const agents = ((await (await fetch(`${daemon.url}/api/health`)).json()) as { agents: number }).agents;
      const atStart = await residentMemory(daemon.pid);
      // Idle: nothing asked of it for a few seconds, after which a daemon has given back what its start grew.
      await delay(IDLE_AFTER_MS);
      const idle = await residentMemory(daemon.pid);
      const load = await runLoadGenerator(daemon.url, CHATS_BEFORE_IDLE, CONCURRENCY_BEFORE_IDLE);
      const underLoad = await residentMemory(daemon.pid);
      // V8's memory reducer collects ~8 s after the load's last full collection.
      await delay(IDLE_AFTER_LOAD_MS);
      const idleAfterLoad = await residentMemory(daemon.pid);
      const bare = await measureBareNodeRss();
      return {
        bench: 'idle-rss',
        rss_mb: round(idle.rss / 1024),
        // Beside the resident total, what is the daemon's own: the rest is the Node binary and shared libraries, mapped from disk.
        private_mb: round(idle.private / 1024),
        rss_at_start_mb: round(atStart.rss / 1024),
        idle_after_ms: IDLE_AFTER_MS,
        agents,
        bare_node_rss_mb: bare,
        loom_own_mb: round(idle.rss / 1024 - bare),
        target_mb: 75,
        rss_after_chats_mb: round(underLoad.rss / 1024),
        rss_idle_after_chats_mb: round(idleAfterLoad.rss / 1024),
        private_idle_after_chats_mb: round(idleAfterLoad.private / 1024),
        chats: CHATS_BEFORE_IDLE,
        chat_errors: load.errors,
        idle_after_chats_ms: IDLE_AFTER_LOAD_MS,
        compile_cache: 'warm',
        code: daemonCode(),
        bare_node: 'a Node process with an HTTP server that has answered a fetch, nothing else',
      };
    } finally {
      await daemon.stop();
    }
  } finally {
    await model.close();
    await rm(home, { recursive: true, force: true });
  }
}

/** Resident memory of a process in KB: the total, and its private (anonymous) part. */
async function residentMemory(pid: number): Promise<{ rss: number; private: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return { rss: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 'NaN'), private: Number(/RssAnon:\s+(\d+)/.exec(status)?.[1] ?? 'NaN') };
}

/**
 * The floor under an idle daemon: the resident memory of a Node process (the same binary) that
 * serves HTTP on loopback and has answered one request made with `fetch`, as a daemon has.
 */
async function measureBareNodeRss(): Promise<number> {
  const script = "const s = require('node:http').createServer((q, r) => r.end('ok')).listen(0, '127.0.0.1', () => console.log(s.address().port));";
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<string>((resolve) => child.stdout.setEncoding('utf8').once('data', (chunk: string) => resolve(chunk.trim())));
    await (await fetch(`http://127.0.0.1:${port}/`)).text();
    return round((await residentMemory(child.pid ?? 0)).rss / 1024);
  } finally {
    child.kill();
  }
}
