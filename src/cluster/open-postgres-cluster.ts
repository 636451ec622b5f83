import type { ChannelLeases, ChannelLeasesOptions } from './channel-leases.ts';
import type { ClusterNode } from './cluster-node.ts';
import type { EventRelay, EventRelayOptions } from './event-relay.ts';
import type { JobWorker, JobWorkerOptions } from './job-worker.ts';
import type { PostgresClusterOptions } from './postgres-cluster.ts';
import type { TurnLeases, TurnLeasesOptions } from './turn-leases.ts';

// `pg` loads with the first call: a daemon on SQLite never holds it.

/** Creates a node of daemons sharing a PostgreSQL database (see `postgres-cluster.ts`). */
export async function openPostgresCluster(options: PostgresClusterOptions): Promise<ClusterNode> {
  const { createPostgresCluster } = await import('./postgres-cluster.ts');
  return createPostgresCluster(options);
}

/** Creates a node's side of the shared work queue on a PostgreSQL database (see `job-worker.ts`). */
export async function openPostgresJobWorker(options: JobWorkerOptions): Promise<JobWorker> {
  const { createJobWorker } = await import('./job-worker.ts');
  return createJobWorker(options);
}

/** Creates a node's relay of the events other nodes record (see `event-relay.ts`). */
export async function openPostgresEventRelay(options: EventRelayOptions): Promise<EventRelay> {
  const { createEventRelay } = await import('./event-relay.ts');
  return createEventRelay(options);
}

/** Creates a node's leases on the turns it runs, and its takeover of other nodes' lapsed turns, on a PostgreSQL database (see `turn-leases.ts`). */
export async function openTurnLeases(options: TurnLeasesOptions): Promise<TurnLeases> {
  const { createTurnLeases } = await import('./turn-leases.ts');
  return createTurnLeases(options);
}

/** Creates a node's leases on the channels that poll their platforms, on a PostgreSQL database (see `channel-leases.ts`). */
export async function openChannelLeases(options: ChannelLeasesOptions): Promise<ChannelLeases> {
  const { createChannelLeases } = await import('./channel-leases.ts');
  return createChannelLeases(options);
}
