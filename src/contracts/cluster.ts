import type { JsonObject } from './json.ts';

/**
 * Whether this process runs the timed work of the whole installation (agents' schedules, package
 * bindings' cron and heartbeat triggers, resumed background work), and the fence that keeps each
 * instant of that work to one node. One daemon on SQLite is always the leader; daemons sharing a
 * PostgreSQL database elect one with an advisory lock (`src/cluster/`).
 */
export interface Leadership {
  /** Whether this node is the leader now. */
  isLeader(): boolean;
  /**
   * Calls `listener` with each change: `true` when this node becomes the leader, `false` when it
   * stops being it (called at once when its lock connection is lost, before another node can take
   * over). Returns the function that stops the calls.
   */
  subscribe(listener: (leader: boolean) => void): () => void;
  /**
   * Claims the instant `at` (epoch ms) of the timed work named `key` for this node: resolves true
   * at most once per `key` and `at` in the whole cluster, only while this node is the leader, and
   * only for an instant later than every instant of `key` claimed before (by any node), so a new
   * leader never fires again what the old one fired. Resolves false otherwise.
   * @throws {Error} when the claim cannot be made (the database cannot be reached): do not fire.
   */
  claim(key: string, at: number): Promise<boolean>;
  /**
   * Whether another node sharing the store is alive now: then the runs in flight that the store
   * shows may be its own, and a new leader recovers only those of the timed work it took over.
   * False for a daemon alone on its store.
   */
  othersAlive(): Promise<boolean>;
}

/** One node as `GET /api/cluster` shows it. */
export interface ClusterNodeView {
  /** A UUID drawn when the daemon started. */
  id: string;
  /** `[cluster] node_name`, else `hostname:pid`. */
  name: string;
  /** Where its API listens (null until it does). */
  url: string | null;
  /** Its Loom version. */
  version: string;
  started_at: string;
  /** Its last heartbeat. */
  last_seen: string;
  leader: boolean;
  /** Whether it is the node that answered. */
  self: boolean;
  /** False once its heartbeat is older than the threshold, or it stopped. */
  alive: boolean;
}

/** The nodes sharing this node's store, as `GET /api/cluster` and `loom status` show them. */
export interface ClusterView {
  store: 'sqlite' | 'postgres';
  /** The id of the node that answered. */
  self: string;
  /** The id of the leader, null while none is elected (or it is not among the known nodes). */
  leader: string | null;
  /** Live nodes first, then gone ones; each group by name. */
  nodes: ClusterNodeView[];
  /** The shared work queue's jobs now (PostgreSQL; null on SQLite, where triggered work runs in process). */
  jobs: JobCounts | null;
}

/** How many jobs of the shared work queue wait, run, and failed for good. */
export interface JobCounts {
  queued: number;
  running: number;
  failed: number;
}

/**
 * What a job of the shared work queue does: `package-run` runs a package binding (a timed
 * trigger's fire, or an emitted event's chain), `scheduled-message` wakes an agent on its
 * `[schedule]`, `echo` does nothing but wait (`sleep_ms`), to check the queue and measure it.
 */
export type JobKind = 'package-run' | 'scheduled-message' | 'echo';

/** A job to enqueue. */
export interface JobRequest {
  kind: JobKind;
  /** What the job's handler reads; small (it is stored as JSON text). */
  payload: JsonObject;
  /**
   * Names the logical job, unique in the queue: enqueueing a key already there adds nothing and
   * answers the job it names (a timer's instant enqueued twice is one job).
   */
  dedupeKey?: string | undefined;
  /** How many attempts (taken and then failed, or lost with their node) before the job fails for good; 3 by default. */
  maxAttempts?: number | undefined;
}

/** A job as its handler receives it: taken by this node, under a lease it renews while the handler runs. */
export interface ClaimedJob {
  id: string;
  kind: JobKind;
  payload: JsonObject;
  /** 1 for the first time a node took it; more when an attempt failed or its node died. */
  attempt: number;
  maxAttempts: number;
}

/**
 * Runs one job. Resolving completes it; throwing fails the attempt (retried until `maxAttempts`).
 * `signal` aborts when this node stops (the job goes back to the queue) or loses the job's lease
 * (another node may be running it). Work may run more than once (at-least-once): a handler keeps
 * its bookkeeping idempotent, keyed by the job's id.
 */
export type JobHandler = (job: ClaimedJob, signal: AbortSignal) => Promise<void>;

/**
 * The shared work queue as the subsystems that hand it work see it: when several daemons share a
 * PostgreSQL database, triggered work is enqueued there and run by whichever node takes it.
 */
export interface WorkQueue {
  /**
   * Adds a job (or finds the one its `dedupeKey` names); `created` says which.
   * @throws {StoreError} when the database cannot be reached.
   */
  enqueue(request: JobRequest): Promise<{ id: string; created: boolean }>;
  /** Sets what runs jobs of `kind` on this node; a node takes only the kinds it has a handler for. */
  handle(kind: JobKind, handler: JobHandler): void;
  /**
   * Which of `ids` are jobs (a package run started by a job has the job's id): the queue runs them
   * again when their node dies, so nothing else should resume them.
   * @throws {StoreError} when the database cannot be reached.
   */
  jobIds(ids: readonly string[]): Promise<Set<string>>;
}

/** What reads the cluster's state (the HTTP API). */
export interface ClusterReader {
  /**
   * The nodes and the leader now.
   * @throws {StoreError} when the database cannot be reached.
   */
  view(): Promise<ClusterView>;
}
