import { hostname } from 'node:os';
import type { ClusterReader, Leadership } from '../contracts/index.ts';

/**
 * This daemon as a node of its installation: whether it leads (see {@link Leadership}), the view
 * of every node, and its own life (join, say where it listens, leave).
 */
export interface ClusterNode extends Leadership, ClusterReader {
  /** A UUID drawn when the process started. */
  readonly id: string;
  /** `[cluster] node_name`, else `hostname:pid`. */
  readonly name: string;
  /** What the nodes share: one SQLite file (this node alone) or a PostgreSQL database. */
  readonly store: 'sqlite' | 'postgres';
  /**
   * Joins: records the node and makes its first attempt at leadership (resolved once that attempt
   * is decided, so the caller knows whether it leads before it starts anything).
   * @throws {StoreError} when the database cannot be reached.
   */
  start(): Promise<void>;
  /**
   * The node `id` when it is alive now (not stopped, its heartbeat fresh), as {@link view} would
   * show it; undefined when it is gone or unknown. One row read, not the whole view.
   * @throws {StoreError} when the database cannot be reached.
   */
  liveNode(id: string): Promise<{ name: string; url: string | null } | undefined>;
  /**
   * Runs `work` while no other node of the installation runs its own: the kernel's spawns and
   * updates, which judge an agent by its parent's manifest and confine its children, so that no
   * two of them, on any nodes, interleave (decision 0015). Only nodes sharing a database have one:
   * alone on SQLite, the kernel's own order is the installation's.
   * @throws {StoreError} when the database cannot be reached.
   */
  exclusive?<T>(work: () => Promise<T>): Promise<T>;
  /** Records where the node's API listens (shown by `GET /api/cluster`). */
  setUrl(url: string): void;
  /** Leaves: stops leading at once (listeners told), releases the lock and records the stop. Idempotent. */
  stop(): Promise<void>;
}

/** A node's name when `[cluster] node_name` gives none: `hostname:pid`. */
export function defaultNodeName(): string {
  return `${hostname()}:${process.pid}`;
}
