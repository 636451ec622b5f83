/**
 * Several daemons on one database: each a node with a heartbeat, one elected leader that fires
 * the schedules (a PostgreSQL advisory lock), the shared work queue every node takes triggered
 * work from, and the single node of a daemon on SQLite.
 */
export { defaultNodeName } from './cluster-node.ts';
export type { ClusterNode } from './cluster-node.ts';
export { createJobQueue } from './job-queue.ts';
export type { JobQueue, JobQueueOptions } from './job-queue.ts';
export type { JobWorker, JobWorkerOptions } from './job-worker.ts';
export type { EventRelay, EventRelayOptions } from './event-relay.ts';
export { openChannelLeases, openPostgresCluster, openPostgresEventRelay, openPostgresJobWorker, openTurnLeases } from './open-postgres-cluster.ts';
export type { ChannelLeases } from './channel-leases.ts';
export type { TurnLeases } from './turn-leases.ts';
export type { PostgresClusterOptions } from './postgres-cluster.ts';
export { createSingleNode } from './single-node.ts';
export type { SingleNodeOptions } from './single-node.ts';
