import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { z } from 'zod';
import type { ClaimedJob, JobCounts, JobKind, JobRequest, JsonObject } from '../contracts/index.ts';
import { inTransaction, SERVER_NOW_MS as NOW_MS } from '../store/index.ts';
import { messageOf } from '../errors/index.ts';

/** How long a node holds a job it took before another node may take it again, unless renewed, in milliseconds. */
export const DEFAULT_JOB_LEASE_MS = 30_000;

/** How many attempts a job gets (taken and failed, or lost with its node) before it fails for good. */
export const DEFAULT_JOB_MAX_ATTEMPTS = 3;

/** How long a failed attempt's job waits before it may be taken again, doubled at each attempt, in milliseconds. */
export const DEFAULT_JOB_RETRY_DELAY_MS = 1_000;

/** The longest wait before a retry, in milliseconds. */
const MAX_RETRY_DELAY_MS = 60_000;

/** How many jobs one node runs at once, unless told otherwise. */
export const DEFAULT_JOB_CONCURRENCY = 8;

/** How often a node looks for jobs without being told of one (lapsed leases, retries due, a lost notification), in milliseconds. */
export const DEFAULT_JOB_POLL_MS = 1_000;

/** The channel a node is told on (`NOTIFY loom_jobs`, empty payload) that a job may be taken. */
export const JOB_CHANNEL = 'loom_jobs';

/** What the queue's statements run on: a pool (each call may take another connection). */
export type JobDatabase = Pick<pg.Pool, 'query' | 'connect'>;

/** What {@link createJobQueue} needs. */
export interface JobQueueOptions {
  database: JobDatabase;
  /** The node taking jobs (its leases and attempts are recorded under it). */
  nodeId: string;
  leaseMs?: number;
  retryDelayMs?: number;
}

/** How {@link JobQueue.fail} left the job. */
export type FailOutcome = 'retry' | 'failed' | 'lost';

/**
 * The work queue's statements, for one node (`loom_jobs`, `loom_job_attempts`). Every state change
 * that needs the job's lease holds only while this node still holds it (same owner, same attempt):
 * a node that lost a job to another changes nothing.
 */
export interface JobQueue {
  readonly nodeId: string;
  readonly leaseMs: number;
  /** Adds a job, or answers the job its dedupe key names; tells waiting nodes (`NOTIFY loom_jobs`). */
  enqueue(request: JobRequest): Promise<{ id: string; created: boolean }>;
  /**
   * Takes up to `limit` jobs of `kinds`, oldest first: queued ones due now, and running ones whose
   * lease lapsed (their attempt is recorded `lost`). In one short transaction, with `FOR UPDATE
   * SKIP LOCKED`, so two nodes never take the same job. Each is leased to this node and its
   * attempt recorded. A lapsed job with no attempts left fails instead.
   */
  claim(kinds: readonly JobKind[], limit: number): Promise<ClaimedJob[]>;
  /** Extends the leases of the jobs this node still holds; returns the ids of those (the rest were lost). */
  renew(jobs: readonly Pick<ClaimedJob, 'id' | 'attempt'>[]): Promise<Set<string>>;
  /** Marks the job done; false when this node no longer holds it (another node took it): nothing changes then. */
  complete(job: Pick<ClaimedJob, 'id' | 'attempt'>): Promise<boolean>;
  /** Records the failed attempt: the job waits for a retry, or fails for good when it has no attempts left; `lost` when this node no longer holds it. */
  fail(job: Pick<ClaimedJob, 'id' | 'attempt'>, error: string): Promise<FailOutcome>;
  /** Hands jobs this node holds back to the queue (a clean stop): the attempt is recorded `released` and does not count. */
  release(jobs: readonly Pick<ClaimedJob, 'id' | 'attempt'>[]): Promise<void>;
  /** Which of `ids` are jobs. */
  jobIds(ids: readonly string[]): Promise<Set<string>>;
  /** How many jobs wait, run and failed. */
  counts(): Promise<JobCounts>;
}

const JsonObjectSchema = z.record(z.string(), z.unknown());

const ClaimedRowSchema = z.object({
  id: z.string(),
  kind: z.enum(['package-run', 'scheduled-message', 'echo']),
  payload: z.string(),
  attempts: z.number().int(),
  max_attempts: z.number().int(),
});

/** Lapsed jobs that have no attempts left: failed, their attempt recorded lost. */
const EXPIRE_SQL = `
  WITH dead AS (
    SELECT id FROM loom_jobs
    WHERE state = 'running' AND lease_until < ${NOW_MS} AND attempts - released >= max_attempts AND kind = ANY($1::text[])
    FOR UPDATE SKIP LOCKED
  ), lost AS (
    UPDATE loom_job_attempts a SET finished_at = ${NOW_MS}, outcome = 'lost', error = 'its node stopped renewing the lease (it died, or lost the database)'
    FROM dead WHERE a.job_id = dead.id AND a.finished_at IS NULL
    RETURNING a.job_id
  )
  UPDATE loom_jobs j SET state = 'failed', lease_owner = NULL, lease_until = NULL, updated_at = ${NOW_MS},
    last_error = 'attempt ' || j.attempts || ' of ' || j.max_attempts || ' was lost: its node stopped renewing the lease (it died, or lost the database)'
  FROM dead WHERE j.id = dead.id`;

const CLAIM_SQL = `
  WITH picked AS (
    SELECT id FROM loom_jobs
    WHERE kind = ANY($1::text[])
      AND ((state = 'queued' AND run_at <= ${NOW_MS}) OR (state = 'running' AND lease_until < ${NOW_MS} AND attempts - released < max_attempts))
    ORDER BY created_at, id
    FOR UPDATE SKIP LOCKED
    LIMIT $2
  ), lost AS (
    UPDATE loom_job_attempts a SET finished_at = ${NOW_MS}, outcome = 'lost', error = 'its node stopped renewing the lease (it died, or lost the database)'
    FROM picked WHERE a.job_id = picked.id AND a.finished_at IS NULL
    RETURNING a.job_id
  )
  UPDATE loom_jobs j SET state = 'running', lease_owner = $3, lease_until = ${NOW_MS} + $4, attempts = j.attempts + 1, updated_at = ${NOW_MS}
  FROM picked WHERE j.id = picked.id
  RETURNING j.id, j.kind, j.payload, j.attempts, j.max_attempts`;

const ATTEMPT_SQL = `
  INSERT INTO loom_job_attempts (job_id, attempt, node_id, started_at)
  SELECT id, attempt, $3, ${NOW_MS} FROM unnest($1::text[], $2::int[]) AS claimed (id, attempt)`;

/** The jobs (id, attempt) this node holds, as a relation of the statement's parameters $1 and $2. */
const HELD = 'unnest($1::text[], $2::int[]) AS held (id, attempt)';

/** Creates the queue's statements for `nodeId` on `database` (see {@link JobQueue}). */
export function createJobQueue(options: JobQueueOptions): JobQueue {
  const { database, nodeId } = options;
  const leaseMs = options.leaseMs ?? DEFAULT_JOB_LEASE_MS;
  const retryDelayMs = options.retryDelayMs ?? DEFAULT_JOB_RETRY_DELAY_MS;
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 100)
    throw new Error(`cannot create the job queue: leaseMs must be an integer of at least 100, got ${leaseMs}`);

  const columns = (jobs: readonly Pick<ClaimedJob, 'id' | 'attempt'>[]): [string[], number[]] => [jobs.map((job) => job.id), jobs.map((job) => job.attempt)];

  return {
    nodeId,
    leaseMs,

    async enqueue(request) {
      const maxAttempts = request.maxAttempts ?? DEFAULT_JOB_MAX_ATTEMPTS;
      if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1)
        throw new Error(`cannot enqueue a "${request.kind}" job: maxAttempts must be a positive integer, got ${maxAttempts}`);
      const id = randomUUID();
      const inserted = await database.query<{ id: string }>(
        `WITH added AS (
           INSERT INTO loom_jobs (id, kind, payload, dedupe_key, state, attempts, max_attempts, released, run_at, created_at, updated_at)
           VALUES ($1, $2, $3, $4, 'queued', 0, $5, 0, ${NOW_MS}, ${NOW_MS}, ${NOW_MS})
           ON CONFLICT (dedupe_key) DO NOTHING
           RETURNING id
         )
         SELECT id, pg_notify('${JOB_CHANNEL}', '') FROM added`,
        [id, request.kind, JSON.stringify(request.payload), request.dedupeKey ?? null, maxAttempts],
      );
      if (inserted.rows.length === 1) return { id, created: true };
      const found = await database.query<{ id: string }>('SELECT id FROM loom_jobs WHERE dedupe_key = $1', [request.dedupeKey ?? null]);
      const existing = found.rows[0]?.id;
      // Deleted between the two statements (finished long ago, cleaned up): the instant is past anyway.
      if (existing === undefined)
        throw new Error(`cannot enqueue the "${request.kind}" job "${request.dedupeKey ?? ''}": its key was taken, and the job is gone`);
      return { id: existing, created: false };
    },

    async claim(kinds, limit) {
      if (limit <= 0 || kinds.length === 0) return [];
      return inTransaction(database, async (client) => {
        await client.query(EXPIRE_SQL, [kinds]);
        const claimed = await client.query(CLAIM_SQL, [kinds, limit, nodeId, leaseMs]);
        const rows = claimed.rows.map((row) => ClaimedRowSchema.parse(row));
        if (rows.length === 0) return [];
        await client.query(ATTEMPT_SQL, [rows.map((row) => row.id), rows.map((row) => row.attempts), nodeId]);
        const jobs: ClaimedJob[] = [];
        for (const row of rows) {
          const payload = parsePayload(row.payload);
          if (typeof payload === 'string') {
            // No attempt could read it: it fails for good at once.
            const error = `cannot run job "${row.id}": its payload is not a JSON object (${payload})`;
            await client.query(
              `UPDATE loom_jobs SET state = 'failed', lease_owner = NULL, lease_until = NULL, last_error = $2, updated_at = ${NOW_MS} WHERE id = $1`,
              [row.id, error],
            );
            await client.query(`UPDATE loom_job_attempts SET finished_at = ${NOW_MS}, outcome = 'failed', error = $3 WHERE job_id = $1 AND attempt = $2`, [
              row.id,
              row.attempts,
              error,
            ]);
            continue;
          }
          jobs.push({ id: row.id, kind: row.kind, payload, attempt: row.attempts, maxAttempts: row.max_attempts });
        }
        return jobs;
      });
    },

    async renew(jobs) {
      if (jobs.length === 0) return new Set();
      const result = await database.query<{ id: string }>(
        `UPDATE loom_jobs j SET lease_until = ${NOW_MS} + $4, updated_at = ${NOW_MS}
         FROM ${HELD} WHERE j.id = held.id AND j.attempts = held.attempt AND j.state = 'running' AND j.lease_owner = $3
         RETURNING j.id`,
        [...columns(jobs), nodeId, leaseMs],
      );
      return new Set(result.rows.map((row) => row.id));
    },

    async complete(job) {
      const result = await database.query(
        `WITH done AS (
           UPDATE loom_jobs SET state = 'done', lease_owner = NULL, lease_until = NULL, updated_at = ${NOW_MS}
           WHERE id = $1 AND attempts = $2 AND state = 'running' AND lease_owner = $3
           RETURNING id
         )
         UPDATE loom_job_attempts a SET finished_at = ${NOW_MS}, outcome = 'done' FROM done WHERE a.job_id = done.id AND a.attempt = $2`,
        [job.id, job.attempt, nodeId],
      );
      return result.rowCount === 1;
    },

    async fail(job, error) {
      const delay = Math.min(MAX_RETRY_DELAY_MS, retryDelayMs * 2 ** Math.max(0, job.attempt - 1));
      const result = await database.query<{ state: string }>(
        `WITH failed AS (
           UPDATE loom_jobs SET state = CASE WHEN attempts - released >= max_attempts THEN 'failed' ELSE 'queued' END,
             run_at = ${NOW_MS} + $4, lease_owner = NULL, lease_until = NULL, last_error = $5, updated_at = ${NOW_MS}
           WHERE id = $1 AND attempts = $2 AND state = 'running' AND lease_owner = $3
           RETURNING id, state
         ), recorded AS (
           UPDATE loom_job_attempts a SET finished_at = ${NOW_MS}, outcome = 'failed', error = $5 FROM failed WHERE a.job_id = failed.id AND a.attempt = $2
         )
         SELECT state FROM failed`,
        [job.id, job.attempt, nodeId, delay, error],
      );
      const state = result.rows[0]?.state;
      return state === undefined ? 'lost' : state === 'failed' ? 'failed' : 'retry';
    },

    async release(jobs) {
      if (jobs.length === 0) return;
      await database.query(
        `WITH back AS (
           UPDATE loom_jobs j SET state = 'queued', released = j.released + 1, run_at = ${NOW_MS}, lease_owner = NULL, lease_until = NULL, updated_at = ${NOW_MS}
           FROM ${HELD} WHERE j.id = held.id AND j.attempts = held.attempt AND j.state = 'running' AND j.lease_owner = $3
           RETURNING j.id, j.attempts
         ), recorded AS (
           UPDATE loom_job_attempts a SET finished_at = ${NOW_MS}, outcome = 'released', error = 'its node stopped' FROM back WHERE a.job_id = back.id AND a.attempt = back.attempts
         )
         SELECT count(*), pg_notify('${JOB_CHANNEL}', '') FROM back`,
        [...columns(jobs), nodeId],
      );
    },

    async jobIds(ids) {
      if (ids.length === 0) return new Set();
      const result = await database.query<{ id: string }>('SELECT id FROM loom_jobs WHERE id = ANY($1::text[])', [[...ids]]);
      return new Set(result.rows.map((row) => row.id));
    },

    counts: () => readJobCounts(database),
  };
}

/** How many jobs wait, run and failed (what `GET /api/cluster` shows). */
export async function readJobCounts(database: Pick<pg.Pool, 'query'>): Promise<JobCounts> {
  const result = await database.query<{ state: string; count: number }>(
    "SELECT state, count(*)::int AS count FROM loom_jobs WHERE state IN ('queued', 'running', 'failed') GROUP BY state",
  );
  const counts: JobCounts = { queued: 0, running: 0, failed: 0 };
  for (const row of result.rows) if (row.state === 'queued' || row.state === 'running' || row.state === 'failed') counts[row.state] = row.count;
  return counts;
}

/** The payload as an object, or why it is not one. */
function parsePayload(text: string): JsonObject | string {
  try {
    const parsed = JsonObjectSchema.safeParse(JSON.parse(text));
    return parsed.success ? (parsed.data as JsonObject) : parsed.error.message;
  } catch (error) {
    return messageOf(error);
  }
}
