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
}

/** What reads the cluster's state (the HTTP API). */
export interface ClusterReader {
  /**
   * The nodes and the leader now.
   * @throws {StoreError} when the database cannot be reached.
   */
  view(): Promise<ClusterView>;
}
