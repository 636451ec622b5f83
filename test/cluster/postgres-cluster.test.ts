import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterNode } from '../../src/cluster/index.ts';
import { createPostgresCluster, type PostgresClusterOptions } from '../../src/cluster/postgres-cluster.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { openPostgresStore, postgresMigrations } from '../../src/store/index.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';
import { waitFor } from '../support/wait-for.ts';

const postgres = useTestPostgres();
let database: { name: string; url: string };
const nodes: ClusterNode[] = [];
const latest = postgresMigrations.at(-1)?.version ?? 0;

afterEach(async () => {
  for (const node of nodes.splice(0)) await node.stop();
});

async function freshDatabase(): Promise<void> {
  database = await postgres.createDatabase();
  const store = await openPostgresStore({ url: database.url });
  await store.close();
}

/**
 * A node on the test database, with short periods so the test takes seconds; but shown alive while
 * its heartbeat is as fresh as the product asks (10 s), not two: a loaded machine may hold up a
 * heartbeat for seconds, and no test here has a node go stale (a stopped node is gone at once).
 */
function node(name: string, options: Partial<PostgresClusterOptions> = {}): ClusterNode & { changes: boolean[] } {
  const created = createPostgresCluster({
    url: database.url,
    target: database.name,
    id: randomUUID(),
    name,
    version: 'test',
    schemaVersion: latest,
    logger: createSilentLogger(),
    heartbeatMs: 200,
    retryMs: 200,
    ...options,
  });
  const changes: boolean[] = [];
  created.subscribe((leader) => changes.push(leader));
  nodes.push(created);
  return Object.assign(created, { changes });
}

describe('createPostgresCluster()', () => {
  it('elects one leader of two nodes; only the leader claims an instant, each instant once and never one older than the last', async () => {
    await freshDatabase();
    const a = node('a');
    const b = node('b');
    await a.start();
    await b.start();
    expect([a.isLeader(), b.isLeader()]).toEqual([true, false]);
    expect(await a.claim('timer', 1_000)).toBe(true);
    expect(await a.claim('timer', 1_000)).toBe(false);
    expect(await a.claim('timer', 500)).toBe(false);
    expect(await b.claim('timer', 2_000)).toBe(false);
    expect(await a.othersAlive()).toBe(true);
    const view = await b.view();
    expect(view).toMatchObject({ store: 'postgres', self: b.id, leader: a.id });
    expect(view.nodes.map((entry) => [entry.name, entry.leader, entry.self, entry.alive])).toEqual([
      ['a', true, false, true],
      ['b', false, true, true],
    ]);
  }, 30_000);

  it('stops leading at once when its lock connection is cut, and another node takes over, resuming after the last claimed instant', async () => {
    await freshDatabase();
    const a = node('a');
    const b = node('b');
    await a.start();
    await b.start();
    expect(await a.claim('timer', 1_000)).toBe(true);
    await postgres.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'loom-leader-lock' AND pid = (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted)",
      [],
      database.name,
    );
    await waitFor('the old leader to step down', () => !a.isLeader());
    expect(a.changes).toEqual([true, false]);
    await waitFor('a new leader', () => a.isLeader() || b.isLeader());
    const leader = a.isLeader() ? a : b;
    const other = leader === a ? b : a;
    expect(other.isLeader()).toBe(false);
    // What the old leader claimed stays claimed.
    expect(await leader.claim('timer', 1_000)).toBe(false);
    expect(await leader.claim('timer', 2_000)).toBe(true);
    expect(await other.claim('timer', 3_000)).toBe(false);
  }, 30_000);

  it('hands over at once on stop: the node leaves, shown as gone, and the other leads', async () => {
    await freshDatabase();
    const a = node('a');
    const b = node('b');
    await a.start();
    await b.start();
    await a.stop();
    expect(a.changes).toEqual([true, false]);
    await waitFor('the other node to lead', () => b.isLeader());
    const view = await b.view();
    expect(view.leader).toBe(b.id);
    expect(view.nodes.map((entry) => [entry.name, entry.alive])).toEqual([
      ['b', true],
      ['a', false],
    ]);
    expect(await b.othersAlive()).toBe(false);
  }, 30_000);

  it('stops leading, and does not try again, when the database is migrated past the schema it knows', async () => {
    await freshDatabase();
    const a = node('a');
    await a.start();
    expect(a.isLeader()).toBe(true);
    await postgres.query("INSERT INTO loom_schema VALUES ($1, 'from a newer Loom', 0)", [latest + 1], database.name);
    await waitFor('the node to step down', () => !a.isLeader());
    // The node goes on recording its heartbeat (and reading the schema) every 200 ms; three more of
    // them span well past its 200 ms election retry, which would have made it leader again.
    const heartbeat = async (): Promise<string> =>
      String(((await postgres.query("SELECT last_seen FROM loom_nodes WHERE name = 'a'", [], database.name)).rows as { last_seen: unknown }[])[0]?.last_seen);
    const seen = new Set([await heartbeat()]);
    await waitFor('three more heartbeats of the node', async () => seen.add(await heartbeat()).size >= 4);
    expect(a.changes).toEqual([true, false]);
  }, 30_000);

  it('refuses to join a database it cannot reach, saying which', async () => {
    database = { name: 'nowhere', url: 'postgres://loom:secret@127.0.0.1:1/nowhere' };
    const a = node('a', { target: 'postgres://loom@127.0.0.1:1/nowhere', connectTimeoutMs: 2_000 });
    await expect(a.start()).rejects.toThrow(/^cannot join the nodes on postgres:\/\/loom@127\.0\.0\.1:1\/nowhere: /);
  }, 30_000);
});
