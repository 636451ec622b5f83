import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { ClaimedJob, JobCounts, JobHandler, JobKind, Logger, WorkQueue } from '../contracts/index.ts';
import { messageOf, StoreError } from '../errors/index.ts';
import { createPostgresListener } from './postgres-listener.ts';
import { createJobQueue, DEFAULT_JOB_CONCURRENCY, DEFAULT_JOB_LEASE_MS, DEFAULT_JOB_POLL_MS, JOB_CHANNEL, type JobQueue } from './job-queue.ts';

/** How long a stopping node waits for its jobs to end once told to stop, before it hands them back anyway, in milliseconds. */
export const DEFAULT_JOB_STOP_TIMEOUT_MS = 10_000;

/** The shortest time a statement of the queue may wait for its answer, in milliseconds (else a lease, when longer). */
const MIN_STATEMENT_TIMEOUT_MS = 5_000;

/** The longest wait an `echo` job may ask for, in milliseconds. */
const MAX_ECHO_SLEEP_MS = 60_000;

/** What {@link createJobWorker} needs. */
export interface JobWorkerOptions {
  /** The store's database (`postgres://…`). */
  url: string;
  /** The URL without its password, for messages. */
  target: string;
  /** This node's id: its leases and attempts are recorded under it. */
  nodeId: string;
  logger: Logger;
  leaseMs?: number;
  concurrency?: number;
  pollMs?: number;
  retryDelayMs?: number;
  stopTimeoutMs?: number;
  connectTimeoutMs?: number;
}

/** A node's side of the shared work queue: the {@link WorkQueue} its subsystems use, and the claimer that runs jobs. */
export interface JobWorker extends WorkQueue {
  /** The queue's statements, under this node's id. */
  readonly queue: JobQueue;
  /** Starts taking jobs (of the kinds with a handler): told of new ones by `NOTIFY loom_jobs`, and looking every `pollMs`. */
  start(): Promise<void>;
  /**
   * Stops taking jobs, aborts the handlers running, waits for them (up to `stopTimeoutMs`) and hands
   * back to the queue the jobs that did not finish, so another node takes them at once. Idempotent.
   */
  stop(): Promise<void>;
  /** How many jobs wait, run and failed. */
  counts(): Promise<JobCounts>;
}

/** A job running here. */
interface Running {
  job: ClaimedJob;
  controller: AbortController;
  /**
   * When its lease was last extended, on this process's clock: when the statement that took or
   * renewed it was sent (the database ran it no earlier), so the lease is never thought longer
   * than it is.
   */
  renewedAt: number;
  /** Another node may have it now: its end changes nothing. */
  lost: boolean;
  /** This node is stopping: a handler that ends without finishing hands the job back. */
  stopping: boolean;
  /** Handed back by the stop already (its handler did not end in time): its end changes nothing. */
  handedBack: boolean;
}

/**
 * The claimer of one node (docs/cluster.md "The work queue"): up to `concurrency` jobs at once,
 * each under a lease of `leaseMs` renewed every third of it while its handler runs. A handler
 * that resolves completes its job; one that throws fails the attempt (retried later, up to the
 * job's attempts); one whose lease could not be renewed (another node may have taken the job) is
 * aborted, and its end changes nothing. It takes jobs when `NOTIFY loom_jobs` says one was added
 * (on a connection of its own) and every `pollMs` (for lapsed leases and retries).
 * Runs `echo` jobs itself: they wait `sleep_ms` (at most 60 s) and end.
 */
export function createJobWorker(options: JobWorkerOptions): JobWorker {
  const { url, target, nodeId } = options;
  const logger = options.logger.child({ subsystem: 'jobs' });
  const concurrency = options.concurrency ?? DEFAULT_JOB_CONCURRENCY;
  const pollMs = options.pollMs ?? DEFAULT_JOB_POLL_MS;
  const leaseMs = options.leaseMs ?? DEFAULT_JOB_LEASE_MS;
  const stopTimeoutMs = options.stopTimeoutMs ?? DEFAULT_JOB_STOP_TIMEOUT_MS;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw new Error(`cannot create the job worker: concurrency must be a positive integer, got ${concurrency}`);
  // A statement unanswered for a whole lease is of no use (the lease it takes or renews has
  // lapsed), and one stuck on a connection gone silent would hold up the renewals after it: it
  // fails, and its connection is dropped.
  const pool = new pg.Pool({
    connectionString: url,
    max: Math.min(concurrency, 4) + 1,
    connectionTimeoutMillis: connectTimeoutMs,
    query_timeout: Math.max(leaseMs, MIN_STATEMENT_TIMEOUT_MS),
    application_name: 'loom-jobs',
  });
  pool.on('error', (error) => logger.warn({ err: error.message }, 'lost an idle connection of the job queue; another opens when needed'));
  const queue = createJobQueue({ database: pool, nodeId, leaseMs, ...(options.retryDelayMs === undefined ? {} : { retryDelayMs: options.retryDelayMs }) });
  const handlers = new Map<JobKind, JobHandler>([['echo', echo]]);
  const running = new Map<string, Running>();
  const tasks = new Set<Promise<void>>();
  let started = false;
  let stopped = false;
  let pumping: Promise<void> | undefined;
  let again = false;
  let claimFailing = false;
  let renewing = false;
  let pollTimer: NodeJS.Timeout | undefined;
  let renewTimer: NodeJS.Timeout | undefined;
  // Told of each new job on a connection of its own.
  const listener = createPostgresListener({
    url,
    channel: JOB_CHANNEL,
    applicationName: 'loom-jobs-listen',
    logger,
    meanwhile: `looking for new jobs every ${pollMs} ms until listening again`,
    retryMs: Math.max(pollMs, 2_000),
    connectTimeoutMs,
    onNotification: () => wake(),
  });

  /** Takes jobs while there is room; a call meanwhile makes it look once more. */
  function wake(): void {
    if (!started || stopped) return;
    if (pumping !== undefined) {
      again = true;
      return;
    }
    pumping = pump().finally(() => {
      pumping = undefined;
      if (again) {
        again = false;
        wake();
      }
    });
  }

  async function pump(): Promise<void> {
    try {
      while (!stopped && running.size < concurrency) {
        again = false;
        const room = concurrency - running.size;
        const asked = Date.now();
        const jobs = await queue.claim([...handlers.keys()], room);
        if (claimFailing) logger.info({}, 'takes jobs again');
        claimFailing = false;
        if (stopped) {
          await queue.release(jobs);
          return;
        }
        // Answered after a whole lease (the database did not answer meanwhile): the leases may
        // have lapsed already, so the jobs go back at once rather than run unsure of them.
        if (jobs.length > 0 && Date.now() - asked >= leaseMs) {
          logger.warn({ jobs: jobs.length }, `took ${jobs.length} job(s) in an answer that came after their lease of ${leaseMs} ms; handed them back`);
          await queue.release(jobs);
          return;
        }
        for (const job of jobs) run(job, asked);
        if (jobs.length < room) return;
      }
    } catch (error) {
      if (!claimFailing) logger.warn({ err: messageOf(error), database: target }, `could not take jobs; trying again in ${pollMs} ms`);
      claimFailing = true;
    }
  }

  function run(job: ClaimedJob, takenAt: number): void {
    // Taken again by this node (its lease lapsed while the database could not be reached): the old run is superseded.
    const previous = running.get(job.id);
    if (previous !== undefined) {
      previous.lost = true;
      previous.controller.abort(new Error(`job "${job.id}" was taken again (attempt ${job.attempt})`));
    }
    const handler = handlers.get(job.kind);
    const entry: Running = { job, controller: new AbortController(), renewedAt: takenAt, lost: false, stopping: false, handedBack: false };
    running.set(job.id, entry);
    const jobLogger = logger.child({ job: job.id, kind: job.kind, attempt: job.attempt });
    const task = (async () => {
      let failure: unknown;
      let finished = false;
      try {
        if (handler === undefined) throw new Error(`no handler for jobs of kind "${job.kind}" on this node`);
        await handler(job, entry.controller.signal);
        finished = true;
      } catch (error) {
        failure = error;
      }
      if (running.get(job.id) === entry) running.delete(job.id);
      if (entry.handedBack) return;
      try {
        if (entry.lost) {
          jobLogger.warn({}, `job "${job.id}" (${job.kind}) ended here after its lease was lost: another node may have run it; nothing recorded`);
        } else if (finished) {
          if (!(await queue.complete(job)))
            jobLogger.warn({}, `job "${job.id}" (${job.kind}) finished, but another node had taken it: its completion was refused`);
        } else if (entry.stopping) {
          await queue.release([job]);
        } else {
          const outcome = await queue.fail(job, messageOf(failure));
          const text =
            outcome === 'retry'
              ? 'it will be tried again'
              : outcome === 'failed'
                ? `it failed for good after ${job.attempt} attempt(s)`
                : 'another node had taken it';
          jobLogger.warn(
            { err: messageOf(failure) },
            `job "${job.id}" (${job.kind}) failed on attempt ${job.attempt} of ${job.maxAttempts}: ${messageOf(failure)}; ${text}`,
          );
        }
      } catch (error) {
        jobLogger.error(
          { err: messageOf(error), database: target },
          `could not record the end of job "${job.id}" (${job.kind}); once its lease lapses another node runs it again`,
        );
      }
      wake();
    })();
    tasks.add(task);
    void task.finally(() => tasks.delete(task));
  }

  /**
   * Extends the leases of the jobs running here. A job no longer held is aborted, and so is one
   * whose lease lapsed without a renewal: the database did not answer for a whole lease, even
   * when the renewal sent is still waiting for its answer (a network that stopped carrying
   * bytes, not closed), since another node may have taken it meanwhile.
   */
  async function renew(): Promise<void> {
    abandonLapsed();
    // One renewal at a time: another sent while one waits would only wait behind it, on another connection.
    if (renewing || running.size === 0) return;
    const entries = [...running.values()];
    renewing = true;
    const asked = Date.now();
    try {
      const held = await queue.renew(entries.map((entry) => entry.job));
      for (const entry of entries) {
        if (running.get(entry.job.id) !== entry) continue;
        if (held.has(entry.job.id)) entry.renewedAt = Math.max(entry.renewedAt, asked);
        else abandon(entry, 'another node took it');
      }
    } catch (error) {
      logger.warn({ err: messageOf(error), database: target }, `could not renew the leases of ${entries.length} job(s)`);
      abandonLapsed();
    } finally {
      renewing = false;
    }
  }

  function abandonLapsed(): void {
    const now = Date.now();
    for (const entry of [...running.values()]) if (now - entry.renewedAt >= leaseMs) abandon(entry, 'its lease lapsed without being renewed');
  }

  function abandon(entry: Running, reason: string): void {
    entry.lost = true;
    running.delete(entry.job.id);
    logger.warn({ job: entry.job.id, kind: entry.job.kind }, `stopped job "${entry.job.id}" (${entry.job.kind}): ${reason}`);
    entry.controller.abort(new Error(`job "${entry.job.id}" was lost: ${reason}`));
    wake();
  }

  return {
    queue,

    async enqueue(request) {
      try {
        return await queue.enqueue(request);
      } catch (error) {
        throw new StoreError(`cannot enqueue a "${request.kind}" job on ${target}: ${messageOf(error)}`, {
          cause: error,
          details: { database: target, kind: request.kind },
        });
      }
    },

    handle(kind, handler) {
      handlers.set(kind, handler);
      wake();
    },

    async jobIds(ids) {
      try {
        return await queue.jobIds(ids);
      } catch (error) {
        throw new StoreError(`cannot read the jobs on ${target}: ${messageOf(error)}`, { cause: error, details: { database: target } });
      }
    },

    async counts() {
      try {
        return await queue.counts();
      } catch (error) {
        throw new StoreError(`cannot count the jobs on ${target}: ${messageOf(error)}`, { cause: error, details: { database: target } });
      }
    },

    async start() {
      if (started || stopped) return;
      started = true;
      await listener.start();
      pollTimer = setInterval(wake, pollMs);
      pollTimer.unref();
      renewTimer = setInterval(() => void renew(), Math.max(50, Math.floor(leaseMs / 3)));
      renewTimer.unref();
      wake();
    },

    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(pollTimer);
      clearInterval(renewTimer);
      await listener.stop();
      await pumping;
      for (const entry of running.values()) {
        entry.stopping = true;
        entry.controller.abort(new Error('the daemon is stopping'));
      }
      const deadline = sleep(stopTimeoutMs, undefined, { ref: false });
      await Promise.race([Promise.allSettled([...tasks]), deadline]);
      // Handlers that did not end in time: their jobs go back now (another node runs them again).
      const left = [...running.values()].filter((entry) => !entry.lost);
      running.clear();
      for (const entry of left) entry.handedBack = true;
      await queue
        .release(left.map((entry) => entry.job))
        .catch((error: unknown) =>
          logger.warn({ err: messageOf(error) }, `could not hand back ${left.length} job(s); another node takes them once their leases lapse`),
        );
      await Promise.race([Promise.allSettled([...tasks]), sleep(100, undefined, { ref: false })]);
      await pool.end().catch(() => undefined);
    },
  };
}

/** An `echo` job: waits `sleep_ms` (0 by default), then ends. */
async function echo(job: ClaimedJob, signal: AbortSignal): Promise<void> {
  const requested = job.payload['sleep_ms'];
  const ms = typeof requested === 'number' && Number.isFinite(requested) ? Math.min(Math.max(0, requested), MAX_ECHO_SLEEP_MS) : 0;
  if (ms > 0) await sleep(ms, undefined, { signal });
  signal.throwIfAborted();
}
