import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createPostgresCluster } from '../../src/cluster/postgres-cluster.ts';
import { createFakeClock } from '../../src/clock/index.ts';
import { CapabilityEscalationError, StoreError } from '../../src/errors/index.ts';
import { createUuidGenerator, type Kernel } from '../../src/kernel/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { openPostgresStore, postgresMigrations } from '../../src/store/index.ts';
import { buildKernel, manifest } from '../support/test-kernel.ts';
import { useTestPostgres } from '../support/use-test-postgres.ts';
import { waitFor } from '../support/wait-for.ts';

// Two nodes on one database, each with its kernel, and no event relay between them: what one
// node stored, the other has not heard of, as between a change and its event's arrival. A spawn
// or an update judges by the agents as the store holds them, not as the node last heard.

const postgres = useTestPostgres();
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A node of the installation on `url`, started. */
async function clusterNode(url: string, name: string, options: { lineageWaitMs?: number } = {}): Promise<ReturnType<typeof createPostgresCluster>> {
  const node = createPostgresCluster({
    url,
    target: 'test',
    id: randomUUID(),
    name,
    version: 'test',
    schemaVersion: postgresMigrations.at(-1)?.version ?? 0,
    logger: createSilentLogger(),
    ...options,
  });
  await node.start();
  return node;
}

/** A node's kernel on `url`, booted, with the installation-wide order of spawns and updates. */
async function nodeKernel(url: string, name: string): Promise<Kernel> {
  const store = await openPostgresStore({ url });
  const node = await clusterNode(url, name);
  const kernel = buildKernel({
    store,
    clock: createFakeClock(),
    ids: createUuidGenerator(),
    logger: createSilentLogger(),
    node: { id: node.id, find: (id) => node.liveNode(id), othersAlive: () => node.othersAlive(), exclusive: (work) => node.exclusive(work) },
  });
  await kernel.boot();
  closers.push(async () => {
    await kernel.shutdown();
    await node.stop();
    await store.close();
  });
  return kernel;
}

const lead = (tools: string): string => `name = "lead"\n[capabilities]\ntools = [${tools}]\nshell = ["git *"]\n`;
const helper = `name = "helper"\n[capabilities]\ntools = ["shell_exec"]\nshell = ["git *"]\n`;

describe('spawns and updates across nodes', () => {
  it('run one at a time in the installation: a node waits while another holds the lock', async () => {
    const { url, name } = await postgres.createDatabase();
    await (await openPostgresStore({ url })).close();
    const [a, b] = [await clusterNode(url, 'a'), await clusterNode(url, 'b')];
    closers.push(
      () => a.stop(),
      () => b.stop(),
    );
    const order: string[] = [];
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = a.exclusive(async () => {
      order.push('a starts');
      await held;
      order.push('a ends');
    });
    await waitFor('node a to hold the lock', () => order.length > 0);
    const second = b.exclusive(() => {
      order.push('b starts');
      return Promise.resolve();
    });
    // b asks while a holds it, and waits: its request is in the server's locks, not granted.
    const waiting = async (): Promise<number> =>
      (
        (await postgres.query('SELECT count(*)::int AS waiting FROM pg_locks WHERE locktype = $1 AND NOT granted', ['advisory'], name)).rows[0] as {
          waiting: number;
        }
      ).waiting;
    await waitFor("node b's request in the server's locks", async () => (await waiting()) === 1);
    expect(order).toEqual(['a starts']);
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['a starts', 'a ends', 'b starts']);
    // Given back after a failure too.
    await expect(a.exclusive(() => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    expect(await b.exclusive(() => Promise.resolve('free'))).toBe('free');
  });

  it('gives up waiting for a node that holds the lock too long, with a store error to retry', async () => {
    const { url } = await postgres.createDatabase();
    await (await openPostgresStore({ url })).close();
    const [a, b] = [await clusterNode(url, 'a'), await clusterNode(url, 'b', { lineageWaitMs: 200 })];
    closers.push(
      () => a.stop(),
      () => b.stop(),
    );
    let release: (() => void) | undefined;
    const held = a.exclusive(() => new Promise<void>((resolve) => (release = resolve)));
    await waitFor('node a to hold the lock', () => release !== undefined);
    const refused = b.exclusive(() => Promise.resolve('ran'));
    await expect(refused).rejects.toThrow(StoreError);
    await expect(refused).rejects.toThrow('another node has been spawning or updating an agent for more than 0.2 s; try again');
    release?.();
    await held;
    // Its connection went back to the pool in working order: the next wait succeeds.
    expect(await b.exclusive(() => Promise.resolve('ran'))).toBe('ran');
  });

  it('judges a child by its parent as another node just updated it', async () => {
    const { url } = await postgres.createDatabase();
    const a = await nodeKernel(url, 'a');
    await a.spawn(manifest(lead('"shell_exec", "file_read"')));
    const b = await nodeKernel(url, 'b');
    // b takes the shell away; a has not heard.
    await b.update('lead', manifest(lead('"file_read"')));
    expect(a.get('lead').capabilities).toContainEqual({ kind: 'tool_invoke', pattern: 'shell_exec' });

    const spawned = a.spawn(manifest(helper), { parent: 'lead' });
    await expect(spawned).rejects.toThrow(CapabilityEscalationError);
    await expect(spawned).rejects.toThrow('cannot spawn agent "helper" as a child of "lead"');
    expect(a.list().map((agent) => agent.name)).toEqual(['lead']);
    // a now holds the parent as it is stored.
    expect(a.get('lead').capabilities).not.toContainEqual({ kind: 'tool_invoke', pattern: 'shell_exec' });
  });

  it('judges an update of a child by its parent as another node just narrowed it', async () => {
    const { url } = await postgres.createDatabase();
    const a = await nodeKernel(url, 'a');
    await a.spawn(manifest(lead('"shell_exec", "file_read"')));
    await a.spawn(manifest(`name = "helper"\n[capabilities]\ntools = ["file_read"]\n`), { parent: 'lead' });
    const b = await nodeKernel(url, 'b');
    // b takes the shell from the parent; a has not heard, and gives it to the child.
    await b.update('lead', manifest(lead('"file_read"')));
    const widened = a.update('helper', manifest(helper));
    await expect(widened).rejects.toThrow(CapabilityEscalationError);
    await expect(widened).rejects.toThrow('as a child of "lead"');
    expect(a.get('helper').capabilities).not.toContainEqual({ kind: 'tool_invoke', pattern: 'shell_exec' });
  });

  it('confines the children another node spawned that this one has not heard of', async () => {
    const { url } = await postgres.createDatabase();
    const a = await nodeKernel(url, 'a');
    await a.spawn(manifest(lead('"shell_exec", "file_read"')));
    const b = await nodeKernel(url, 'b');
    // a spawns a child holding the shell; b has not heard of it.
    await a.spawn(manifest(helper), { parent: 'lead' });
    expect(b.list().map((agent) => agent.name)).toEqual(['lead']);

    const narrowed = b.update('lead', manifest(lead('"file_read"')));
    await expect(narrowed).rejects.toThrow('cannot update "lead": its child "helper" would then exceed it');
    // What merges does reach it: the parent's exec policy, written into the child as b stores it.
    await b.update('lead', manifest(`${lead('"shell_exec", "file_read"')}[exec_policy]\nallow_network = false\n`));
    expect(b.get('helper').manifest.exec_policy).toMatchObject({ allow_network: false });
  });
});
