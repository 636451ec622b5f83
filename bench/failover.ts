// `npm run bench -- failover`: two daemons on one embedded PostgreSQL database; node A is
// SIGKILLed in the middle of a turn (after a tool call's result, in its next model call), and node
// B takes the turn over once A's lease on it lapses (decision 0061). The figure is the time from
// A's death to the turn running again on B (B's first new model call), beside the lease it was
// held with; and whether the turn finished there with its tool's side effect once. Everything
// listens on 127.0.0.1 only.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { startScriptedModelServer, type ScriptedModelServer } from '../src/models/scripted-model-server.ts';
import type { TestPostgres } from '../test/support/postgres-server.ts';
import { median, round } from './stats.ts';

const RUNS = 3;
/** The lease the nodes hold their turns with: short, so that a run takes seconds, not the default 15. */
const LEASE_SECONDS = 2;
/** The longest any step may take (a node to answer, a turn to be taken over and finish). */
const STEP_TIMEOUT_MS = 60_000;
const bin = join(import.meta.dirname, '../bin/loom.js');

/** Calls `check` every `everyMs` until it answers something, failing after {@link STEP_TIMEOUT_MS}. */
async function until<T>(what: string, check: () => Promise<T | undefined> | T | undefined, everyMs = 20): Promise<T> {
  const deadline = performance.now() + STEP_TIMEOUT_MS;
  for (;;) {
    const value = await Promise.resolve()
      .then(check)
      .catch(() => undefined);
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`failover bench: timed out waiting for ${what}`);
    await delay(everyMs);
  }
}

interface Daemon {
  child: ChildProcess;
  url: string;
  exited: Promise<void>;
}

/** Starts `loom start --foreground` with a home of its own under `folder`, on `databaseUrl`, and waits until it answers. */
async function startDaemon(folder: string, name: string, databaseUrl: string): Promise<Daemon> {
  const home = join(folder, name);
  await mkdir(home, { recursive: true });
  await writeFile(join(home, 'config.toml'), `[cluster]\nnode_name = "${name}"\nturn_lease_seconds = ${LEASE_SECONDS}\n`);
  const env = {
    PATH: process.env['PATH'] ?? '',
    HOME: folder,
    LOOM_HOME: home,
    LOOM_DATABASE_URL: databaseUrl,
    OPENAI_API_KEY: 'sk-bench',
    LOOM_LOG_FORMAT: 'json',
  };
  const child = spawn(process.execPath, [bin, 'start', '--foreground', '--port', '0'], { env, stdio: ['ignore', 'ignore', 'ignore'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = await until(`node "${name}" to answer`, async () => {
    if (child.exitCode !== null) throw new Error(`node "${name}" exited`);
    const info = JSON.parse(await readFile(join(home, 'daemon.json'), 'utf8')) as { url: string; pid: number };
    return info.pid === child.pid && (await fetch(`${info.url}/api/health`)).ok ? info.url : undefined;
  });
  return { child, url, exited };
}

/** One run: the turn started on A, A killed in its second model call, B's takeover timed. */
async function runOnce(
  postgres: TestPostgres,
  folder: string,
  model: ScriptedModelServer,
  world: { url: string; hits: () => number },
): Promise<{ failoverMs: number; sideEffects: number; finished: boolean }> {
  const database = await postgres.createDatabase();
  const daemons: Daemon[] = [];
  try {
    const a = await startDaemon(folder, `a-${database.name}`, database.url);
    daemons.push(a);
    const b = await startDaemon(folder, `b-${database.name}`, database.url);
    daemons.push(b);
    const manifest = `name = "clerk"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n[capabilities]\ntools = ["http_request"]\nnetwork = ["${world.url.slice('http://'.length)}"]\n`;
    const spawned = await fetch(`${a.url}/api/agents`, { method: 'POST', headers: { 'content-type': 'application/toml' }, body: manifest });
    if (spawned.status !== 201) throw new Error(`failover bench: spawning the agent answered ${spawned.status}: ${await spawned.text()}`);
    const before = model.requests.length;
    const hitsBefore = world.hits();
    model.script([
      { toolCalls: [{ name: 'http_request', input: { url: `${world.url}/place`, method: 'POST', body: 'one order' } }] },
      { text: 'never said', gate: new Promise<never>(() => undefined) },
    ]);
    void fetch(`${a.url}/api/agents/clerk/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'place the order' }),
    }).catch(() => undefined);
    await until('the model call after the tool result', () => (model.requests.length >= before + 2 ? true : undefined), 5);
    model.script([{ text: 'The order is placed.' }]);
    a.child.kill('SIGKILL');
    await a.exited;
    const diedAt = performance.now();
    await until("node B's first model call of the turn", () => (model.requests.length >= before + 3 ? true : undefined), 2);
    const failoverMs = performance.now() - diedAt;
    const session = await until('the turn to be committed on B', async () => {
      const body = (await (await fetch(`${b.url}/api/agents/clerk/session`)).json()) as { messages: unknown[]; running: unknown };
      return body.running === null && body.messages.length > 0 ? body : undefined;
    });
    const finished = JSON.stringify(session.messages).split('The order is placed.').length === 2;
    return { failoverMs, sideEffects: world.hits() - hitsBefore, finished };
  } finally {
    for (const daemon of daemons) if (daemon.child.exitCode === null && daemon.child.signalCode === null) daemon.child.kill('SIGKILL');
    await Promise.all(daemons.map((daemon) => daemon.exited));
  }
}

/**
 * `failover`: from a node's death (SIGKILL, mid-turn) to its turn running again on another node,
 * on embedded PostgreSQL; the target is the lease plus 2 s. Each run on a fresh database.
 */
export async function failoverBench(): Promise<Record<string, unknown>> {
  const folder = await mkdtemp(join(tmpdir(), 'loom-bench-failover-'));
  let postgres: TestPostgres | undefined;
  let hits = 0;
  const world = createServer((request, response) => {
    hits += 1;
    request.resume();
    response.end('the order is placed');
  });
  await new Promise<void>((resolve) => world.listen(0, '127.0.0.1', resolve));
  const model = await startScriptedModelServer({ steps: [] });
  try {
    const { startTestPostgres } = await import('../test/support/postgres-server.ts');
    postgres = await startTestPostgres();
    const runs: Awaited<ReturnType<typeof runOnce>>[] = [];
    for (let run = 0; run < RUNS; run += 1)
      runs.push(await runOnce(postgres, folder, model, { url: `http://127.0.0.1:${(world.address() as AddressInfo).port}`, hits: () => hits }));
    const durations = runs.map((run) => run.failoverMs);
    return {
      bench: 'failover',
      runs: RUNS,
      lease_ms: LEASE_SECONDS * 1000,
      failover_p50_ms: round(median(durations)),
      failover_max_ms: round(Math.max(...durations)),
      target_ms: LEASE_SECONDS * 1000 + 2000,
      finished_every_run: runs.every((run) => run.finished),
      side_effect_once_every_run: runs.every((run) => run.sideEffects === 1),
      notes: [
        `two daemons (loom start) on one embedded PostgreSQL database, [cluster] turn_lease_seconds = ${LEASE_SECONDS} (15 by default); node A SIGKILLed after its tool call's result, in its next model call`,
        "failover: from A's exit to B's first model call of the turn (B took it over from the journal once A's lease lapsed: at most the lease after A's last renewal, a third of a lease apart, plus B's next look, at most a second or a third of the lease)",
      ],
    };
  } finally {
    await postgres?.stop();
    await model.close();
    await new Promise<void>((resolve) => world.close(() => resolve()));
    await rm(folder, { recursive: true, force: true });
  }
}
