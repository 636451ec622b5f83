import type { Store, Tool } from '../../src/contracts/index.ts';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import { createUuidGenerator, type Kernel } from '../../src/kernel/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createCostCatalog, createModelResolver } from '../../src/models/index.ts';
import { openPostgresStore, type PostgresStore } from '../../src/store/index.ts';
import { buildKernel } from './test-kernel.ts';

/** A node of a cluster in a test: its kernel on its own pool, its store and its clock, and how to stop both. */
export interface ClusterNode {
  kernel: Kernel;
  store: PostgresStore;
  clock: FakeClock;
  close: () => Promise<void>;
}

/**
 * A node on the database at `url`, booted as a daemon on PostgreSQL boots it: its store records the
 * turns it runs under `id`, it leases them, and it takes other nodes for alive. Its agents call
 * their models through the provider clients (a test points them at a scripted model server). Its
 * clock is `clock` (one the nodes share), or a fake clock of its own; `tools` are its runtime's.
 */
export async function openClusterNode(url: string, id: string, options: { clock?: FakeClock; tools?: readonly Tool<never>[] } = {}): Promise<ClusterNode> {
  const store = await openPostgresStore({ url, origin: id });
  const clock = options.clock ?? createFakeClock();
  const kernel = await bootLeasingKernel(store, id, clock, { tools: options.tools ?? [] });
  return {
    kernel,
    store,
    clock,
    close: async () => {
      await kernel.shutdown();
      await store.close();
    },
  };
}

/**
 * A kernel on `store`, booted as a node of a cluster (`id`) boots it: it leases the turns it runs
 * and takes other nodes for alive; its agents call their models through the provider clients, its
 * workspaces under `workspaces`.
 */
export async function bootLeasingKernel(
  store: Store,
  id: string,
  clock: FakeClock,
  options: { tools?: readonly Tool<never>[]; workspaces?: string } = {},
): Promise<Kernel> {
  const kernel = buildKernel({
    store,
    clock,
    ids: createUuidGenerator(),
    logger: createSilentLogger(),
    runtime: {
      resolver: createModelResolver({ env: { OPENAI_API_KEY: 'test' } }),
      costs: createCostCatalog(),
      tools: options.tools ?? [],
      env: {},
      workspaceOf: (agent) => `${options.workspaces ?? '/tmp/loom-test-workspaces'}/${agent.name}`,
    },
    node: { id, find: () => Promise.resolve(undefined), othersAlive: () => Promise.resolve(true), leasesTurns: true },
  });
  await kernel.boot();
  return kernel;
}
