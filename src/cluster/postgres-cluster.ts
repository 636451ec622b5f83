import pg from 'pg';
import type { ClusterNodeView, ClusterView, JobCounts, Logger } from '../contracts/index.ts';
import { messageOf, StoreError } from '../errors/index.ts';
import type { ClusterNode } from './cluster-node.ts';
import { readJobCounts } from './job-queue.ts';
import { NODE_STALE_AFTER_MS, nodeAliveSql, SERVER_NOW_MS as NOW_MS } from '../store/index.ts';

/**
 * The advisory lock the leader holds for as long as its lock connection lives: `Loom` and `Lead`
 * in ASCII, as the two-key form (`pg_try_advisory_lock(int, int)`), which cannot collide with the
 * migrations' one-key lock.
 */
export const LEADER_LOCK_KEYS = [0x4c6f6f6d, 0x4c656164] as const;

/**
 * The advisory lock a node holds while it spawns or updates an agent (`exclusive`): `Loom` and
 * `Tree` in ASCII, two keys like the leader's and apart from it.
 */
export const LINEAGE_LOCK_KEYS = [0x4c6f6f6d, 0x54726565] as const;

/** How often a node records its heartbeat, in milliseconds. */
export const DEFAULT_HEARTBEAT_MS = 2_000;

/** A node whose heartbeat is older than this is shown as gone, in milliseconds (the store's claims count the same). */
export const DEFAULT_STALE_AFTER_MS = NODE_STALE_AFTER_MS;

/** How often a node that does not lead tries for the lock (and a node that lost its connection reconnects), in milliseconds. */
export const DEFAULT_ELECTION_RETRY_MS = 2_000;

/** How long a statement on the lock connection may take before the connection is taken as lost, in milliseconds. */
export const DEFAULT_LOCK_QUERY_TIMEOUT_MS = 5_000;

/** How long a node waits for another's spawn or update before it gives up (a node hung holding the lock). */
export const DEFAULT_LINEAGE_WAIT_MS = 30_000;

/** Rows of nodes gone longer than this are deleted by the leader. */
const GONE_NODE_RETENTION_MS = 3_600_000;

/** Claimed instants older than this are deleted by the leader (the newest of each timer is all a claim compares with). */
const CLAIM_RETENTION_MS = 86_400_000;

/** Jobs done longer ago than this are deleted by the leader, with their attempts. */
const DONE_JOB_RETENTION_MS = 86_400_000;

/** Jobs failed for good longer ago than this are deleted by the leader, with their attempts. */
const FAILED_JOB_RETENTION_MS = 7 * 86_400_000;

/** What {@link createPostgresCluster} needs. */
export interface PostgresClusterOptions {
  /** The store's database (`postgres://…`). */
  url: string;
  /** The URL without its password, for messages. */
  target: string;
  id: string;
  name: string;
  version: string;
  /** The newest schema version this Loom knows: a node finding a newer one in the database stops leading. */
  schemaVersion: number;
  logger: Logger;
  heartbeatMs?: number;
  staleAfterMs?: number;
  retryMs?: number;
  lockQueryTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** How long `exclusive` waits for another node's spawn or update (default 30 s). */
  lineageWaitMs?: number;
}

/** The advisory lock as `pg_locks` shows it, in this database. */
const LEADER_LOCK_ROW = `locktype = 'advisory' AND classid = ${LEADER_LOCK_KEYS[0]}::oid AND objid = ${LEADER_LOCK_KEYS[1]}::oid AND objsubid = 2 AND granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;

/**
 * Claims an instant, on the lock connection: only while that connection holds the leader lock
 * (checked by the server in the same statement, so a node that lost the lock cannot claim), only
 * once, and only after every instant of the timer claimed before.
 */
const CLAIM_SQL = `
  INSERT INTO loom_timer_fires (timer, at, node_id, claimed_at)
  SELECT $1, $2, $3, ${NOW_MS}
  WHERE EXISTS (SELECT 1 FROM pg_locks WHERE ${LEADER_LOCK_ROW} AND pid = pg_backend_pid())
    AND NOT EXISTS (SELECT 1 FROM loom_timer_fires WHERE timer = $1 AND at >= $2)
  ON CONFLICT DO NOTHING`;

const HEARTBEAT_SQL = `
  INSERT INTO loom_nodes (id, name, url, version, schema_version, lock_pid, started_at, last_seen)
  VALUES ($1, $2, $3, $4, $5, $6, ${NOW_MS}, ${NOW_MS})
  ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, lock_pid = EXCLUDED.lock_pid, last_seen = EXCLUDED.last_seen, stopped_at = NULL`;

interface NodeRow {
  id: string;
  name: string;
  url: string | null;
  version: string;
  lock_pid: number | null;
  started_at: string;
  last_seen: string;
  alive: boolean;
}

/**
 * A node of several daemons sharing one PostgreSQL database (docs/cluster.md). It records a
 * heartbeat in `loom_nodes` every `heartbeatMs` (times from the server's clock), and elects the
 * leader with a session-level advisory lock held on a connection of its own (not the store's
 * pool): the node whose `pg_try_advisory_lock` succeeds leads until that connection ends, which
 * the server notices when the process dies, so another node, trying every `retryMs`, takes over.
 * A leader whose lock connection fails (an error, its end, a statement past
 * `lockQueryTimeoutMs`) stops leading at once. A node that finds the database migrated past the
 * schema it knows stops leading and does not try again (it should be upgraded).
 */
export function createPostgresCluster(options: PostgresClusterOptions): ClusterNode & Required<Pick<ClusterNode, 'exclusive'>> {
  const { url, target, id, name, version, schemaVersion } = options;
  const logger = options.logger.child({ subsystem: 'cluster', node: name });
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const staleAfterMs = options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
  /** A row of `loom_nodes` is of a node alive, as SQL. */
  const alive = nodeAliveSql('loom_nodes', staleAfterMs);
  const retryMs = options.retryMs ?? DEFAULT_ELECTION_RETRY_MS;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const pool = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: connectTimeoutMs, application_name: 'loom-cluster', keepAlive: true });
  const lineageWaitMs = options.lineageWaitMs ?? DEFAULT_LINEAGE_WAIT_MS;
  pool.on('error', (error) => logger.warn({ err: error.message }, 'lost an idle connection of the cluster heartbeat; another opens when needed'));
  const listeners = new Set<(leader: boolean) => void>();
  let lockClient: pg.Client | undefined;
  // Statements on the lock connection, one at a time: node-postgres queues a statement sent while
  // another runs, and warns that it will stop doing so.
  let lockChain: Promise<unknown> = Promise.resolve();
  function onLock<T>(work: () => Promise<T>): Promise<T> {
    const next = lockChain.then(work, work);
    lockChain = next.catch(() => undefined);
    return next;
  }
  let lockPid: number | null = null;
  let leader = false;
  let started = false;
  let stopped = false;
  let outdated = false;
  let nodeUrl: string | null = null;
  let heartbeatTimer: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let heartbeatFailing = false;
  let electing: Promise<void> | undefined;

  function notify(value: boolean): void {
    for (const listener of [...listeners]) {
      try {
        listener(value);
      } catch (error) {
        logger.error({ err: error }, 'a leadership listener failed');
      }
    }
  }

  function stepDown(reason: string): void {
    if (!leader) return;
    leader = false;
    logger.warn({ reason }, `node "${name}" stopped leading: ${reason}; its schedules and timed triggers stopped`);
    notify(false);
  }

  /** Drops the lock connection (which frees the lock if it still held it). */
  function dropLockClient(client: pg.Client, reason: string): void {
    if (client !== lockClient) return;
    lockClient = undefined;
    lockPid = null;
    stepDown(reason);
    client.end().catch(() => undefined);
    scheduleElection();
  }

  function scheduleElection(): void {
    if (stopped || outdated || leader || retryTimer !== undefined) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void elect();
    }, retryMs);
    retryTimer.unref();
  }

  async function connectLockClient(): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: connectTimeoutMs,
      application_name: 'loom-leader-lock',
      keepAlive: true,
      query_timeout: options.lockQueryTimeoutMs ?? DEFAULT_LOCK_QUERY_TIMEOUT_MS,
    });
    client.on('error', (error) => dropLockClient(client, `its lock connection failed (${error.message})`));
    client.on('end', () => dropLockClient(client, 'its lock connection closed'));
    await client.connect();
    // The server frees the lock when this session ends; across a network gone silent it notices
    // only by TCP keep-alive, after about two hours by the system's default: after ~10 s here
    // (4 s idle, then 3 probes 2 s apart), so another node may lead.
    const result = await client.query<{ pid: number }>(
      "SELECT pg_backend_pid() AS pid, set_config('tcp_keepalives_idle', '4', false), set_config('tcp_keepalives_interval', '2', false), set_config('tcp_keepalives_count', '3', false)",
    );
    lockClient = client;
    lockPid = result.rows[0]?.pid ?? null;
    return client;
  }

  /** One attempt at the lock; another is scheduled unless it leads. */
  function elect(): Promise<void> {
    electing ??= (async () => {
      try {
        if (stopped || outdated || leader) return;
        const client = lockClient ?? (await connectLockClient());
        const result = await onLock(() => client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS locked', [...LEADER_LOCK_KEYS]));
        if (result.rows[0]?.locked !== true || client !== lockClient) return;
        if (stopped) {
          await onLock(() => client.query('SELECT pg_advisory_unlock($1, $2)', [...LEADER_LOCK_KEYS])).catch(() => undefined);
          return;
        }
        leader = true;
        logger.info({}, `node "${name}" leads: it fires the schedules and timed triggers`);
        notify(true);
        void heartbeat();
      } catch (error) {
        logger.warn({ err: messageOf(error), database: target }, `node "${name}" could not try for leadership; trying again in ${retryMs / 1000} s`);
        const client = lockClient;
        if (client !== undefined) dropLockClient(client, `its lock connection failed (${messageOf(error)})`);
      } finally {
        electing = undefined;
        scheduleElection();
      }
    })();
    return electing;
  }

  async function heartbeat(): Promise<void> {
    if (stopped) return;
    // The leader makes sure its lock connection still answers: a silent one stops it leading.
    const client = lockClient;
    if (leader && client !== undefined) {
      try {
        await onLock(() => client.query('SELECT 1'));
      } catch (error) {
        dropLockClient(client, `its lock connection does not answer (${messageOf(error)})`);
      }
    }
    try {
      await pool.query(HEARTBEAT_SQL, [id, name, nodeUrl, version, schemaVersion, lockPid]);
      const current = await pool.query<{ version: number | null }>('SELECT max(version) AS version FROM loom_schema');
      const found = current.rows[0]?.version ?? 0;
      if (found > schemaVersion && !outdated) {
        outdated = true;
        logger.error(
          { schemaVersion: found, known: schemaVersion },
          `the database ${target} was migrated to schema version ${found} by a newer Loom, but this node knows versions up to ${schemaVersion}; it no longer leads: upgrade it and restart it`,
        );
        const holder = lockClient;
        if (holder !== undefined) dropLockClient(holder, `the database's schema (version ${found}) is newer than this Loom knows (${schemaVersion})`);
      }
      if (leader) {
        await pool.query(`DELETE FROM loom_nodes WHERE last_seen < ${NOW_MS} - $1`, [GONE_NODE_RETENTION_MS]);
        await pool.query(`DELETE FROM loom_timer_fires WHERE claimed_at < ${NOW_MS} - $1`, [CLAIM_RETENTION_MS]);
        await pool.query(`DELETE FROM loom_jobs WHERE (state = 'done' AND updated_at < ${NOW_MS} - $1) OR (state = 'failed' AND updated_at < ${NOW_MS} - $2)`, [
          DONE_JOB_RETENTION_MS,
          FAILED_JOB_RETENTION_MS,
        ]);
      }
      if (heartbeatFailing) logger.info({}, `node "${name}" records its heartbeat again`);
      heartbeatFailing = false;
    } catch (error) {
      if (!heartbeatFailing)
        logger.warn(
          { err: messageOf(error), database: target },
          `node "${name}" could not record its heartbeat; other nodes will show it as gone after ${staleAfterMs / 1000} s`,
        );
      heartbeatFailing = true;
    }
  }

  async function readNodes(): Promise<{ rows: NodeRow[]; leaderPid: number | null; jobs: JobCounts }> {
    const nodes = await pool.query<NodeRow>(`SELECT id, name, url, version, lock_pid, started_at::text, last_seen::text, (${alive}) AS alive FROM loom_nodes`);
    const lock = await pool.query<{ pid: number }>(`SELECT pid FROM pg_locks WHERE ${LEADER_LOCK_ROW}`);
    return { rows: nodes.rows, leaderPid: lock.rows[0]?.pid ?? null, jobs: await readJobCounts(pool) };
  }

  return {
    id,
    name,
    store: 'postgres',
    isLeader: () => leader,

    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },

    async claim(key, at) {
      const client = lockClient;
      if (!leader || client === undefined) return false;
      let result: pg.QueryResult;
      try {
        result = await onLock(() => client.query(CLAIM_SQL, [key, at, id]));
      } catch (error) {
        // Unanswered (or failed): this connection cannot be trusted to hold the lock.
        dropLockClient(client, `its lock connection does not answer (${messageOf(error)})`);
        throw error;
      }
      return result.rowCount === 1 && leader;
    },

    async othersAlive() {
      const result = await pool.query<{ count: number }>(`SELECT count(*)::int AS count FROM loom_nodes WHERE id <> $1 AND ${alive}`, [id]);
      return (result.rows[0]?.count ?? 0) > 0;
    },

    async exclusive(work) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
        // The wait is bounded, and the server notices within seconds (not TCP's hours) a node
        // that died holding the lock, whose connection's end lets it go.
        const settings =
          "SELECT set_config('lock_timeout', $1, false), set_config('tcp_keepalives_idle', '4', false), set_config('tcp_keepalives_interval', '2', false), set_config('tcp_keepalives_count', '3', false)";
        await client
          .query(settings, [`${lineageWaitMs}ms`])
          .then(() => client.query('SELECT pg_advisory_lock($1, $2)', [...LINEAGE_LOCK_KEYS]))
          .catch((error: unknown) => {
            client.release(true);
            throw error;
          });
      } catch (error) {
        const waited = (error as { code?: string }).code === '55P03';
        const why = waited ? `another node has been spawning or updating an agent for more than ${lineageWaitMs / 1000} s` : messageOf(error);
        throw new StoreError(`cannot take the lock of agents' spawns and updates on ${target}: ${why}; try again`, {
          cause: error,
          isRetryable: true,
          details: { database: target },
        });
      }
      try {
        return await work();
      } finally {
        // A session's lock: a connection that cannot say unlock is closed, which lets it go.
        await client.query('SELECT pg_advisory_unlock($1, $2)', [...LINEAGE_LOCK_KEYS]).then(
          () => client.release(),
          () => client.release(true),
        );
      }
    },

    async liveNode(other) {
      let result: pg.QueryResult<{ name: string; url: string | null }>;
      try {
        result = await pool.query<{ name: string; url: string | null }>(`SELECT name, url FROM loom_nodes WHERE id = $1 AND ${alive}`, [other]);
      } catch (error) {
        throw new StoreError(`cannot read the nodes on ${target}: ${messageOf(error)}`, { cause: error, details: { database: target } });
      }
      const row = result.rows[0];
      return row === undefined ? undefined : { name: row.name, url: row.url };
    },

    async start() {
      if (started) return;
      started = true;
      try {
        await pool.query(HEARTBEAT_SQL, [id, name, nodeUrl, version, schemaVersion, lockPid]);
      } catch (error) {
        stopped = true;
        await pool.end().catch(() => undefined);
        throw new StoreError(`cannot join the nodes on ${target}: ${messageOf(error)}`, { cause: error, details: { database: target } });
      }
      await elect();
      await heartbeat();
      heartbeatTimer = setInterval(() => void heartbeat(), heartbeatMs);
      heartbeatTimer.unref();
    },

    setUrl(value) {
      nodeUrl = value;
      void heartbeat();
    },

    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(heartbeatTimer);
      clearTimeout(retryTimer);
      await electing;
      stepDown('the daemon is stopping');
      const client = lockClient;
      lockClient = undefined;
      lockPid = null;
      // Ending the session frees the lock: another node takes over at its next try.
      await client?.end().catch(() => undefined);
      if (started)
        await pool.query(`UPDATE loom_nodes SET stopped_at = ${NOW_MS}, last_seen = ${NOW_MS}, lock_pid = NULL WHERE id = $1`, [id]).catch(() => undefined);
      await pool.end().catch(() => undefined);
    },

    async view(): Promise<ClusterView> {
      let found: Awaited<ReturnType<typeof readNodes>>;
      try {
        found = await readNodes();
      } catch (error) {
        throw new StoreError(`cannot read the nodes on ${target}: ${messageOf(error)}`, { cause: error, details: { database: target } });
      }
      // A server process id can be handed out again: the leader is the live node whose lock connection holds the lock.
      const holders = found.rows
        .filter((row) => row.alive && row.lock_pid !== null && row.lock_pid === found.leaderPid)
        .sort((a, b) => Number(b.last_seen) - Number(a.last_seen));
      const leaderId = leader ? id : (holders[0]?.id ?? null);
      const nodes: ClusterNodeView[] = found.rows.map((row) => ({
        id: row.id,
        name: row.name,
        url: row.url,
        version: row.version,
        started_at: new Date(Number(row.started_at)).toISOString(),
        last_seen: new Date(Number(row.last_seen)).toISOString(),
        leader: row.id === leaderId,
        self: row.id === id,
        alive: row.alive,
      }));
      nodes.sort((a, b) => Number(b.alive) - Number(a.alive) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return { store: 'postgres', self: id, leader: leaderId, nodes, jobs: found.jobs };
    },
  };
}
