import pg from 'pg';
import type { Logger } from '../contracts/index.ts';
import { messageOf } from '../errors/index.ts';
import { DEFAULT_TURN_LEASE_MS, SERVER_NOW_MS as NOW_MS } from '../store/index.ts';

/** How often a node looks for turns whose lease lapsed, in milliseconds (a third of the lease when that is shorter). */
export const DEFAULT_TURN_POLL_MS = 1_000;

/** How many lapsed turns a node takes over at one look. */
const TAKE_OVER_LIMIT = 16;

/** The shortest time a statement may wait for its answer, in milliseconds (else a lease, when longer). */
const MIN_STATEMENT_TIMEOUT_MS = 5_000;

/** Extends this node's leases on the turns it runs ($1), returning those it still holds. */
const RENEW_SQL = `
  UPDATE turn_journal SET lease_until = ${NOW_MS} + $3
  WHERE id = ANY($1::text[]) AND state = 'running' AND node_id = $2
  RETURNING id`;

/**
 * Takes over running turns whose lease lapsed (or that no node holds), oldest first: each row
 * locked and skipped when another node's statement holds it (`FOR UPDATE SKIP LOCKED`), so exactly
 * one node takes each turn; it answers the node that held each.
 */
const TAKE_OVER_SQL = `
  WITH lapsed AS (
    SELECT id, node_id FROM turn_journal
    WHERE state = 'running' AND (lease_until IS NULL OR lease_until < ${NOW_MS})
    ORDER BY received_at, insert_order
    FOR UPDATE SKIP LOCKED
    LIMIT $3
  ), taken AS (
    UPDATE turn_journal t SET node_id = $1, lease_until = ${NOW_MS} + $2
    FROM lapsed WHERE t.id = lapsed.id
    RETURNING t.id, lapsed.node_id AS previous, t.received_at, t.insert_order
  )
  SELECT id, previous FROM taken ORDER BY received_at, insert_order`;

/** What the lease statements run on. */
export type TurnLeaseDatabase = Pick<pg.Pool, 'query'>;

/** A turn this node took over, and the node that held it (null: none did). */
export interface TakenTurn {
  id: string;
  previous: string | null;
}

/**
 * The statements of a node's leases on journaled turns (`turn_journal.node_id`, `lease_until`;
 * PostgreSQL schema 12). The store records each turn leased to the node that records it; these
 * renew and take over.
 */
export interface TurnLeaseQueue {
  /** Extends the leases this node holds on `turnIds`; answers the ids it still holds (the others were taken over, or are not recorded yet). */
  renew(turnIds: readonly string[]): Promise<Set<string>>;
  /** Takes over up to `limit` running turns whose lease lapsed, leased to this node now. */
  takeOver(limit?: number): Promise<TakenTurn[]>;
}

/** Creates the lease statements of `nodeId` on `database`, leases lasting `leaseMs`. */
export function createTurnLeaseQueue(database: TurnLeaseDatabase, nodeId: string, leaseMs: number): TurnLeaseQueue {
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 100) throw new Error(`cannot lease turns: leaseMs must be an integer of at least 100, got ${leaseMs}`);
  return {
    async renew(turnIds) {
      if (turnIds.length === 0) return new Set();
      const result = await database.query<{ id: string }>(RENEW_SQL, [[...turnIds], nodeId, leaseMs]);
      return new Set(result.rows.map((row) => row.id));
    },
    async takeOver(limit = TAKE_OVER_LIMIT) {
      const result = await database.query<TakenTurn>(TAKE_OVER_SQL, [nodeId, leaseMs, limit]);
      return result.rows.map((row) => ({ id: row.id, previous: row.previous }));
    },
  };
}

/** What {@link createTurnLeases} needs. */
export interface TurnLeasesOptions {
  /** The store's database (`postgres://…`). */
  url: string;
  /** The URL without its password, for messages. */
  target: string;
  /** This node's id: the store records the turns it runs under it (the store's origin). */
  nodeId: string;
  logger: Logger;
  /** How long a lease lasts unrenewed (`[cluster] turn_lease_seconds`); renewed every third of it. */
  leaseMs?: number;
  /** How often to look for lapsed turns (1 s by default, at most a third of the lease). */
  pollMs?: number;
  /** The journal ids of the turns this process runs or holds queued now (`Kernel.journaledTurns`). */
  held: () => readonly string[];
  /**
   * Resumes a turn this node took over (`Kernel.resumeTurn`). Absent, this process takes no turn
   * over (a CLI command running a turn on the shared store): it only renews its own.
   */
  resume?: (turnId: string) => Promise<boolean>;
  connectTimeoutMs?: number;
}

/** A node's leases on the turns it runs, and its takeover of other nodes' lapsed turns. */
export interface TurnLeases {
  readonly queue: TurnLeaseQueue;
  /** Starts renewing (every third of the lease) and, with `resume`, looking for lapsed turns (at once, then every `pollMs`). */
  start(): void;
  /** Stops both and closes its connections. Idempotent. */
  stop(): Promise<void>;
}

/**
 * The leases of one node on its journaled turns (decision 0061). Every third of the lease it
 * renews those of the turns it runs (`held`); a node that dies stops renewing. Every `pollMs` it
 * takes over the turns whose lease lapsed (exactly one node wins each) and resumes each from its
 * journal (`resume`), as a daemon resumes its own at start. A turn that is lost here (taken over
 * after this node failed to renew in time) cannot be written here any more: the store refuses
 * its steps and its commit (`TURN_TAKEN_OVER`).
 */
export function createTurnLeases(options: TurnLeasesOptions): TurnLeases {
  const { url, target, nodeId, held, resume } = options;
  const logger = options.logger.child({ subsystem: 'turn-leases' });
  const leaseMs = options.leaseMs ?? DEFAULT_TURN_LEASE_MS;
  const renewMs = Math.max(50, Math.floor(leaseMs / 3));
  const pollMs = Math.min(options.pollMs ?? DEFAULT_TURN_POLL_MS, renewMs);
  // A statement unanswered for a whole lease is of no use: the lease it renews has lapsed.
  const pool = new pg.Pool({
    connectionString: url,
    max: 2,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    query_timeout: Math.max(leaseMs, MIN_STATEMENT_TIMEOUT_MS),
    application_name: 'loom-turn-leases',
  });
  pool.on('error', (error) => logger.warn({ err: error.message }, 'lost an idle connection of the turn leases; another opens when needed'));
  const queue = createTurnLeaseQueue(pool, nodeId, leaseMs);
  const timers: NodeJS.Timeout[] = [];
  let renewing: Promise<void> | undefined;
  let looking: Promise<void> | undefined;
  let failing = { renew: false, look: false };
  let stopped = false;

  /** Logs a failure once until the next success. */
  function failed(kind: 'renew' | 'look', error: unknown, text: string): void {
    if (!failing[kind]) logger.warn({ err: messageOf(error), database: target }, text);
    failing = { ...failing, [kind]: true };
  }

  async function renew(): Promise<void> {
    const ids = held();
    try {
      await queue.renew(ids);
      failing.renew = false;
    } catch (error) {
      failed('renew', error, `could not renew the leases of ${ids.length} turn(s); another node takes them over once they lapse`);
    }
  }

  async function look(): Promise<void> {
    if (resume === undefined) return;
    try {
      const taken = await queue.takeOver();
      failing.look = false;
      for (const turn of taken) {
        if (stopped) return;
        // One of its own, still under way here (its renewals failed a while, the database away):
        // taken back, it is renewed again, and must not run twice.
        if (held().includes(turn.id)) continue;
        logger.info(
          { turnId: turn.id, from: turn.previous },
          `took over turn "${turn.id}"${turn.previous === null ? '' : ` from node ${turn.previous}`}: its lease lapsed; resuming it from its journal`,
        );
        // A turn that cannot be resumed here keeps the lease unrenewed: it lapses again, and is taken over again.
        await resume(turn.id).catch((error: unknown) =>
          logger.warn({ err: messageOf(error), turnId: turn.id }, `could not resume turn "${turn.id}" taken over`),
        );
      }
    } catch (error) {
      failed('look', error, `could not look for turns whose lease lapsed; trying again in ${pollMs} ms`);
    }
  }

  return {
    queue,

    start() {
      if (stopped || timers.length > 0) return;
      // Each runs once at a time: a tick while the last is still waiting for its answer does nothing.
      const tick = (kind: 'renew' | 'look'): void => {
        if (stopped) return;
        if (kind === 'renew') renewing ??= renew().finally(() => (renewing = undefined));
        else looking ??= look().finally(() => (looking = undefined));
      };
      timers.push(setInterval(() => tick('renew'), renewMs));
      if (resume !== undefined) timers.push(setInterval(() => tick('look'), pollMs));
      for (const timer of timers) timer.unref();
      tick('look');
    },

    async stop() {
      if (stopped) return;
      stopped = true;
      for (const timer of timers) clearInterval(timer);
      await Promise.allSettled([renewing, looking]);
      await pool.end().catch(() => undefined);
    },
  };
}
