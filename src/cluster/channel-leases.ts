import pg from 'pg';
import type { Logger } from '../contracts/index.ts';
import { SERVER_NOW_MS as NOW_MS } from '../store/index.ts';

/**
 * Takes the lease on a channel, or renews it: in one statement, so that of two nodes asking at
 * once exactly one gets it. A row comes back only when this node holds the lease now (it was
 * free, lapsed, or already this node's).
 */
const ACQUIRE_SQL = `
  INSERT INTO loom_channel_leases (channel, node_id, lease_until) VALUES ($1, $2, ${NOW_MS} + $3)
  ON CONFLICT (channel) DO UPDATE SET node_id = EXCLUDED.node_id, lease_until = EXCLUDED.lease_until
  WHERE loom_channel_leases.node_id = EXCLUDED.node_id OR loom_channel_leases.lease_until < ${NOW_MS}
  RETURNING node_id`;

/** What {@link createChannelLeases} needs. */
export interface ChannelLeasesOptions {
  /** The store's database (`postgres://…`). */
  url: string;
  /** This node's id: the lease is recorded under it. */
  nodeId: string;
  /** How long a lease lasts unrenewed (`[cluster] channel_lease_seconds`). */
  leaseMs: number;
  logger: Logger;
  connectTimeoutMs?: number;
}

/** A node's leases on the channels that poll their platforms (`loom_channel_leases`, PostgreSQL schema 12; decision 0061). */
export interface ChannelLeases {
  readonly leaseMs: number;
  /** Takes or renews the lease on `channel`; false when another node holds it. */
  acquire(channel: string): Promise<boolean>;
  /** Gives up this node's lease on `channel`, if it holds it. */
  release(channel: string): Promise<void>;
  /** Closes its connections. */
  close(): Promise<void>;
}

/** Creates the channel leases of `nodeId` on a pool of its own (one connection at most). */
export function createChannelLeases(options: ChannelLeasesOptions): ChannelLeases {
  const { nodeId, leaseMs } = options;
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 100) throw new Error(`cannot lease channels: leaseMs must be an integer of at least 100, got ${leaseMs}`);
  // A statement unanswered for a whole lease is of no use: the lease it renews has lapsed.
  const pool = new pg.Pool({
    connectionString: options.url,
    max: 1,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    query_timeout: Math.max(leaseMs, 5_000),
    application_name: 'loom-channel-leases',
  });
  pool.on('error', (error) => options.logger.warn({ err: error.message }, 'lost an idle connection of the channel leases; another opens when needed'));
  return {
    leaseMs,
    async acquire(channel) {
      const result = await pool.query(ACQUIRE_SQL, [channel, nodeId, leaseMs]);
      return result.rows.length === 1;
    },
    async release(channel) {
      await pool.query('DELETE FROM loom_channel_leases WHERE channel = $1 AND node_id = $2', [channel, nodeId]);
    },
    close: () => pool.end().catch(() => undefined),
  };
}
