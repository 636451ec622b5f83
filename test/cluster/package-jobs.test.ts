import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createJobQueue } from '../../src/cluster/index.ts';
import type { ActivityRunRecord, PackageRunRecord } from '../../src/contracts/index.ts';
import { openPostgresStore, SERVER_NOW_MS } from '../../src/store/index.ts';
import { openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { activityJson, bindingJson, packageConfig, writePackage } from '../packages/support.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';
import { waitFor } from '../support/wait-for.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

// A package run handed to the shared work queue, on a real PostgreSQL server.

const server = useScriptedModelServer();
const postgres = useTestPostgres();
let template: string;
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let hosts: TestHost[];

beforeAll(async () => {
  const migrated = await postgres.createDatabase();
  await (await openPostgresStore({ url: migrated.url })).close();
  template = migrated.name;
}, 120_000);
beforeEach(async () => {
  dir = await makeTempDir('loom-package-jobs-');
  hosts = [];
});
afterEach(async () => {
  for (const host of hosts) await host.close();
  await dir.remove();
});

/** A daemon's host (schedules and the work queue running) on `url`, its home in `folder` (the test's folder by default). */
async function openNode(url: string, folder = dir.path): Promise<TestHost> {
  const host = await openTestHost(folder, packageConfig(server.url), { ...TEST_KEYS, LOOM_DATABASE_URL: url }, { runSchedules: true });
  hosts.push(host);
  return host;
}

const activity = (id: string, changes: Partial<ActivityRunRecord>): ActivityRunRecord => ({
  id,
  status: 'pending',
  attempts: 0,
  inputTokens: 0,
  outputTokens: 0,
  costUsd: 0,
  output: null,
  error: null,
  fallback: null,
  startedAt: null,
  endedAt: null,
  ...changes,
});

/** Installs the package "chain" (its binding "work" run by hand: activities "first" and "second") by a node that then stops. */
async function installChain(url: string): Promise<void> {
  const installer = await openNode(url);
  await installer.packages.install(
    await writePackage(dir.path, 'chain', { workflows: { work: bindingJson({ type: 'manual' }, [activityJson('first'), activityJson('second')]) } }),
  );
  await installer.close();
  hosts = hosts.filter((host) => host !== installer);
}

/** The run of the job `id` (binding "work" of package "chain") as a node that died in its second activity left it. */
const cutOffRun = (id: string): PackageRunRecord => ({
  id,
  package: 'chain',
  binding: 'work',
  trigger: 'manual',
  status: 'running',
  inputs: {},
  activities: [
    activity('first', { status: 'completed', attempts: 1, output: 'done by the dead node', startedAt: 1, endedAt: 2 }),
    activity('second', { status: 'running', attempts: 1, startedAt: 2 }),
  ],
  emitted: null,
  error: null,
  startedAt: 1,
  endedAt: null,
  nodeId: 'the-dead-node',
});

/**
 * Enqueues a `package-run` job of binding "work" of package "chain" (tried `maxAttempts` times),
 * which a node takes and dies in: its lease lapses 3 s from now, and `runs(jobId)` are stored as
 * it left them. Returns the job's id and when its lease ends.
 */
async function jobOfDeadNode(url: string, runs: (jobId: string) => PackageRunRecord[], maxAttempts?: number): Promise<{ jobId: string; leaseEnds: number }> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    const dead = createJobQueue({ database: pool, nodeId: 'dead-node', leaseMs: 3_000 });
    const payload = { package: 'chain', binding: 'work', trigger: 'manual' };
    const jobId = (await dead.enqueue({ kind: 'package-run', payload, ...(maxAttempts === undefined ? {} : { maxAttempts }) })).id;
    const leaseEnds = Date.now() + 3_000;
    expect(await dead.claim(['package-run'], 1)).toHaveLength(1);
    const store = await openPostgresStore({ url });
    try {
      for (const run of runs(jobId)) await store.packageRuns.create(run);
    } finally {
      await store.close();
    }
    return { jobId, leaseEnds };
  } finally {
    await pool.end();
  }
}

describe('package runs as jobs of the shared work queue', () => {
  it('a package-run job whose node died mid-run is taken again after its lease lapses and resumes its one run: the finished activity is not run again', async () => {
    const database = await postgres.createDatabase({ template });
    await installChain(database.url);

    // A node took the job, ran the first activity, and died in the second.
    const { jobId, leaseEnds } = await jobOfDeadNode(database.url, (id) => [cutOffRun(id)]);

    // One model call is scripted: the second activity's. A second call would fail the run.
    server.script([{ text: 'second done' }]);
    const node = await openNode(database.url);
    const finished = await waitFor('the run to finish', async () => {
      const run = await node.store.packageRuns.get(jobId);
      return run !== undefined && run.status !== 'running' && run.status !== 'interrupted' ? run : undefined;
    });
    expect(finished.status).toBe('completed');
    // Only the job resumed it, once the dead node's lease lapsed: not the new node's start, which resumes the runs cut off that are not jobs'.
    expect(Date.now()).toBeGreaterThanOrEqual(leaseEnds);
    expect(finished.activities.map((entry) => [entry.id, entry.status, entry.attempts, entry.output])).toEqual([
      ['first', 'completed', 1, 'done by the dead node'],
      ['second', 'completed', 2, 'second done'],
    ]);
    expect(server.requests).toHaveLength(1);
    // One run record for the job, whatever ran it.
    expect((await node.store.packageRuns.list({ package: 'chain' })).map((run) => run.id)).toEqual([jobId]);
    await waitFor('the job to be done', async () =>
      ((await postgres.query('SELECT state FROM loom_jobs WHERE id = $1', [jobId], database.name)).rows as { state: string }[])[0]?.state === 'done'
        ? true
        : undefined,
    );
    const attempts = await postgres.query('SELECT attempt, node_id, outcome FROM loom_job_attempts WHERE job_id = $1 ORDER BY attempt', [jobId], database.name);
    expect(attempts.rows).toEqual([
      { attempt: 1, node_id: 'dead-node', outcome: 'lost' },
      { attempt: 2, node_id: node.cluster.id, outcome: 'done' },
    ]);
  }, 60_000);

  it('a job whose run to resume waits while another node runs the binding is tried again later, its one run resumed then and nothing recorded skipped', async () => {
    const database = await postgres.createDatabase({ template });
    await installChain(database.url);

    // Another node, alive for the test's length (seen last an hour ahead), runs the binding.
    await postgres.query(
      `INSERT INTO loom_nodes (id, name, version, schema_version, started_at, last_seen) VALUES ('busy-node', 'busy', 'test', 0, ${SERVER_NOW_MS}, ${SERVER_NOW_MS} + 3600000)`,
      [],
      database.name,
    );
    const going: PackageRunRecord = {
      ...cutOffRun('going'),
      activities: [activity('first', { status: 'running', attempts: 1, startedAt: 5 })],
      startedAt: 5,
      nodeId: 'busy-node',
    };
    const { jobId } = await jobOfDeadNode(database.url, (id) => [cutOffRun(id), going], 5);
    server.script([{ text: 'second done' }]);
    const node = await openNode(database.url);

    // The job's next attempt finds the binding running there, and leaves its run to a later attempt.
    const refused = await waitFor('the attempt to be refused', async () => {
      const rows = (await postgres.query("SELECT error FROM loom_job_attempts WHERE job_id = $1 AND outcome = 'failed'", [jobId], database.name)).rows as {
        error: string;
      }[];
      return rows[0];
    });
    expect(refused.error).toBe(
      `binding "work" of package "chain" is still running on another node (run "going"); run "${jobId}" is resumed at the job's next attempt`,
    );
    expect(server.requests).toHaveLength(0);
    const held = await node.store.packageRuns.get(jobId);
    expect(['running', 'interrupted']).toContain(held?.status);
    expect(held?.activities[0]).toMatchObject({ status: 'completed', output: 'done by the dead node' });

    // Once the other node's run ends, the job's next attempt resumes its run.
    await node.store.packageRuns.update({ ...going, status: 'completed', endedAt: 6 });
    const finished = await waitFor('the run to finish', async () => {
      const run = await node.store.packageRuns.get(jobId);
      return run !== undefined && run.status !== 'running' && run.status !== 'interrupted' ? run : undefined;
    });
    expect(finished.status).toBe('completed');
    expect(finished.activities.map((entry) => [entry.id, entry.status, entry.output])).toEqual([
      ['first', 'completed', 'done by the dead node'],
      ['second', 'completed', 'second done'],
    ]);
    expect(server.requests).toHaveLength(1);
    expect((await node.store.packageRuns.list({ package: 'chain' })).map((run) => [run.id, run.status]).sort()).toEqual(
      [
        [jobId, 'completed'],
        ['going', 'completed'],
      ].sort(),
    );
    const attempts = await waitFor('the job to be done', async () => {
      const rows = (await postgres.query('SELECT attempt, node_id, outcome FROM loom_job_attempts WHERE job_id = $1 ORDER BY attempt', [jobId], database.name))
        .rows as { outcome: string }[];
      return rows.at(-1)?.outcome === 'done' ? rows : undefined;
    });
    expect(attempts).toEqual([
      { attempt: 1, node_id: 'dead-node', outcome: 'lost' },
      { attempt: 2, node_id: node.cluster.id, outcome: 'failed' },
      { attempt: 3, node_id: node.cluster.id, outcome: 'done' },
    ]);
  }, 60_000);

  it('an emitted event starts the bindings it reaches as jobs, one per run and binding, carrying the output', async () => {
    const database = await postgres.createDatabase({ template });
    server.script([{ text: 'spoken words' }, { text: 'noted' }]);
    const node = await openNode(database.url);
    await node.packages.install(
      await writePackage(dir.path, 'talker', { workflows: { say: bindingJson({ type: 'manual' }, [activityJson('speak')], { emit: 'said' }) } }),
    );
    await node.packages.install(
      await writePackage(dir.path, 'listener', { workflows: { hear: bindingJson({ type: 'event', sources: ['talker.said'] }, [activityJson('note')]) } }),
    );
    const said = await node.packages.runtime.run('talker', 'say');
    expect(said).toMatchObject({ status: 'completed', emitted: 'talker.said' });
    const heard = await waitFor('the listener to run', async () => {
      const [run] = await node.store.packageRuns.list({ package: 'listener' });
      return run?.status === 'completed' ? run : undefined;
    });
    const jobs = await postgres.query("SELECT id, dedupe_key, payload FROM loom_jobs WHERE kind = 'package-run'", [], database.name);
    expect(jobs.rows).toEqual([{ id: heard.id, dedupe_key: `emit ${said.id} listener/hear`, payload: expect.any(String) as string }]);
    expect(heard.trigger).toBe('event:talker.said');
    expect(heard.inputs).toEqual({ event: { name: 'talker.said', package: 'talker', binding: 'say', output: 'spoken words' } });
  }, 60_000);

  it("a heartbeat's run is not started beside it on another node while its check is going: one run, the other fires recorded as skipped", async () => {
    const database = await postgres.createDatabase({ template });
    // The check reads a named pipe: it waits until the test writes what it finds.
    const pipe = join(dir.path, 'inbox.fifo');
    execFileSync('mkfifo', [pipe]);
    const leader = await openNode(database.url, join(dir.path, 'a'));
    const other = await openNode(database.url, join(dir.path, 'b'));
    const trigger = { type: 'heartbeat', interval: '1m', check: { tool: 'shell_exec', input: { command: `cat ${pipe}` } } };
    await leader.packages.install(
      await writePackage(dir.path, 'watch', { workflows: { beat: bindingJson(trigger, [activityJson('triage', { cmds: ['cat'] })]) } }),
    );
    await waitFor('the other node to run the package', () => (other.packages.runtime.isActive('watch') ? true : undefined));
    server.script([{ text: 'triaged' }, { text: 'a second run' }]);

    // The beat's job is taken by one of the nodes, whose check then waits on the pipe.
    await leader.clock.advance(60_000);
    const writer = await waitFor('the check to read the pipe', () =>
      open(pipe, constants.O_WRONLY | constants.O_NONBLOCK).catch((error: unknown) => {
        if ((error as NodeJS.ErrnoException).code === 'ENXIO') return undefined;
        throw error;
      }),
    );
    const [job] = (await postgres.query("SELECT id FROM loom_jobs WHERE kind = 'package-run'", [], database.name)).rows as { id: string }[];

    // A person runs the binding on each node meanwhile: neither runs it.
    const manual = await Promise.allSettled([leader.packages.run('watch', 'beat'), other.packages.run('watch', 'beat')]);
    await writer.writeFile('one new mail\n');
    await writer.close();
    expect(manual.map((outcome) => (outcome.status === 'rejected' ? (outcome.reason as { code?: string }).code : outcome.status))).toEqual([
      'BINDING_BUSY',
      'BINDING_BUSY',
    ]);

    const runs = await waitFor('the beat to finish', async () => {
      const found = await other.store.packageRuns.list({ package: 'watch' });
      return found.some((run) => run.status === 'running') ? undefined : found;
    });
    expect(runs.filter((run) => run.status !== 'skipped').map((run) => [run.id, run.trigger, run.status])).toEqual([[job?.id, 'heartbeat', 'completed']]);
    expect(
      runs
        .filter((run) => run.status === 'skipped')
        .map((run) => [run.trigger, run.error])
        .sort(),
    ).toEqual([
      ['manual', 'not started: the previous run of "beat" is still going'],
      ['manual', `not started: the previous run of "beat" is still going on another node (run "${job?.id}")`],
    ]);
    expect(server.requests).toHaveLength(1);
  }, 60_000);

  it('a timed fire on PostgreSQL is enqueued once per instant and run by the queue, the run named by its job', async () => {
    const database = await postgres.createDatabase({ template });
    server.script([{ text: 'beat' }]);
    const node = await openNode(database.url);
    const folder = await writePackage(dir.path, 'beat', { workflows: { check: bindingJson({ type: 'heartbeat', interval: '1m' }, [activityJson('look')]) } });
    await node.packages.install(folder);
    await node.clock.advance(60_000);
    const job = await waitFor('the job to be done', async () => {
      const rows = (await postgres.query("SELECT id, dedupe_key, state FROM loom_jobs WHERE kind = 'package-run'", [], database.name)).rows as {
        id: string;
        dedupe_key: string;
        state: string;
      }[];
      return rows[0]?.state === 'done' ? rows : undefined;
    });
    expect(job).toHaveLength(1);
    expect(job[0]?.dedupe_key).toMatch(/^package beat\/check@\d+$/);
    const runs = await node.store.packageRuns.list({ package: 'beat' });
    expect(runs.map((run) => [run.id, run.trigger, run.status])).toEqual([[job[0]?.id, 'heartbeat', 'completed']]);
    expect((await node.cluster.view()).jobs).toEqual({ queued: 0, running: 0, failed: 0 });
  }, 60_000);
});
