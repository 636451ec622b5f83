import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobQueue } from '../../src/cluster/index.ts';
import type { ClusterView } from '../../src/contracts/index.ts';
import type { TestPostgres } from '../support/postgres-server.ts';
import { runCli } from '../support/run-cli.ts';
import { activityJson, bindingJson, writePackage } from '../packages/support.ts';
import { postgresMigrations } from '../../src/store/index.ts';
import { clusterOf, type DaemonCluster, type DaemonNode, type DaemonNodes, startDaemonCluster, waitFor } from './daemons.ts';

// Daemons in separate processes, each with its own LOOM_HOME, sharing one PostgreSQL database.

const HEARTBEAT_TIMER = 'package beat/check';

let postgres: TestPostgres;
let dir: DaemonCluster['dir'];
let nodes: DaemonNodes;
let cluster: DaemonCluster | undefined;

beforeAll(async () => {
  // Every heartbeat run makes one model call: the script answers each one.
  cluster = await startDaemonCluster('loom-cluster-', [{ text: 'all quiet' }]);
  ({ dir, postgres, nodes } = cluster);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
}, 60_000);

interface Claim {
  at: number;
  node_id: string;
}

async function claims(database: string): Promise<Claim[]> {
  const result = await postgres.query('SELECT at::float8 AS at, node_id FROM loom_timer_fires WHERE timer = $1 ORDER BY at', [HEARTBEAT_TIMER], database);
  return result.rows as Claim[];
}

interface RunView {
  id: string;
  trigger: string;
  status: string;
  error: string | null;
  started_at: string;
  ended_at: string | null;
}

/** The runs of the `beat` package's heartbeat, as `GET /api/packages/runs` on `node` shows them. */
async function heartbeatRuns(node: DaemonNode): Promise<RunView[]> {
  const response = await fetch(`${node.url}/api/packages/runs?package=beat`);
  if (!response.ok) throw new Error(`GET /api/packages/runs answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as RunView[]).filter((run) => run.trigger === 'heartbeat');
}

interface PackageJob {
  id: string;
  dedupe_key: string;
  state: string;
  lease_owner: string | null;
}

async function packageJobs(database: string): Promise<PackageJob[]> {
  return (await postgres.query("SELECT id, dedupe_key, state, lease_owner FROM loom_jobs WHERE kind = 'package-run'", [], database)).rows as PackageJob[];
}

/** When the node logged that it began to lead (on its clock), once it has. */
function ledAt(node: DaemonNode): number | undefined {
  for (const line of node.output().split('\n')) {
    if (!line.includes(`node \\"${node.name}\\" leads`)) continue;
    const { time } = JSON.parse(line) as { time?: string };
    if (time !== undefined) return Date.parse(time);
  }
  return undefined;
}

describe('several daemons on one PostgreSQL database', () => {
  it('elect one leader that fires a heartbeat binding; when it is SIGKILLed another takes over within 10 s and no instant fires twice', async () => {
    const database = await postgres.createDatabase();
    // Missed instants are recorded, not replayed (catch-up is not what is tried here).
    const skip = { scheduler: { timezone: 'UTC', catch_up: 'skip' } };
    const first = await nodes.start('node-a', database.url, skip);
    // A heartbeat every second, installed once (on the first node, before the second starts).
    const folder = await writePackage(dir.path, 'beat', {
      workflows: { check: bindingJson({ type: 'heartbeat', interval: '1s' }, [activityJson('look', { on_error: { retry: 0, fallback: 'Skip' } })]) },
    });
    const installed = await fetch(`${first.url}/api/packages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source: folder }),
    });
    expect(installed.status).toBe(201);
    const second = await nodes.start('node-b', database.url, skip);

    // Both see both, and the same single leader: the first, which was up when the second joined.
    // (A node records where it listens by a heartbeat of its own, sent as it starts to listen.)
    const [seenByFirst, seenBySecond] = await waitFor('each node to see where the other listens', async () => {
      const views = await Promise.all([clusterOf(first), clusterOf(second)]);
      return views.every((view) => view.nodes.every((node) => node.url !== null)) ? views : undefined;
    });
    expect(seenByFirst.store).toBe('postgres');
    const firstId = seenByFirst.self;
    const secondId = seenBySecond.self;
    expect(firstId).not.toBe(secondId);
    for (const view of [seenByFirst, seenBySecond]) {
      expect(view.leader).toBe(firstId);
      expect(view.nodes.map((node) => [node.name, node.alive, node.leader]).sort()).toEqual([
        ['node-a', true, true],
        ['node-b', true, false],
      ]);
    }
    expect(seenBySecond.nodes.find((node) => node.self)?.name).toBe('node-b');
    expect(seenByFirst.nodes.find((node) => node.name === 'node-b')?.url).toBe(second.url);

    // The leader alone fires the heartbeat.
    await waitFor('three heartbeats on the leader', async () => ((await claims(database.name)).length >= 3 ? true : undefined));
    expect(new Set((await claims(database.name)).map((claim) => claim.node_id))).toEqual(new Set([firstId]));

    // The leader hangs past an instant of the beat, then dies. It claims an instant once it is due,
    // so all it claimed is due by the hang: an instant passes that no node fires, however soon
    // after the kill the second node tries for the lock (every 2 s, at no set time).
    first.child.kill('SIGSTOP');
    const hungAt = Date.now();
    await waitFor('an instant of the beat to pass while the leader hangs', () => Date.now() > hungAt + 1_200);
    const killedAt = Date.now();
    first.child.kill('SIGKILL');
    await first.exited;

    const view = await waitFor('the second node to lead', async () => {
      const current = await clusterOf(second);
      return current.leader === secondId ? current : undefined;
    });
    // Timed by the node's own log of when it began to lead, not by how soon a loaded machine
    // answered the test's requests.
    expect((await waitFor('the second node to log that it leads', () => ledAt(second))) - killedAt).toBeLessThan(10_000);
    expect(view.nodes.find((node) => node.name === 'node-a')?.leader).toBe(false);
    // The old leader's claims, final: its lock was freed when its session ended, after any
    // statement it had sent. (Read now, not at the kill: the server may still have been running one.)
    const before = (await claims(database.name)).filter((claim) => claim.node_id === firstId);

    // The heartbeat goes on, on the new leader.
    const after = await waitFor('three heartbeats on the new leader', async () => {
      const all = await claims(database.name);
      return all.filter((claim) => claim.node_id === secondId).length >= 3 ? all : undefined;
    });
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.slice(before.length).every((claim) => claim.node_id === secondId)).toBe(true);
    // No instant twice, and never two within one interval: the new leader did not repeat the old one's.
    const instants = after.map((claim) => claim.at);
    expect(new Set(instants).size).toBe(instants.length);
    for (let index = 1; index < instants.length; index += 1) expect(instants[index]! - instants[index - 1]!).toBeGreaterThanOrEqual(1000);

    // The instants between the old leader's last fire and the takeover are recorded as missed, not replayed.
    const missed = (run: RunView): boolean =>
      run.status === 'missed' && /wake-ups? missed while no node led \(catch_up = "skip"\): not run/.test(run.error ?? '');
    await waitFor('the instants no node fired to be recorded as missed', async () => (await heartbeatRuns(second)).some(missed));

    // What a user reads through the surviving node: one run per fire. Each fire went through the
    // work queue as the job of its instant (its dedupe key names it), and the job's run has its id.
    // Every fire runs but what the old leader took down with it: an instant it claimed and had not
    // enqueued, or a job it held (taken again once its lease, 30 s, lapses).
    const jobKey = 'package beat/check@';
    const { runs, jobs } = await waitFor('a run of each fire but those lost with the old leader', async () => {
      const found = { runs: (await heartbeatRuns(second)).filter((run) => !missed(run)), jobs: await packageJobs(database.name) };
      const ran = new Set(found.runs.map((run) => run.id));
      const jobOf = new Map(found.jobs.map((job) => [job.dedupe_key, job]));
      const lost = (claim: Claim): boolean => {
        const job = jobOf.get(`${jobKey}${claim.at}`);
        return claim.node_id === firstId && (job === undefined || (job.state === 'running' && job.lease_owner === firstId));
      };
      return after.every((claim) => ran.has(jobOf.get(`${jobKey}${claim.at}`)?.id ?? '') || lost(claim)) ? found : undefined;
    });
    // Each run is of a job, each job of an instant claimed (read last: whatever ran or was enqueued
    // was claimed by then), no two runs of one instant.
    const claimed = new Set((await claims(database.name)).map((claim) => claim.at));
    const instantOf = new Map(jobs.map((job) => [job.id, Number(job.dedupe_key.slice(jobKey.length))]));
    expect(jobs.every((job) => job.dedupe_key.startsWith(jobKey) && claimed.has(instantOf.get(job.id) ?? Number.NaN))).toBe(true);
    const ranAt = runs.map((run) => instantOf.get(run.id));
    expect(ranAt.every((at) => at !== undefined)).toBe(true);
    expect(new Set(ranAt).size).toBe(ranAt.length);
    // Never two at once: each run that ran and ended did so before the next one started (timed by
    // the nodes' clocks, not by how soon after its instant a loaded machine got to start it). A
    // fire skipped while a run went is recorded then, and ran nothing; a run cut off by its node's
    // death is ended when another node finds it so, not when it stopped.
    const spans = runs
      .filter((run) => run.status !== 'skipped' && run.status !== 'interrupted' && run.ended_at !== null)
      .map((run) => ({ start: Date.parse(run.started_at), end: Date.parse(run.ended_at ?? '') }))
      .sort((a, b) => a.start - b.start);
    expect(spans.length).toBeGreaterThan(0);
    for (let index = 1; index < spans.length; index += 1) expect(spans[index]!.start).toBeGreaterThanOrEqual(spans[index - 1]!.end);

    // loom status on the survivor lists both nodes and names the leader.
    const status = await runCli(second.home, ['status']);
    expect(status.stdout).toContain('leader: node-b');
    expect(status.stdout).toMatch(/^Work queue: \d+ queued, \d+ running, \d+ failed\.$/m);
    expect(status.stdout).toMatch(/NODE\s+URL\s+VERSION\s+LAST SEEN\s+STATE/);
    expect(status.stdout).toMatch(/node-b\s+http:\/\/127\.0\.0\.1:\d+\s+\S+\s+\S+\s+leader, this node/);
    expect(status.stdout).toMatch(/node-a\s+/);
    const json = JSON.parse((await runCli(second.home, ['status', '--json'])).stdout) as { cluster: ClusterView };
    expect(json.cluster.leader).toBe(secondId);

    // A node stopped cleanly says so at once (the one killed is shown gone once its heartbeat is stale).
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    const rows = await postgres.query('SELECT name, stopped_at IS NOT NULL AS stopped FROM loom_nodes ORDER BY name', [], database.name);
    expect(rows.rows).toEqual([
      { name: 'node-a', stopped: false },
      { name: 'node-b', stopped: true },
    ]);
  }, 60_000);

  it('runs 1,000 jobs across three nodes, each exactly once to completion, while one node is SIGKILLed holding jobs: they run again on the others', async () => {
    const database = await postgres.createDatabase();
    const workers = await Promise.all(
      ['job-a', 'job-b', 'job-c'].map((name) => nodes.start(name, database.url, { cluster: { job_lease_seconds: 2, job_concurrency: 8 } })),
    );
    const idOf = new Map(await Promise.all(workers.map(async (node) => [node.name, (await clusterOf(node)).self] as const)));
    const count = async (sql: string, values: unknown[] = []): Promise<number> =>
      Number(((await postgres.query(sql, values, database.name)).rows as { count: string }[])[0]?.count);
    const pool = new pg.Pool({ connectionString: database.url, max: 4 });
    try {
      // Enqueued by the real queue, as a leader's fires are; echo jobs wait 50 ms each, and every
      // fourth of the last hundred 1.5 s, so the victim is surely killed while it holds one.
      const queue = createJobQueue({ database: pool, nodeId: 'test' });
      const enqueued: string[] = [];
      const isLong = (index: number): boolean => index >= 900 && index % 4 === 0;
      for (let start = 0; start < 1000; start += 50) {
        const batch = await Promise.all(
          Array.from({ length: 50 }, (_, offset) => start + offset).map((index) =>
            queue.enqueue({ kind: 'echo', payload: { sleep_ms: isLong(index) ? 1_500 : 50 }, dedupeKey: `${isLong(index) ? 'long' : 'load'} ${index}` }),
          ),
        );
        enqueued.push(...batch.map((job) => job.id));
      }
      expect(new Set(enqueued).size).toBe(1000);

      await waitFor('half the jobs to be done', async () => ((await count("SELECT count(*) FROM loom_jobs WHERE state = 'done'")) >= 500 ? true : undefined), {
        ms: 30_000,
      });
      const victim = workers[2] as DaemonNode;
      const victimId = idOf.get(victim.name);
      // Killed while it holds a long job (a short one may end between this read and the kill).
      const holding = "SELECT count(*) FROM loom_jobs WHERE state = 'running' AND lease_owner = $1 AND dedupe_key LIKE 'long %'";
      await waitFor('the victim to hold a long job', async () => ((await count(holding, [victimId])) > 0 ? true : undefined));
      victim.child.kill('SIGKILL');
      await victim.exited;

      await waitFor('every job to be done', async () => ((await count("SELECT count(*) FROM loom_jobs WHERE state = 'done'")) === 1000 ? true : undefined), {
        ms: 40_000,
      });
      // What the victim held when it died: its attempts lost with it. (Read from the attempts, not
      // from the leases right after the kill: on a slow machine a survivor may have taken a lease
      // over before that read.)
      const cutOff = (
        await postgres.query("SELECT DISTINCT job_id FROM loom_job_attempts WHERE node_id = $1 AND outcome = 'lost'", [victimId], database.name)
      ).rows.map((row: { job_id: string }) => row.job_id);
      expect(cutOff.length).toBeGreaterThan(0);
      expect((await postgres.query('SELECT state, count(*)::int AS count FROM loom_jobs GROUP BY state', [], database.name)).rows).toEqual([
        { state: 'done', count: 1000 },
      ]);
      // Exactly one completion per job, and no attempt left open.
      const completions = (
        await postgres.query("SELECT job_id, count(*) FILTER (WHERE outcome = 'done')::int AS done FROM loom_job_attempts GROUP BY job_id", [], database.name)
      ).rows as { job_id: string; done: number }[];
      expect(completions.length).toBe(1000);
      expect(completions.filter((row) => row.done !== 1)).toEqual([]);
      expect(await count('SELECT count(*) FROM loom_job_attempts WHERE finished_at IS NULL')).toBe(0);
      // Every node did its share, the victim until it died.
      for (const node of workers)
        expect(await count("SELECT count(*) FROM loom_job_attempts WHERE outcome = 'done' AND node_id = $1", [idOf.get(node.name)])).toBeGreaterThan(0);
      // What the victim held when it died was lost with it, and run again to completion by a survivor.
      const attempts = (
        await postgres.query(
          'SELECT job_id, attempt, node_id, outcome FROM loom_job_attempts WHERE job_id = ANY($1::text[]) ORDER BY job_id, attempt',
          [cutOff],
          database.name,
        )
      ).rows as {
        job_id: string;
        attempt: number;
        node_id: string;
        outcome: string;
      }[];
      for (const id of cutOff) {
        const own = attempts.filter((row) => row.job_id === id);
        expect(own.at(-2)).toMatchObject({ node_id: victimId, outcome: 'lost' });
        expect(own.at(-1)?.outcome).toBe('done');
        expect(own.at(-1)?.node_id).not.toBe(victimId);
      }
      expect(await count("SELECT count(*) FROM loom_job_attempts WHERE node_id = $1 AND outcome NOT IN ('done', 'lost')", [victimId])).toBe(0);
      // The survivors show the queue empty.
      expect((await clusterOf(workers[0] as DaemonNode)).jobs).toEqual({ queued: 0, running: 0, failed: 0 });
    } finally {
      await pool.end();
      // The survivors stop cleanly (killed after 15 s if they do not).
      await Promise.all(workers.map((node) => nodes.stop(node)));
    }
  }, 90_000);

  it('refuses to start a node whose Loom knows an older schema than the database holds, saying why', async () => {
    const database = await postgres.createDatabase();
    const latest = postgresMigrations.at(-1)?.version ?? 0;
    // A newer Loom migrated this database one step further.
    await postgres.query('CREATE TABLE loom_schema (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)', [], database.name);
    await postgres.query("INSERT INTO loom_schema VALUES ($1, 'from a newer Loom', 0)", [latest + 1], database.name);
    const home = join(dir.path, 'old-node');
    await mkdir(home, { recursive: true });
    const node = nodes.spawn('old-node', database.url);
    const code = await Promise.race([node.exited, delay(20_000).then(() => 'still running')]);
    expect(code).toBe(1);
    expect(node.output()).toContain(
      `its schema version is ${latest + 1}, but this Loom knows versions up to ${latest}; upgrade Loom (every node sharing the database runs the same version)`,
    );
    expect(node.output()).not.toContain('postgres:loom-test-secret');
  }, 30_000);

  it('shows a daemon on SQLite as the only node, itself the leader', async () => {
    const node = await nodes.start('alone', undefined);
    const view = await clusterOf(node);
    expect(view).toMatchObject({ store: 'sqlite', self: view.self, leader: view.self });
    expect(view.nodes).toHaveLength(1);
    expect(view.nodes[0]).toMatchObject({ id: view.self, name: 'alone', url: node.url, leader: true, self: true, alive: true });
    expect(Date.parse(view.nodes[0]?.last_seen ?? '')).toBeGreaterThanOrEqual(Date.parse(view.nodes[0]?.started_at ?? ''));
    // One node: loom status says nothing of nodes.
    const status = await runCli(node.home, ['status']);
    expect(status.stdout).toMatch(/^Loom \S+ is running at http:\/\/127\.0\.0\.1:\d+ \(pid \d+, since \S+, 0 agents\)\.\n$/);
  }, 30_000);
});
