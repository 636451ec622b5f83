/**
 * Several daemons on one database: each a node with a heartbeat, one elected leader that fires
 * the schedules (a PostgreSQL advisory lock), and the single node of a daemon on SQLite.
 */
export { defaultNodeName } from './cluster-node.ts';
export type { ClusterNode } from './cluster-node.ts';
export { openPostgresCluster } from './open-postgres-cluster.ts';
export type { PostgresClusterOptions } from './postgres-cluster.ts';
export { createSingleNode } from './single-node.ts';
export type { SingleNodeOptions } from './single-node.ts';
