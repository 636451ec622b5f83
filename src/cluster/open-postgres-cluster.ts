import type { ClusterNode } from './cluster-node.ts';
import type { PostgresClusterOptions } from './postgres-cluster.ts';

// `pg` loads with the first call: a daemon on SQLite never holds it.

/** Creates a node of daemons sharing a PostgreSQL database (see `postgres-cluster.ts`). */
export async function openPostgresCluster(options: PostgresClusterOptions): Promise<ClusterNode> {
  const { createPostgresCluster } = await import('./postgres-cluster.ts');
  return createPostgresCluster(options);
}
