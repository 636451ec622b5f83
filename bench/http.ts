import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { daemonEntry } from '../src/config/daemon-build.ts';
import { INSTALL_DIR } from '../src/config/installation.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { startScriptedModelServer } from '../src/models/scripted-model-server.ts';
import { openBenchKernel } from './bench-kernel.ts';
import type { ServeReport } from './http-serve.ts';
import { median, percentile, round, summarize } from './stats.ts';

const CHATS = 1000;
/** Rounds of `CHATS` against each server, alternating. */
const ROUNDS = 3;
const CONCURRENCY = 50;
/** Chats served before the measured ones: a running daemon has compiled its hot paths and filled its caches. */
const WARM_UP_CHATS = 500;
const bin = join(import.meta.dirname, '../bin/loom.js');

/** Runs `bench/http-load.ts` in its own process against `url` and returns what it saw. */
async function runLoadGenerator(
  url: string,
  chats: number,
  concurrency: number,
): Promise<{ durations: number[]; errors: number; elapsedMs: number; cpuMs: number }> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'http-load.ts'), url, String(chats), String(concurrency)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`the load generator exited with ${code}`);
  return JSON.parse(output) as { durations: number[]; errors: number; elapsedMs: number; cpuMs: number };
}

/** A server of `bench/http-serve.ts` in its own process. */
interface ServeProcess {
  url: string;
  /** Starts counting the server's CPU time and event-loop delay. */
  measure(): Promise<void>;
  /** What the server counted since `measure`. */
  report(): Promise<ServeReport>;
  /** `chat-0`'s first model requests: their settings and messages (see `noteRequest` in bench/http-serve.ts). */
  requests(): Promise<string[][]>;
  stop(): Promise<void>;
}

async function startServeProcess(kind: 'loom' | 'bare'): Promise<ServeProcess> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'http-serve.ts'), kind, String(CONCURRENCY)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async <T>(): Promise<T> => {
    const line = await lines.next();
    if (line.done === true) throw new Error(`the ${kind} server exited`);
    return JSON.parse(line.value) as T;
  };
  child.stdin.on('error', () => undefined); // the server's exit is seen on its output
  const { url } = await next<{ url: string }>().catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  return {
    url,
    measure: async () => {
      child.stdin.write('measure\n');
      await next<{ measuring: true }>();
    },
    report: () => {
      child.stdin.write('report\n');
      return next<ServeReport>();
    },
    requests: () => {
      child.stdin.write('requests\n');
      return next<string[][]>();
    },
    stop: async () => {
      child.stdin.end('exit\n');
      // Bounded: a server that does not close in time is killed.
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** What a round of the benchmark's chats gave against one server, and what the server counted while it served them. */
interface Round {
  load: { durations: number[]; errors: number; elapsedMs: number; cpuMs: number };
  served: ServeReport;
}

/** One round of the benchmark's chats against `server`. */
async function measureRound(server: ServeProcess): Promise<Round> {
  await server.measure();
  const load = await runLoadGenerator(server.url, CHATS, CONCURRENCY);
  return { load, served: await server.report() };
}

/** A round's rate, in chats per second. */
const rateOf = (round: Round): number => (CHATS / round.load.elapsedMs) * 1000;

/**
 * 1,000 chats over HTTP with SSE, 50 at a time, each on its own agent, against an in-process
 * model, and the same against a bare server (the floor), in `ROUNDS` alternating rounds after a
 * round that warms each. Each server runs in a process of its own and the load comes from a third,
 * so each figure is the server's; each server's event-loop delay is sampled while it serves. The
 * machine's speed drifts between runs (a VM's neighbours): alternating rounds let the two servers
 * share it, and the figures are the rounds' medians.
 */
export async function httpTurnBench(): Promise<Record<string, unknown>> {
  const loom = await startServeProcess('loom');
  try {
    const bareServer = await startServeProcess('bare');
    try {
      // A first round warms each server (compiled code, caches) as a running daemon is.
      await runLoadGenerator(loom.url, WARM_UP_CHATS, CONCURRENCY);
      await runLoadGenerator(bareServer.url, WARM_UP_CHATS, CONCURRENCY);
      // The floor asks the model what Loom asks it, or its figures say nothing of Loom's share.
      const [asked, askedBare] = await Promise.all([loom.requests(), bareServer.requests()]);
      if (asked.length === 0 || JSON.stringify(asked) !== JSON.stringify(askedBare)) {
        throw new Error(`the bare server does not ask the model what Loom asks it: Loom ${JSON.stringify(asked)}, bare ${JSON.stringify(askedBare)}`);
      }
      const rounds: Round[] = [];
      const bareRounds: Round[] = [];
      for (let index = 0; index < ROUNDS; index += 1) {
        rounds.push(await measureRound(loom));
        bareRounds.push(await measureRound(bareServer));
      }
      return httpTurnReport(rounds, bareRounds);
    } finally {
      await bareServer.stop();
    }
  } finally {
    await loom.stop();
  }
}

function httpTurnReport(rounds: readonly Round[], bareRounds: readonly Round[]): Record<string, unknown> {
  const bareErrors = bareRounds.reduce((sum, round) => sum + round.load.errors, 0);
  if (bareErrors > 0) throw new Error(`the bare server answered ${bareErrors} chats wrongly`);
  // Per round, then the median round: pooled, the rounds' different speeds would read as a tail.
  const summaries = rounds.map((each) => summarize(each.load.durations));
  const bareSummaries = bareRounds.map((each) => summarize(each.load.durations));
  const cpuPerChat = median(rounds.map((round) => round.served.cpu_ms / CHATS));
  const bareCpuPerChat = median(bareRounds.map((round) => round.served.cpu_ms / CHATS));
  return {
    bench: 'http-turn',
    p50_ms: median(summaries.map((each) => each.p50_ms)),
    p99_ms: median(summaries.map((each) => each.p99_ms)),
    p99_over_p50: round(median(summaries.map((each) => each.p99_ms / each.p50_ms))),
    rounds_p99_over_p50: summaries.map((each) => round(each.p99_ms / each.p50_ms)),
    ops_per_s: round(median(rounds.map(rateOf))),
    rounds_ops_per_s: rounds.map((each) => round(rateOf(each))),
    chats: CHATS,
    rounds: ROUNDS,
    concurrency: CONCURRENCY,
    errors: rounds.reduce((sum, each) => sum + each.load.errors, 0),
    // The daemon's own CPU (user and system) per chat: what bounds its rate on one core, whatever the load generator takes.
    daemon_cpu_ms_per_chat: round(cpuPerChat),
    event_loop_delay_p50_ms: round(median(rounds.map((each) => each.served.loop_p50_ms))),
    event_loop_delay_p99_ms: round(median(rounds.map((each) => each.served.loop_p99_ms))),
    event_loop_delay_max_ms: round(Math.max(...rounds.map((each) => each.served.loop_max_ms))),
    bare_server_ops_per_s: round(median(bareRounds.map(rateOf))),
    bare_server_rounds_ops_per_s: bareRounds.map((each) => round(rateOf(each))),
    // Per pair of rounds, Loom's rate over the bare server's: the share of the floor's rate Loom keeps.
    ops_per_s_over_bare: round(median(rounds.map((each, index) => rateOf(each) / rateOf(bareRounds[index] ?? each)))),
    // The same closed loop against the floor: how long a tail the load's shape gives by itself.
    bare_server_p99_over_p50: round(median(bareSummaries.map((each) => each.p99_ms / each.p50_ms))),
    bare_server_cpu_ms_per_chat: round(bareCpuPerChat),
    // Issue 42: the daemon's CPU per chat over the bare server's, the medians' ratio.
    daemon_cpu_per_chat_over_bare: round(cpuPerChat / bareCpuPerChat),
    loom_cpu_share_ms_per_chat: round(cpuPerChat - bareCpuPerChat),
    // The load generator shares the machine's cores with the server it loads.
    load_generator_cpu_ms_per_chat: round(median(rounds.map((each) => each.load.cpuMs / CHATS))),
    targets: { p99_over_p50: 4, ops_per_s: 800, ops_per_s_over_bare: 0.75, daemon_cpu_per_chat_over_bare: 1.5, errors: 0 },
    processes: 'the daemon, the bare server and the load generator each in a process of its own',
    bare_server:
      "the same chats against Hono, its SSE helper and the AI SDK's streamText on the same model, asking it what Loom asks it (each agent's conversation, kept in memory, after the same system prompt, with the same settings; checked on chat-0's first requests): no agent, no checks, nothing stored",
  };
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
const fromSources = (): Record<string, string> =>
  process.env['LOOM_FROM_SOURCES'] === undefined ? {} : { LOOM_FROM_SOURCES: process.env['LOOM_FROM_SOURCES'] };

/** Starts `loom start --foreground` on a fresh home and waits (bounded) until /api/health answers. */
export async function startDaemonProcess(home: string): Promise<{ pid: number; url: string; startedMs: number; stop(): Promise<void> }> {
  const started = performance.now();
  const child = spawn(process.execPath, [bin, 'start', '--foreground', '--port', '0'], {
    env: { PATH: process.env['PATH'] ?? '', HOME: home, LOOM_HOME: home, ...fromSources() },
    stdio: 'ignore',
  });
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

/**
 * The two floors under a daemon's start and idle memory, each a process of the same binary that
 * listens on loopback, writes its address to `file` once it listens, and answers `GET /`: `node`,
 * a bare `node:http` server; `hono`, the same on the HTTP library the daemon serves with (Hono on
 * `@hono/node-server`, which loads Node's fetch implementation for its Request and Response), with
 * Node's compile cache on as `bin/loom.js` turns it on.
 */
type Floor = 'node' | 'hono';

function floorScript(floor: Floor, file: string): string[] {
  const written = `(port) => require('node:fs').writeFileSync(${JSON.stringify(file)}, JSON.stringify({ url: 'http://127.0.0.1:' + port }))`;
  if (floor === 'node')
    return ['-e', `const s = require('node:http').createServer((q, r) => r.end('ok')).listen(0, '127.0.0.1', () => (${written})(s.address().port));`];
  const hono = [
    "const { createRequire, enableCompileCache } = await import('node:module');",
    'enableCompileCache();',
    'const require = createRequire(import.meta.url);',
    "const [{ Hono }, { serve }] = await Promise.all([import('hono'), import('@hono/node-server')]);",
    "const app = new Hono().get('/', (c) => c.json({ status: 'ok' }));",
    `serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => (${written})(info.port));`,
  ];
  return ['--input-type=module', '-e', hono.join('\n')];
}

/**
 * A floor's start, found as a daemon's is: from spawning the same binary to the server answering,
 * its address read from a file it writes once it listens, polled as often.
 */
async function startFloorServer(floor: Floor, home: string): Promise<{ pid: number; startedMs: number; stop(): Promise<void> }> {
  const file = join(home, `${floor}.json`);
  const started = performance.now();
  // The environment the daemon gets (see startDaemonProcess): nothing inherited that could load more.
  // From the installation, where the daemon's libraries are found.
  const child = spawn(process.execPath, floorScript(floor, file), { env: { PATH: process.env['PATH'] ?? '', HOME: home }, stdio: 'ignore', cwd: INSTALL_DIR });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  for (let attempt = 0; attempt < 2_000; attempt += 1) {
    try {
      const info = JSON.parse(await readFile(file, 'utf8')) as { url: string };
      if ((await fetch(`${info.url}/`)).ok) {
        const startedMs = performance.now() - started;
        return { pid: child.pid ?? 0, startedMs, stop: async () => (child.kill('SIGTERM'), await exited) };
      }
    } catch {
      // not up yet
    }
    await delay(5);
  }
  child.kill('SIGKILL');
  throw new Error(`the bare ${floor} server did not answer`);
}

/**
 * Process start to /api/health answering, over 5 starts, beside the two floors' starts measured
 * the same way in the same run (they alternate, so load on the machine falls on all three).
 */
export async function coldStartBench(): Promise<Record<string, unknown>> {
  const times: number[] = [];
  const floors: Record<Floor, number[]> = { node: [], hono: [] };
  for (let run = 0; run < 5; run += 1) {
    const home = await mkdtemp(join(tmpdir(), 'loom-bench-cold-'));
    try {
      const daemon = await startDaemonProcess(home);
      times.push(daemon.startedMs);
      await daemon.stop();
      for (const floor of ['node', 'hono'] as const) {
        const server = await startFloorServer(floor, home);
        floors[floor].push(server.startedMs);
        await server.stop();
      }
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }
  const sorted = [...times].sort((a, b) => a - b);
  const p50 = percentile(sorted, 0.5);
  const bareP50 = median(floors.node);
  const honoP50 = median(floors.hono);
  // The first start after an install also fills Node's compile cache: it is the max, the others hit the cache.
  return {
    bench: 'cold-start',
    p50_ms: round(p50),
    max_ms: round(sorted.at(-1) ?? 0),
    first_ms: round(times[0] ?? 0),
    runs: times.length,
    target_ms: 200,
    bare_node_start_p50_ms: round(bareP50),
    ratio_vs_bare_node: round(p50 / bareP50),
    target_ratio_vs_bare_node: 2,
    // What the HTTP library alone takes of that budget: a Hono server on @hono/node-server.
    bare_hono_start_p50_ms: round(honoP50),
    bare_hono_ratio_vs_bare_node: round(honoP50 / bareP50),
    ratio_vs_bare_hono: round(p50 / honoP50),
    code: daemonCode(),
  };
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
      await seed.kernel.spawn(
        parseManifest(`name = "chat-${index}"\n[model]\nprovider = "openai-compatible"\nmodel = "scripted"\nbase_url = "${model.url}"\n`, {
          source: 'bench.toml',
        }).manifest,
      );
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
      const bare = await measureFloorRss('node');
      const hono = await measureFloorRss('hono');
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
        // Issue 42: what Loom holds above a bare Node server, with 100 idle agents.
        target_own_mb: 20,
        // What the HTTP library alone holds of that: a Hono server on @hono/node-server, having answered a fetch.
        bare_hono_rss_mb: hono,
        bare_hono_above_bare_node_mb: round(hono - bare),
        loom_above_bare_hono_mb: round(idle.rss / 1024 - hono),
        rss_after_chats_mb: round(underLoad.rss / 1024),
        rss_idle_after_chats_mb: round(idleAfterLoad.rss / 1024),
        private_idle_after_chats_mb: round(idleAfterLoad.private / 1024),
        chats: CHATS_BEFORE_IDLE,
        chat_errors: load.errors,
        idle_after_chats_ms: IDLE_AFTER_LOAD_MS,
        compile_cache: 'warm',
        code: daemonCode(),
        bare_node: 'a Node process with an HTTP server that has answered a fetch, nothing else',
        bare_hono: 'the same served by Hono on @hono/node-server, with the compile cache on',
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
 * A floor under an idle daemon: the resident memory in MB of a floor server (see
 * `startFloorServer`) that has answered one request made with `fetch`, as a daemon has.
 */
async function measureFloorRss(floor: Floor): Promise<number> {
  const home = await mkdtemp(join(tmpdir(), 'loom-bench-floor-'));
  try {
    const server = await startFloorServer(floor, home);
    try {
      return round((await residentMemory(server.pid)).rss / 1024);
    } finally {
      await server.stop();
    }
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}
