// `npm run bench -- cluster`: durable turns per second on SQLite, on PostgreSQL with one node and
// with two nodes on one database, and the work queue's claim latency with one and two workers;
// `npm run bench -- postgres`: its part that sets one PostgreSQL node beside SQLite.
// Every node runs in a process of its own, as a daemon does: this file is also those processes
// (`node bench/cluster.ts turns …` drives one node's turns, `node bench/cluster.ts jobs …` is one
// node's job worker), so the bench stays one file. Everything listens on 127.0.0.1 only.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';
import { createSystemClock } from '../src/clock/index.ts';
import { createJobQueue, openPostgresJobWorker } from '../src/cluster/index.ts';
import type { Store } from '../src/contracts/index.ts';
import { createUuidGenerator, type Kernel } from '../src/kernel/index.ts';
import { createSilentLogger } from '../src/logging/index.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { createCostCatalog } from '../src/models/index.ts';
import { openPostgresStore, openSqliteStore } from '../src/store/index.ts';
import { BUILTIN_TOOLS } from '../src/tools/index.ts';
import { buildKernel } from '../test/support/test-kernel.ts';
import type { TestPostgres } from '../test/support/postgres-server.ts';
import { createInstantModel } from './instant-model.ts';
import { percentile, round, summarize } from './stats.ts';
import { procStat } from './proc.ts';

/** Turns each node runs before it is measured (compiled code, caches, pool connections). */
const TURN_WARMUP = 300;
/** Measured turns per configuration, split evenly over its nodes. */
const TURNS = 4000;
/** Turns in flight per node: more than a store pool's 10 connections, as on a busy daemon. */
const TURN_CONCURRENCY = 16;
/** Agents per node; each in-flight slot rotates over its own 3, so no turn waits on another's agent. */
const AGENTS_PER_NODE = 48;
/** Turns of the one-at-a-time runs (the latency of one turn, without queueing). */
const SEQUENTIAL_TURNS = 1000;
/** Jobs whose claim latency is measured, per worker count, enqueued at {@link JOB_RATE_PER_S}. */
const JOBS = 2000;
const JOB_WARMUP = 100;
/** A steady rate well under the queue's capacity, so the latency is a claim's, not a backlog's. */
const JOB_RATE_PER_S = 500;
/** Jobs enqueued at once (8 producers), to see how fast the workers drain a backlog. */
const BURST_JOBS = 2000;
const BURST_PRODUCERS = 8;
/** The longest any child may take to get ready or to answer, and any queue to drain. */
const STEP_TIMEOUT_MS = 60_000;
/** Clock ticks per second in /proc (USER_HZ): 100 on every mainstream Linux. */
const TICKS_PER_S = 100;
/** The environment variable that gives a child its store: a SQLite path or a postgres:// URL. */
const STORE_ENV = 'LOOM_BENCH_STORE';

const now = (): number => performance.timeOrigin + performance.now();
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

// ---- the nodes' side (child processes) ----

async function openStore(location: string): Promise<Store> {
  return location.startsWith('postgres://') ? openPostgresStore({ url: location }) : openSqliteStore({ path: location });
}

/**
 * A kernel on `store` whose agents all run on the instant model (no provider, no network). On
 * PostgreSQL it leases its turns, as a daemon on PostgreSQL does (src/host/open-host.ts): the
 * journal's leases, the hourly quota read from the shared usage log, the stream saved with a
 * journaled turn's steps.
 */
async function openKernel(store: Store, location: string): Promise<Kernel> {
  const model = createInstantModel();
  const kernel = buildKernel({
    ...(location.startsWith('postgres://')
      ? { node: { id: `bench-${process.pid}`, find: () => Promise.resolve(undefined), othersAlive: () => Promise.resolve(false), leasesTurns: true } }
      : {}),
    store,
    clock: createSystemClock(),
    ids: createUuidGenerator(),
    logger: createSilentLogger(),
    runtime: {
      resolver: { resolve: () => model },
      costs: createCostCatalog(),
      tools: BUILTIN_TOOLS,
      env: {},
      workspaceOf: (agent) => `/tmp/loom-bench-workspaces/${agent.name}`,
    },
  });
  await kernel.boot();
  return kernel;
}

/**
 * Counts the statements this process sends to PostgreSQL (each one round trip: `pg` does not
 * pipeline) and the session saves retried among them (a session saved by another node
 * meanwhile): a rolled-back transaction, or a turn's append done again behind the session's row
 * lock (its one-statement commit found the session at another revision and wrote nothing).
 */
async function countStatements(): Promise<{ statements: number; rollbacks: number }> {
  const { default: pgModule } = await import('pg');
  const counts = { statements: 0, rollbacks: 0 };
  const prototype = pgModule.Client.prototype as unknown as { query: (this: pg.Client, ...args: unknown[]) => unknown };
  const original = prototype.query;
  prototype.query = function (this: pg.Client, ...args: unknown[]): unknown {
    counts.statements += 1;
    if (args[0] === 'ROLLBACK' || (typeof args[0] === 'string' && args[0].endsWith('FOR UPDATE') && args[0].startsWith('SELECT revision FROM sessions')))
      counts.rollbacks += 1;
    return original.apply(this, args);
  };
  return counts;
}

/**
 * `count` turns, `concurrency` at a time: slot s rotates over agents s, s + concurrency, …
 * (starting `offset` steps in), so within a node no two turns share an agent.
 */
async function driveTurns(
  kernel: Kernel,
  names: readonly string[],
  count: number,
  concurrency: number,
  offset: number,
): Promise<{ durations: number[]; errors: number; firstError?: string }> {
  const durations: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let next = 0;
  const slot = async (index: number): Promise<void> => {
    for (let step = offset; next < count; step += 1) {
      next += 1;
      const name = names[(index + concurrency * step) % names.length] ?? '';
      const started = performance.now();
      try {
        await kernel.send(name, 'hello');
        durations.push(performance.now() - started);
      } catch (error) {
        errors += 1;
        firstError ??= messageOf(error);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, index) => slot(index)));
  return { durations, errors, ...(firstError === undefined ? {} : { firstError }) };
}

const tell = (message: Record<string, unknown>): Promise<void> =>
  new Promise((resolve) => process.stdout.write(`${JSON.stringify(message)}\n`, () => resolve()));

/** Resolves when the parent writes `word` on a line; throws when it closes stdin first (it stopped). */
async function heard(lines: AsyncIterator<string>, word: string): Promise<void> {
  for (;;) {
    const line = await lines.next();
    if (line.done === true) throw new Error(`the bench closed stdin before "${word}"`);
    if (line.value.trim() === word) return;
  }
}

/** `turns <prefix> <agents> <offset> <warmup> <turns> <concurrency>`: one node's turns, measured after "go". */
async function turnsNode(args: readonly string[], lines: AsyncIterator<string>): Promise<void> {
  const [prefix = '', agents, offset, warmup, turns, concurrency] = args.map((arg, index) => (index === 0 ? arg : Number(arg))) as [
    string,
    number,
    number,
    number,
    number,
    number,
  ];
  const location = process.env[STORE_ENV] ?? '';
  const counts = location.startsWith('postgres://') ? await countStatements() : undefined;
  const store = await openStore(location);
  try {
    const kernel = await openKernel(store, location);
    try {
      const names = Array.from({ length: agents }, (_, index) => `${prefix}-${index}`);
      const warm = await driveTurns(kernel, names, warmup, concurrency, offset);
      await tell({ ready: true, warmup_ok: warm.durations.length });
      await heard(lines, 'go');
      const before = { statements: counts?.statements ?? 0, rollbacks: counts?.rollbacks ?? 0, cpu: process.cpuUsage(), at: now() };
      const run = await driveTurns(kernel, names, turns, concurrency, offset);
      const finishedAt = now();
      const cpu = process.cpuUsage(before.cpu);
      await tell({
        started_at: before.at,
        finished_at: finishedAt,
        durations: run.durations,
        errors: run.errors + warmup - warm.durations.length,
        first_error: run.firstError ?? warm.firstError ?? null,
        cpu_ms: (cpu.user + cpu.system) / 1000,
        statements: (counts?.statements ?? 0) - before.statements,
        rollbacks: (counts?.rollbacks ?? 0) - before.rollbacks,
      });
    } finally {
      await kernel.shutdown();
    }
  } finally {
    await store.close();
  }
}

/** `jobs <node id>`: one node's job worker, recording each measured echo job's claim latency until "stop". */
async function jobsNode(args: readonly string[], lines: AsyncIterator<string>): Promise<void> {
  const url = process.env[STORE_ENV] ?? '';
  const worker = await openPostgresJobWorker({ url, target: 'the bench database', nodeId: args[0] ?? 'worker', logger: createSilentLogger() });
  const latencies: number[] = [];
  let jobs = 0;
  try {
    // The echo handler, replaced by one that notes when it started: enqueue to here is the claim latency.
    worker.handle('echo', (job) => {
      const enqueuedAt = job.payload['enqueued_at'];
      if (job.payload['measure'] === true && typeof enqueuedAt === 'number') latencies.push(now() - enqueuedAt);
      jobs += 1;
      return Promise.resolve();
    });
    await worker.start();
    const cpuBefore = process.cpuUsage();
    await tell({ ready: true });
    await heard(lines, 'stop');
    const cpu = process.cpuUsage(cpuBefore);
    await tell({ latencies, jobs, cpu_ms: (cpu.user + cpu.system) / 1000 });
  } finally {
    await worker.stop();
  }
}

// ---- the bench's side (the parent process) ----

/** A node's process: its messages (JSON lines on stdout) and what it is told (lines on stdin). */
interface NodeProcess {
  next(what: string): Promise<Record<string, unknown>>;
  say(line: string): void;
  stop(): Promise<void>;
}

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts this file as a node process with `args`, on the store at `location`; `started` collects it for the final cleanup. */
function startNode(args: readonly string[], location: string, started: NodeProcess[]): NodeProcess {
  const child: ChildProcess = spawn(process.execPath, [import.meta.filename, ...args], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? tmpdir(), [STORE_ENV]: location },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.stdout === null) {
    child.kill('SIGKILL');
    throw new Error('cannot read a node process: it has no stdout');
  }
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const node: NodeProcess = {
    async next(what) {
      const line = await within(lines.next(), STEP_TIMEOUT_MS, `${what} from node "${args.join(' ')}"`);
      if (line.done === true) throw new Error(`node "${args.join(' ')}" exited (${child.exitCode ?? child.signalCode}) before ${what}`);
      return JSON.parse(line.value) as Record<string, unknown>;
    },
    say: (line) => void child.stdin?.write(`${line}\n`),
    async stop() {
      child.stdin?.end();
      if (child.exitCode === null && child.signalCode === null) {
        // It exits by itself once its work is told; a node still running is stopped.
        await Promise.race([exited, delay(10_000, undefined, { ref: false })]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
      await exited;
    },
  };
  started.push(node);
  return node;
}

/** Spawns each prefix's {@link AGENTS_PER_NODE} agents in the store at `location` (before any node boots, so every node knows them). */
async function seedAgents(location: string, prefixes: readonly string[]): Promise<void> {
  const store = await openStore(location);
  try {
    const kernel = await openKernel(store, location);
    try {
      for (const prefix of prefixes) {
        for (let index = 0; index < AGENTS_PER_NODE; index += 1) {
          await kernel.spawn(parseManifest(`name = "${prefix}-${index}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n`, { source: 'bench.toml' }).manifest);
        }
      }
    } finally {
      await kernel.shutdown();
    }
  } finally {
    await store.close();
  }
}

/** Busy and total CPU ticks of the whole machine so far, and its cores (/proc/stat), or undefined off Linux. */
async function machineTicks(): Promise<{ busy: number; total: number; cores: number } | undefined> {
  try {
    const lines = (await readFile('/proc/stat', 'utf8')).split('\n');
    const fields = (lines[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
    const busy = user + nice + system + irq + softirq + steal;
    return { busy, total: busy + idle + iowait, cores: lines.filter((line) => /^cpu\d/.test(line)).length };
  } catch {
    return undefined;
  }
}

/**
 * CPU ticks used so far by the PostgreSQL server whose postmaster is `postmaster`: its live
 * processes, and (through the postmaster's children's totals) the backends that already exited.
 */
async function serverTicks(postmaster: number): Promise<number> {
  let ticks = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await procStat(entry);
    if (stat === undefined) continue;
    // ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
    if (Number(entry) === postmaster) ticks += (stat[11] ?? 0) + (stat[12] ?? 0) + (stat[13] ?? 0) + (stat[14] ?? 0);
    else if (stat[1] === postmaster) ticks += (stat[11] ?? 0) + (stat[12] ?? 0);
  }
  return ticks;
}

/** The postmaster's pid: the parent of a backend's process (undefined off Linux). */
async function findPostmaster(url: string): Promise<number | undefined> {
  const { default: pgModule } = await import('pg');
  const client = new pgModule.Client({ connectionString: url });
  await client.connect();
  try {
    const backend = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0;
    return (await procStat(backend))?.[1];
  } finally {
    await client.end();
  }
}

/**
 * Mean backends of the database, sampled every 20 ms: waiting on the event log (an advisory lock,
 * as appends once took, or the table's lock, which a read takes and appends wait for), on the
 * lock PostgreSQL takes to queue a transaction's `NOTIFY` at its commit, on a row lock, running a
 * statement, and in a transaction waiting on their node.
 */
interface BackendSamples {
  event_lock_waiting: number;
  notify_lock_waiting: number;
  row_lock_waiting: number;
  active: number;
  idle_in_transaction: number;
}

const SAMPLE_SQL = `SELECT count(*) FILTER (WHERE wait_event_type = 'Lock' AND wait_event IN ('advisory', 'relation'))::int AS event_lock_waiting,
    count(*) FILTER (WHERE wait_event_type = 'Lock' AND wait_event = 'object')::int AS notify_lock_waiting,
    count(*) FILTER (WHERE wait_event_type = 'Lock' AND wait_event NOT IN ('advisory', 'relation', 'object'))::int AS row_lock_waiting,
    count(*) FILTER (WHERE state = 'active' AND pid <> pg_backend_pid())::int AS active,
    count(*) FILTER (WHERE state = 'idle in transaction')::int AS idle_in_transaction
  FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`;

/** Samples the database's backends until the returned function is called, which answers their means. */
async function sampleBackends(url: string): Promise<() => Promise<BackendSamples>> {
  const { default: pgModule } = await import('pg');
  const client = new pgModule.Client({ connectionString: url });
  await client.connect();
  const sums: BackendSamples = { event_lock_waiting: 0, notify_lock_waiting: 0, row_lock_waiting: 0, active: 0, idle_in_transaction: 0 };
  let samples = 0;
  let stopped = false;
  const loop = (async () => {
    // Bounded by the measured run it watches: the caller stops it when the turns are in.
    while (!stopped) {
      const row = (await client.query<BackendSamples>(SAMPLE_SQL)).rows[0];
      if (row !== undefined) for (const key of Object.keys(sums) as (keyof BackendSamples)[]) sums[key] += row[key];
      samples += 1;
      await delay(20);
    }
  })();
  return async () => {
    stopped = true;
    try {
      await loop;
    } finally {
      await client.end();
    }
    const means = { ...sums };
    for (const key of Object.keys(means) as (keyof BackendSamples)[]) means[key] = round(means[key] / Math.max(1, samples));
    return means;
  };
}

interface TurnFigures {
  turns_per_s: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  first_error?: string;
  node_cpu_ms_per_turn: number;
  /**
   * CPU seconds per second of the nodes, the database server, this process (the sampler), the
   * whole machine (out of its cores) and the rest of it (other work on the machine: a disturbed run).
   */
  cores_busy: { nodes: number; postgres?: number; bench: number; machine?: number; others?: number };
  postgres_cpu_ms_per_turn?: number;
  statements_per_turn?: number;
  session_conflicts?: number;
  backends?: BackendSamples;
}

/**
 * One configuration's turns: one node process per entry of `nodes` (its agents' prefix, and the
 * step its slots start at), all told "go" at once; throughput is all measured turns over the time
 * from the first node's start to the last one's end.
 */
async function measureTurns(
  location: string,
  nodes: readonly { prefix: string; offset: number }[],
  turns: number,
  concurrency: number,
  postmaster?: number,
): Promise<TurnFigures> {
  const started: NodeProcess[] = [];
  const onPostgres = location.startsWith('postgres://');
  try {
    const processes = nodes.map((node) =>
      startNode(
        ['turns', node.prefix, String(AGENTS_PER_NODE), String(node.offset), String(TURN_WARMUP), String(Math.ceil(turns / nodes.length)), String(concurrency)],
        location,
        started,
      ),
    );
    for (const node of processes) {
      const ready = await node.next('ready');
      if (ready['ready'] !== true) throw new Error(`a node answered ${JSON.stringify(ready)} instead of ready`);
    }
    const benchBefore = process.cpuUsage();
    const machineBefore = await machineTicks();
    const serverBefore = postmaster === undefined ? undefined : await serverTicks(postmaster);
    const sampled = onPostgres ? await sampleBackends(location) : undefined;
    for (const node of processes) node.say('go');
    let results: Record<string, unknown>[];
    let backends: BackendSamples | undefined;
    try {
      results = await Promise.all(processes.map((node) => node.next('the turns')));
    } finally {
      backends = await sampled?.();
    }
    const serverAfter = postmaster === undefined ? undefined : await serverTicks(postmaster);
    const machineAfter = await machineTicks();
    const benchCpu = process.cpuUsage(benchBefore);
    const sum = (key: string): number => results.reduce((total, result) => total + Number(result[key] ?? 0), 0);
    const durations = results.flatMap((result) => result['durations'] as number[]);
    const elapsedMs = Math.max(...results.map((result) => Number(result['finished_at']))) - Math.min(...results.map((result) => Number(result['started_at'])));
    const summary = summarize(durations);
    const firstError = results.map((result) => result['first_error']).find((error) => typeof error === 'string');
    const benchMs = (benchCpu.user + benchCpu.system) / 1000;
    const serverCpuMs = serverBefore === undefined || serverAfter === undefined ? undefined : ((serverAfter - serverBefore) / TICKS_PER_S) * 1000;
    const machine =
      machineBefore === undefined || machineAfter === undefined
        ? undefined
        : ((machineAfter.busy - machineBefore.busy) / Math.max(1, machineAfter.total - machineBefore.total)) * machineAfter.cores;
    return {
      turns_per_s: round((durations.length / elapsedMs) * 1000),
      p50_ms: summary.p50_ms,
      p99_ms: summary.p99_ms,
      errors: sum('errors'),
      ...(typeof firstError === 'string' ? { first_error: firstError } : {}),
      node_cpu_ms_per_turn: round(sum('cpu_ms') / durations.length),
      cores_busy: {
        nodes: round(sum('cpu_ms') / elapsedMs),
        ...(serverCpuMs === undefined ? {} : { postgres: round(serverCpuMs / elapsedMs) }),
        bench: round(benchMs / elapsedMs),
        ...(machine === undefined
          ? {}
          : { machine: round(machine), others: round(Math.max(0, machine - (sum('cpu_ms') + (serverCpuMs ?? 0) + benchMs) / elapsedMs)) }),
      },
      ...(serverCpuMs === undefined ? {} : { postgres_cpu_ms_per_turn: round(serverCpuMs / durations.length) }),
      ...(onPostgres ? { statements_per_turn: round(sum('statements') / durations.length), session_conflicts: sum('rollbacks') } : {}),
      ...(backends === undefined ? {} : { backends }),
    };
  } finally {
    await Promise.all(started.map((node) => node.stop()));
  }
}

/** Stored messages of every session, and what `turns` acknowledged turns should have left (a user and an assistant message each). */
async function lostMessages(postgres: TestPostgres, database: string, acknowledged: number): Promise<number> {
  const [row] = (await postgres.query('SELECT count(*)::int AS count FROM session_messages', [], database)).rows as { count: number }[];
  const stored = row?.count ?? 0;
  return acknowledged * 2 - stored;
}

/** Claim latency (enqueue to the handler starting) with `workers` job workers, each a process with its own pool, and how fast they drain a burst. */
async function measureClaims(postgres: TestPostgres, template: string, workers: number): Promise<Record<string, unknown>> {
  // Made as every bench database is: a template's per-database settings are not copied.
  const database = await benchDatabase(postgres, { template });
  const started: NodeProcess[] = [];
  const { default: pgModule } = await import('pg');
  const pool = new pgModule.Pool({ connectionString: database.url, max: BURST_PRODUCERS });
  try {
    const processes = Array.from({ length: workers }, (_, index) => startNode(['jobs', `bench-worker-${index}`], database.url, started));
    for (const node of processes) await node.next('ready');
    const queue = createJobQueue({ database: pool, nodeId: 'bench-producer' });
    let enqueued = 0;
    const drained = async (): Promise<void> => {
      const deadline = Date.now() + STEP_TIMEOUT_MS;
      for (;;) {
        const counts = (
          await pool.query<{ done: number; failed: number }>(
            "SELECT count(*) FILTER (WHERE state = 'done')::int AS done, count(*) FILTER (WHERE state = 'failed')::int AS failed FROM loom_jobs",
          )
        ).rows[0];
        if ((counts?.failed ?? 0) > 0) throw new Error(`${counts?.failed} echo job(s) failed`);
        if ((counts?.done ?? 0) >= enqueued) return;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${enqueued} jobs to be done (${counts?.done ?? 0} are)`);
        await delay(5);
      }
    };
    const paced = async (count: number, measure: boolean): Promise<void> => {
      const start = now();
      for (let index = 0; index < count; index += 1) {
        const wait = start + (index * 1000) / JOB_RATE_PER_S - now();
        if (wait >= 1) await delay(wait);
        await queue.enqueue({ kind: 'echo', payload: { enqueued_at: now(), measure } });
        enqueued += 1;
      }
      await drained();
    };
    await paced(JOB_WARMUP, false);
    await paced(JOBS, true);
    const burstStarted = now();
    let next = 0;
    await Promise.all(
      Array.from({ length: BURST_PRODUCERS }, async () => {
        while (next < BURST_JOBS) {
          next += 1;
          await queue.enqueue({ kind: 'echo', payload: { enqueued_at: now(), measure: false } });
          enqueued += 1;
        }
      }),
    );
    await drained();
    const burstMs = now() - burstStarted;
    for (const node of processes) node.say('stop');
    const results = await Promise.all(processes.map((node) => node.next('the latencies')));
    const latencies = results.flatMap((result) => result['latencies'] as number[]).sort((a, b) => a - b);
    const cpuMs = results.reduce((total, result) => total + Number(result['cpu_ms']), 0);
    return {
      p50_ms: round(percentile(latencies, 0.5)),
      p99_ms: round(percentile(latencies, 0.99)),
      max_ms: round(latencies.at(-1) ?? Number.NaN),
      jobs: latencies.length,
      jobs_per_worker: results.map((result) => Number(result['jobs'])),
      burst_jobs_per_s: round((BURST_JOBS / burstMs) * 1000),
      worker_cpu_ms_per_job: round(cpuMs / enqueued),
    };
  } finally {
    await Promise.all(started.map((node) => node.stop()));
    await pool.end();
  }
}

/** Creates an empty database on `postgres` whose commits wait for their WAL write, as SQLite's WAL with synchronous = NORMAL does. */
async function benchDatabase(postgres: TestPostgres, options: { template?: string } = {}): Promise<{ name: string; url: string }> {
  const database = await postgres.createDatabase(options);
  // The test server runs with synchronous_commit off and fsync off: on, a commit waits for its
  // WAL write (still no disk flush, with fsync off), like a SQLite commit in WAL mode.
  await postgres.query(`ALTER DATABASE "${database.name}" SET synchronous_commit = on`);
  return database;
}

/** SQLite's durable turns and one PostgreSQL node's on the same agents, under load and one at a time, in one run on one machine. */
interface StoreTurns {
  sqliteTurns: TurnFigures;
  sqliteOne: TurnFigures;
  oneNode: TurnFigures;
  oneNodeOne: TurnFigures;
}

/** Measures {@link StoreTurns}: a SQLite file in `folder`, then a database of `server`. */
async function measureStoreTurns(folder: string, server: TestPostgres, postmaster: number | undefined): Promise<StoreTurns> {
  const sqlite = join(folder, 'loom.db');
  await seedAgents(sqlite, ['n0']);
  const sqliteTurns = await measureTurns(sqlite, [{ prefix: 'n0', offset: 0 }], TURNS, TURN_CONCURRENCY);
  const sqliteOne = await measureTurns(sqlite, [{ prefix: 'n0', offset: 0 }], SEQUENTIAL_TURNS, 1);
  const oneNodeDb = await seededDatabase(server, ['n0']);
  const oneNode = await measureTurns(oneNodeDb.url, [{ prefix: 'n0', offset: 0 }], TURNS, TURN_CONCURRENCY, postmaster);
  const oneNodeOne = await measureTurns(oneNodeDb.url, [{ prefix: 'n0', offset: 0 }], SEQUENTIAL_TURNS, 1, postmaster);
  return { sqliteTurns, sqliteOne, oneNode, oneNodeOne };
}

/** A bench database on `server` with each prefix's agents. */
async function seededDatabase(server: TestPostgres, prefixes: readonly string[]): Promise<{ name: string; url: string }> {
  const database = await benchDatabase(server);
  await seedAgents(database.url, prefixes);
  return database;
}

/** Runs `work` with the tests' embedded PostgreSQL server and its postmaster's pid, and a temporary folder; both gone after. */
async function withServer<T>(work: (folder: string, server: TestPostgres, postmaster: number | undefined) => Promise<T>): Promise<T> {
  const folder = await mkdtemp(join(tmpdir(), 'loom-bench-cluster-'));
  let postgres: TestPostgres | undefined;
  try {
    const { startTestPostgres } = await import('../test/support/postgres-server.ts');
    postgres = await startTestPostgres();
    return await work(folder, postgres, await findPostmaster(postgres.adminUrl));
  } finally {
    await postgres?.stop();
    await rm(folder, { recursive: true, force: true });
  }
}

const TURN_NOTES = [
  `turns: kernel.send on an instant model, ${TURN_CONCURRENCY} in flight per node over ${AGENTS_PER_NODE} agents per node, ${TURNS} measured per configuration (split over the nodes) after ${TURN_WARMUP} per node; each node a process of its own, no HTTP`,
  'postgres: embedded server on 127.0.0.1, fsync off; the bench databases set synchronous_commit = on, so a commit waits for its WAL write but no disk flush, as SQLite in WAL mode with synchronous = NORMAL',
  'round trips per durable turn: statements the node sent (pg sends each as one round trip; it does not pipeline) over 1,000 turns one at a time, so no retry inflates it',
  'cores_busy.others is CPU the machine spent outside the bench, its nodes and its server while a configuration ran: above ~0.1, other work disturbed that figure',
];

/**
 * `npm run bench -- postgres`: durable turns per second on one PostgreSQL node against SQLite's
 * on the same machine in the same run, and the round trips of a durable turn, each beside its
 * target (a part of `cluster`, which adds two nodes and the work queue).
 */
export async function postgresBench(): Promise<Record<string, unknown>> {
  return withServer(async (folder, server, postmaster) => {
    const { sqliteTurns, sqliteOne, oneNode, oneNodeOne } = await measureStoreTurns(folder, server, postmaster);
    return {
      bench: 'postgres',
      turns_per_s: { sqlite: sqliteTurns.turns_per_s, postgres_1_node: oneNode.turns_per_s },
      postgres_1_node_ratio_vs_sqlite: round(oneNode.turns_per_s / sqliteTurns.turns_per_s),
      round_trips_per_durable_turn: oneNodeOne.statements_per_turn,
      errors: [sqliteTurns, sqliteOne, oneNode, oneNodeOne].reduce((total, figures) => total + figures.errors, 0),
      targets: { postgres_1_node_ratio_vs_sqlite: 0.5, round_trips_per_durable_turn: 3, errors: 0 },
      one_turn_at_a_time: {
        sqlite: { p50_ms: sqliteOne.p50_ms, p99_ms: sqliteOne.p99_ms, turns_per_s: sqliteOne.turns_per_s },
        postgres: {
          p50_ms: oneNodeOne.p50_ms,
          p99_ms: oneNodeOne.p99_ms,
          turns_per_s: oneNodeOne.turns_per_s,
          node_cpu_ms_per_turn: oneNodeOne.node_cpu_ms_per_turn,
          postgres_cpu_ms_per_turn: oneNodeOne.postgres_cpu_ms_per_turn,
        },
      },
      under_load: { sqlite: sqliteTurns, postgres_1_node: oneNode },
      cores: availableParallelism(),
      notes: TURN_NOTES,
    };
  });
}

/**
 * Durable turns per second on a SQLite file, on PostgreSQL with one node and with two nodes (two
 * processes on one database, each on its own agents, and both on the same agents), against an
 * instant model; the latency of one turn at a time on each store; and the work queue's claim
 * latency, p50/p99, with one and with two worker processes.
 */
export async function clusterBench(): Promise<Record<string, unknown>> {
  return withServer(async (folder, server, postmaster) => {
    const { sqliteTurns, sqliteOne, oneNode, oneNodeOne } = await measureStoreTurns(folder, server, postmaster);
    const twoNodesDb = await seededDatabase(server, ['n0', 'n1']);
    const twoNodes = await measureTurns(
      twoNodesDb.url,
      [
        { prefix: 'n0', offset: 0 },
        { prefix: 'n1', offset: 0 },
      ],
      TURNS,
      TURN_CONCURRENCY,
      postmaster,
    );
    const sharedDb = await seededDatabase(server, ['n0']);
    // Both nodes on the same 48 agents, their slots a third of a rotation apart: turns on one agent from two nodes now and then.
    const shared = await measureTurns(
      sharedDb.url,
      [
        { prefix: 'n0', offset: 0 },
        { prefix: 'n0', offset: 1 },
      ],
      TURNS,
      TURN_CONCURRENCY,
      postmaster,
    );
    const sharedLost = await lostMessages(server, sharedDb.name, 2 * TURN_WARMUP + TURNS - shared.errors);

    const template = await benchDatabase(server);
    await (await openStore(template.url)).close();
    const oneWorker = await measureClaims(server, template.name, 1);
    const twoWorkers = await measureClaims(server, template.name, 2);

    const ratio = (figures: TurnFigures): number => round(figures.turns_per_s / sqliteTurns.turns_per_s);
    const errors = [sqliteTurns, sqliteOne, oneNode, oneNodeOne, twoNodes, shared].reduce((total, figures) => total + figures.errors, 0);
    return {
      bench: 'cluster',
      turns_per_s: {
        sqlite: sqliteTurns.turns_per_s,
        postgres_1_node: oneNode.turns_per_s,
        postgres_2_nodes: twoNodes.turns_per_s,
        postgres_2_nodes_shared_agents: shared.turns_per_s,
      },
      ratio_vs_sqlite: { postgres_1_node: ratio(oneNode), postgres_2_nodes: ratio(twoNodes), postgres_2_nodes_shared_agents: ratio(shared) },
      round_trips_per_durable_turn: oneNodeOne.statements_per_turn,
      job_claim_ms: { '1_worker': oneWorker, '2_workers': twoWorkers },
      one_turn_at_a_time: {
        sqlite: { p50_ms: sqliteOne.p50_ms, p99_ms: sqliteOne.p99_ms, turns_per_s: sqliteOne.turns_per_s },
        postgres: {
          p50_ms: oneNodeOne.p50_ms,
          p99_ms: oneNodeOne.p99_ms,
          turns_per_s: oneNodeOne.turns_per_s,
          statements_per_turn: oneNodeOne.statements_per_turn,
        },
      },
      under_load: { sqlite: sqliteTurns, postgres_1_node: oneNode, postgres_2_nodes: twoNodes, postgres_2_nodes_shared_agents: shared },
      // Turns that failed with both nodes on the same agents (a session saved by the other node meanwhile, its save given up).
      shared_agents_failed_turns: shared.errors,
      shared_agents_messages_lost: sharedLost,
      errors,
      targets: {
        errors: 0,
        shared_agents_failed_turns: 0,
        shared_agents_messages_lost: 0,
        job_claim_p50_ms: 10,
        postgres_1_node_ratio_vs_sqlite: 0.5,
        round_trips_per_durable_turn: 3,
      },
      cores: availableParallelism(),
      notes: [
        ...TURN_NOTES,
        `2 nodes share the machine's ${availableParallelism()} cores with the database server (and the bench): cores_busy shows each one's share; with the machine saturated, a second node adds no throughput here`,
        'backends: pg_stat_activity sampled every 20 ms during the measured turns; event_lock_waiting = backends waiting on the event log (appends take no lock of their own: they wait only while a read of the log waits for the appends in flight); notify_lock_waiting = commits queued on the lock PostgreSQL takes to queue their NOTIFY',
        `job claims: echo jobs enqueued at ${JOB_RATE_PER_S}/s by this process (its own pool), latency from before the INSERT to the handler starting in a worker process (NOTIFY, then the claim transaction); burst: ${BURST_JOBS} jobs enqueued by ${BURST_PRODUCERS} producers at once`,
      ],
    };
  });
}

// Run as a node process by the bench (see the top of this file).
if (process.argv[1] === import.meta.filename) {
  const [role, ...args] = process.argv.slice(2);
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  try {
    if (role === 'turns') await turnsNode(args, lines);
    else if (role === 'jobs') await jobsNode(args, lines);
    else throw new Error(`usage: node bench/cluster.ts turns|jobs …; got "${role ?? ''}"`);
    process.exit(0);
  } catch (error) {
    console.error(`bench/cluster.ts ${role ?? ''}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  }
}
