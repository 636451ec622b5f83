/**
 * The PostgreSQL server's clock, and the rule of a node alive by it (`loom_nodes`), as the SQL the
 * cluster, the store and the copy share: heartbeats, leases and claims are the database's time, so
 * nodes with skewed clocks agree, and every part counts a node gone after the same silence.
 */

/** The server's clock in whole milliseconds, as SQL. */
export const SERVER_NOW_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

/** A node whose heartbeat is older than this is gone, in milliseconds (the cluster's default: it beats every 2 s). */
export const NODE_STALE_AFTER_MS = 10_000;

/**
 * The condition, as SQL, that the `loom_nodes` row `table` (its name or alias) is of a node alive
 * now: not stopped, and its heartbeat fresh ({@link nodeBeatingSql}).
 */
export function nodeAliveSql(table = 'loom_nodes', staleAfterMs = NODE_STALE_AFTER_MS): string {
  return `${table}.stopped_at IS NULL AND ${nodeBeatingSql(table, staleAfterMs)}`;
}

/**
 * The condition, as SQL, that the `loom_nodes` row `table` has a heartbeat no older than
 * `staleAfterMs` on the server's clock, whether or not the node is marked stopped: a node stopping
 * cleanly still ends its work for a while (its channel claims hold until it gives them up, or its
 * heartbeat, no longer renewed, goes stale; node ids are per process).
 */
export function nodeBeatingSql(table = 'loom_nodes', staleAfterMs = NODE_STALE_AFTER_MS): string {
  if (!Number.isSafeInteger(staleAfterMs) || staleAfterMs < 0)
    throw new RangeError(`staleAfterMs (of createPostgresCluster) must be a whole number of milliseconds, got ${staleAfterMs}`);
  return `${table}.last_seen >= ${SERVER_NOW_MS} - ${staleAfterMs}`;
}
