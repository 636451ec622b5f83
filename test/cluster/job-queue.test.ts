import { setTimeout as delay } from 'node:timers/promises';
import pg from 'pg';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createJobQueue, type JobQueue } from '../../src/cluster/index.ts';
import { createJobWorker, type JobWorker } from '../../src/cluster/job-worker.ts';
import type { ClaimedJob } from '../../src/contracts/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { migratedTemplate, useTestPostgres } from '../support/use-test-postgres.ts';
import { waitFor } from '../support/wait-for.ts';

const postgres = useTestPostgres();
let template: string;
let database: { name: string; url: string };
const pools: pg.Pool[] = [];
const workers: JobWorker[] = [];

beforeAll(async () => {
  template = await migratedTemplate(postgres);
}, 120_000);
afterEach(async () => {
  for (const worker of workers.splice(0)) await worker.stop();
  for (const pool of pools.splice(0)) await pool.end();
});

async function freshDatabase(): Promise<void> {
  database = await postgres.createDatabase({ template });
}

/** The queue's statements for node `nodeId`, on a pool of its own. */
function queueOf(nodeId: string, options: { leaseMs?: number; retryDelayMs?: number } = {}): JobQueue {
  const pool = new pg.Pool({ connectionString: database.url, max: 4 });
  pools.push(pool);
  return createJobQueue({ database: pool, nodeId, ...options });
}

function workerOf(nodeId: string, options: { leaseMs?: number; concurrency?: number; pollMs?: number } = {}): JobWorker {
  const worker = createJobWorker({ url: database.url, target: database.name, nodeId, logger: createSilentLogger(), ...options });
  workers.push(worker);
  return worker;
}

async function rows<T>(text: string, values: unknown[] = []): Promise<T[]> {
  return (await postgres.query(text, values, database.name)).rows as T[];
}

describe('createJobQueue()', () => {
  it('enqueue() with a dedupe key already queued adds nothing and answers the same job', async () => {
    await freshDatabase();
    const queue = queueOf('a');
    const first = await queue.enqueue({ kind: 'echo', payload: { n: 1 }, dedupeKey: 'timer@1000' });
    const again = await queue.enqueue({ kind: 'echo', payload: { n: 2 }, dedupeKey: 'timer@1000' });
    const other = await queue.enqueue({ kind: 'echo', payload: { n: 3 }, dedupeKey: 'timer@2000' });
    const plain = [await queue.enqueue({ kind: 'echo', payload: {} }), await queue.enqueue({ kind: 'echo', payload: {} })];
    expect(first.created).toBe(true);
    expect(again).toEqual({ id: first.id, created: false });
    expect(other.created).toBe(true);
    expect(plain.every((job) => job.created)).toBe(true);
    expect(await rows('SELECT payload, state, attempts FROM loom_jobs WHERE id = $1', [first.id])).toEqual([
      { payload: '{"n":1}', state: 'queued', attempts: 0 },
    ]);
    expect((await rows('SELECT id FROM loom_jobs')).length).toBe(4);
  }, 30_000);

  it('claim() by two nodes at once never gives one job to both; every job is taken once and its attempt recorded', async () => {
    await freshDatabase();
    const a = queueOf('a');
    const b = queueOf('b');
    const enqueued = new Set<string>();
    for (let index = 0; index < 200; index += 1) enqueued.add((await a.enqueue({ kind: 'echo', payload: { index } })).id);
    const taken = new Map<string, string[]>([
      ['a', []],
      ['b', []],
    ]);
    const drain = async (queue: JobQueue): Promise<void> => {
      for (;;) {
        const jobs = await queue.claim(['echo'], 7);
        if (jobs.length === 0) return;
        taken.get(queue.nodeId)?.push(...jobs.map((job) => job.id));
      }
    };
    await Promise.all([drain(a), drain(b), drain(a), drain(b)]);
    const all = [...(taken.get('a') ?? []), ...(taken.get('b') ?? [])];
    expect(all.length).toBe(200);
    expect(new Set(all)).toEqual(enqueued);
    expect(taken.get('a')?.length).toBeGreaterThan(0);
    expect(taken.get('b')?.length).toBeGreaterThan(0);
    const attempts = await rows<{ job_id: string; attempt: number; node_id: string }>('SELECT job_id, attempt, node_id FROM loom_job_attempts');
    expect(attempts.length).toBe(200);
    expect(attempts.every((row) => row.attempt === 1 && taken.get(row.node_id)?.includes(row.job_id))).toBe(true);
    // Nothing is left to take (the leases run).
    expect(await a.claim(['echo'], 10)).toEqual([]);
  }, 30_000);

  it('claim() takes only the kinds asked for, oldest first, and gives the payload back', async () => {
    await freshDatabase();
    const queue = queueOf('a');
    const older = await queue.enqueue({ kind: 'scheduled-message', payload: { agent: 'x', message: 'hi' } });
    await queue.enqueue({ kind: 'echo', payload: {} });
    const newer = await queue.enqueue({ kind: 'scheduled-message', payload: { agent: 'y', message: 'yo' } });
    const jobs = await queue.claim(['scheduled-message'], 10);
    expect(jobs).toEqual([
      { id: older.id, kind: 'scheduled-message', payload: { agent: 'x', message: 'hi' }, attempt: 1, maxAttempts: 3 },
      { id: newer.id, kind: 'scheduled-message', payload: { agent: 'y', message: 'yo' }, attempt: 1, maxAttempts: 3 },
    ]);
  }, 30_000);

  it('a lapsed lease is taken by another node, the lost attempt recorded; the old holder can neither renew, complete nor fail it', async () => {
    await freshDatabase();
    const a = queueOf('a', { leaseMs: 300 });
    const b = queueOf('b', { leaseMs: 30_000 });
    const { id } = await a.enqueue({ kind: 'echo', payload: {} });
    const [first] = await a.claim(['echo'], 1);
    expect(first?.attempt).toBe(1);
    // Held: nobody else takes it.
    expect(await b.claim(['echo'], 1)).toEqual([]);
    // Leases are the database's time: b takes the job once a's has lapsed.
    const [second] = await waitFor("a's lease to lapse and b to take the job", async () => {
      const claimed = await b.claim(['echo'], 1);
      return claimed.length > 0 ? claimed : undefined;
    });
    expect(second).toMatchObject({ id, attempt: 2 });
    expect(await a.renew([first as ClaimedJob])).toEqual(new Set());
    expect(await a.complete(first as ClaimedJob)).toBe(false);
    expect(await a.fail(first as ClaimedJob, 'late')).toBe('lost');
    expect(await b.renew([second as ClaimedJob])).toEqual(new Set([id]));
    expect(await b.complete(second as ClaimedJob)).toBe(true);
    expect(await rows('SELECT state, attempts, lease_owner FROM loom_jobs WHERE id = $1', [id])).toEqual([{ state: 'done', attempts: 2, lease_owner: null }]);
    expect(
      await rows('SELECT attempt, node_id, outcome, finished_at IS NOT NULL AS finished FROM loom_job_attempts WHERE job_id = $1 ORDER BY attempt', [id]),
    ).toEqual([
      { attempt: 1, node_id: 'a', outcome: 'lost', finished: true },
      { attempt: 2, node_id: 'b', outcome: 'done', finished: true },
    ]);
    // Done is done: a second completion changes nothing.
    expect(await b.complete(second as ClaimedJob)).toBe(false);
  }, 30_000);

  it('a failed attempt is retried after a delay, and the job fails for good after its last attempt, with the error', async () => {
    await freshDatabase();
    const queue = queueOf('a', { retryDelayMs: 200 });
    const { id } = await queue.enqueue({ kind: 'echo', payload: {}, maxAttempts: 2 });
    const [first] = await queue.claim(['echo'], 1);
    expect(await queue.fail(first as ClaimedJob, 'boom 1')).toBe('retry');
    // Not due yet.
    expect(await queue.claim(['echo'], 1)).toEqual([]);
    const [second] = await waitFor('the retry to be due', async () => {
      const claimed = await queue.claim(['echo'], 1);
      return claimed.length > 0 ? claimed : undefined;
    });
    expect(second?.attempt).toBe(2);
    expect(await queue.fail(second as ClaimedJob, 'boom 2')).toBe('failed');
    expect(await rows('SELECT state, last_error FROM loom_jobs WHERE id = $1', [id])).toEqual([{ state: 'failed', last_error: 'boom 2' }]);
    expect(await rows('SELECT attempt, outcome, error FROM loom_job_attempts WHERE job_id = $1 ORDER BY attempt', [id])).toEqual([
      { attempt: 1, outcome: 'failed', error: 'boom 1' },
      { attempt: 2, outcome: 'failed', error: 'boom 2' },
    ]);
    expect(await queue.counts()).toEqual({ queued: 0, running: 0, failed: 1 });
  }, 30_000);

  it('a job whose node dies on its last attempt fails for good when its lease lapses, instead of running again', async () => {
    await freshDatabase();
    const a = queueOf('a', { leaseMs: 200 });
    const b = queueOf('b');
    const { id } = await a.enqueue({ kind: 'echo', payload: {}, maxAttempts: 1 });
    expect(await a.claim(['echo'], 1)).toHaveLength(1);
    // b's claims find the lapsed lease and fail the job; none of them takes it.
    const taken = await waitFor('the lease to lapse', async () => {
      const claimed = await b.claim(['echo'], 1);
      if (claimed.length > 0) return claimed;
      return (await rows<{ state: string }>('SELECT state FROM loom_jobs WHERE id = $1', [id]))[0]?.state !== 'running' ? claimed : undefined;
    });
    expect(taken).toEqual([]);
    expect(await rows('SELECT state, last_error FROM loom_jobs WHERE id = $1', [id])).toEqual([
      { state: 'failed', last_error: 'attempt 1 of 1 was lost: its node stopped renewing the lease (it died, or lost the database)' },
    ]);
    expect(await rows('SELECT outcome FROM loom_job_attempts WHERE job_id = $1', [id])).toEqual([{ outcome: 'lost' }]);
  }, 30_000);

  it('release() hands a job back at once, and the released attempt does not count against its attempts', async () => {
    await freshDatabase();
    const a = queueOf('a');
    const b = queueOf('b');
    const { id } = await a.enqueue({ kind: 'echo', payload: {}, maxAttempts: 1 });
    const [first] = await a.claim(['echo'], 1);
    await a.release([first as ClaimedJob]);
    const [second] = await b.claim(['echo'], 1);
    expect(second).toMatchObject({ id, attempt: 2 });
    // Its one counted attempt: failing it fails the job for good.
    expect(await b.fail(second as ClaimedJob, 'boom')).toBe('failed');
    expect(await rows('SELECT attempt, node_id, outcome FROM loom_job_attempts WHERE job_id = $1 ORDER BY attempt', [id])).toEqual([
      { attempt: 1, node_id: 'a', outcome: 'released' },
      { attempt: 2, node_id: 'b', outcome: 'failed' },
    ]);
  }, 30_000);

  it('a job whose payload is not a JSON object fails for good when taken, saying why', async () => {
    await freshDatabase();
    const queue = queueOf('a');
    await postgres.query(
      "INSERT INTO loom_jobs (id, kind, payload, state, max_attempts, run_at, created_at, updated_at) VALUES ('broken', 'echo', '[1]', 'queued', 3, 0, 0, 0)",
      [],
      database.name,
    );
    expect(await queue.claim(['echo'], 1)).toEqual([]);
    const [row] = await rows<{ state: string; last_error: string }>("SELECT state, last_error FROM loom_jobs WHERE id = 'broken'");
    expect(row?.state).toBe('failed');
    expect(row?.last_error).toMatch(/^cannot run job "broken": its payload is not a JSON object/);
  }, 30_000);
});

describe('createJobWorker()', () => {
  it('runs a job as soon as it is enqueued (told by NOTIFY, not by its poll), and completes it', async () => {
    await freshDatabase();
    const worker = workerOf('a', { pollMs: 60_000 });
    const seen: ClaimedJob[] = [];
    worker.handle('scheduled-message', (job) => {
      seen.push(job);
      return Promise.resolve();
    });
    await worker.start();
    const started = Date.now();
    const { id } = await worker.enqueue({ kind: 'scheduled-message', payload: { agent: 'x', message: 'hi' } });
    await waitFor('the job to be done', async () => (await rows<{ state: string }>('SELECT state FROM loom_jobs WHERE id = $1', [id]))[0]?.state === 'done');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(seen.map((job) => job.payload)).toEqual([{ agent: 'x', message: 'hi' }]);
  }, 30_000);

  it('runs at most `concurrency` jobs at once, renews their leases past the lease length, and a handler that throws fails the attempt', async () => {
    await freshDatabase();
    const worker = workerOf('a', { leaseMs: 300, concurrency: 2, pollMs: 50 });
    let now = 0;
    let most = 0;
    worker.handle('scheduled-message', async (job) => {
      now += 1;
      most = Math.max(most, now);
      try {
        await delay(500);
        if (job.payload['fail'] === true) throw new Error('the agent is gone');
      } finally {
        now -= 1;
      }
    });
    await worker.start();
    const ok = await Promise.all([1, 2, 3].map(() => worker.enqueue({ kind: 'scheduled-message', payload: {} })));
    const bad = await worker.enqueue({ kind: 'scheduled-message', payload: { fail: true }, maxAttempts: 1 });
    await waitFor('every job to end', async () => (await rows("SELECT id FROM loom_jobs WHERE state IN ('done', 'failed')")).length === 4);
    expect(most).toBe(2);
    // Each ran past its 300 ms lease once, without being taken again.
    for (const job of ok) expect(await rows('SELECT state, attempts FROM loom_jobs WHERE id = $1', [job.id])).toEqual([{ state: 'done', attempts: 1 }]);
    expect(await rows('SELECT state, attempts, last_error FROM loom_jobs WHERE id = $1', [bad.id])).toEqual([
      { state: 'failed', attempts: 1, last_error: 'the agent is gone' },
    ]);
  }, 30_000);

  it('stop() aborts the running handlers and hands their jobs back, and another node runs them', async () => {
    await freshDatabase();
    const a = workerOf('a', { pollMs: 50 });
    const aborted: string[] = [];
    a.handle(
      'scheduled-message',
      (job, signal) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener('abort', () => {
            aborted.push(job.id);
            reject(signal.reason as Error);
          }),
        ),
    );
    await a.start();
    const { id } = await a.enqueue({ kind: 'scheduled-message', payload: {} });
    await waitFor(
      'the job to run on node a',
      async () => (await rows<{ lease_owner: string | null }>('SELECT lease_owner FROM loom_jobs WHERE id = $1', [id]))[0]?.lease_owner === 'a',
    );
    await a.stop();
    expect(aborted).toEqual([id]);
    const b = workerOf('b', { pollMs: 50 });
    b.handle('scheduled-message', () => Promise.resolve());
    await b.start();
    await waitFor(
      'node b to finish the job',
      async () => (await rows<{ state: string }>('SELECT state FROM loom_jobs WHERE id = $1', [id]))[0]?.state === 'done',
    );
    expect(await rows('SELECT attempt, node_id, outcome FROM loom_job_attempts WHERE job_id = $1 ORDER BY attempt', [id])).toEqual([
      { attempt: 1, node_id: 'a', outcome: 'released' },
      { attempt: 2, node_id: 'b', outcome: 'done' },
    ]);
  }, 30_000);
});
