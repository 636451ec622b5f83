import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import { createEmergentEngine } from '../../src/forged-tools/index.ts';
import {
  type AgentLifecycleHook,
  type BootReport,
  createKernel,
  createKernelServices,
  createUuidGenerator,
  type Kernel,
  type KernelDependencies,
} from '../../src/kernel/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { type Manifest, parseManifest } from '../../src/manifest/index.ts';
import { openSqliteStore, type SqliteStore } from '../../src/store/index.ts';

/** A temporary folder, removed by `remove`. */
export async function makeTempDir(prefix = 'loom-test-'): Promise<{ path: string; remove(): Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/**
 * A kernel built as the composition root (`openHost`) builds one: the kernel's services, the
 * forged-tools engine on their ports, then the kernel proper with the engine. Not booted.
 */
export function buildKernel(dependencies: KernelDependencies): Kernel {
  const { store, clock, ids } = dependencies;
  const services = createKernelServices(dependencies);
  return createKernel(services, createEmergentEngine({ store, clock, ids, logger: services.logger, ...services.forging }));
}

/** A booted kernel over a real SQLite file, on a fake clock. */
export interface TestKernel {
  kernel: Kernel;
  store: SqliteStore;
  clock: FakeClock;
  report: BootReport;
  close(): Promise<void>;
}

/** Opens the database at `databasePath` (created when missing) and boots a kernel on it. */
export async function openTestKernel(databasePath: string, hooks: readonly AgentLifecycleHook[] = []): Promise<TestKernel> {
  const store = openSqliteStore({ path: databasePath });
  const clock = createFakeClock();
  const kernel = buildKernel({ store, clock, ids: createUuidGenerator(), logger: createSilentLogger(), hooks });
  const report = await kernel.boot();
  return {
    kernel,
    store,
    clock,
    report,
    close: async () => {
      await kernel.shutdown();
      await store.close();
    },
  };
}

/** A manifest from TOML text, for tests. */
export function manifest(toml: string): Manifest {
  return parseManifest(toml, { source: 'test.toml' }).manifest;
}

/** A lifecycle hook that records what it was told, as `start:<name>` / `stop:<name>:<reason>`. */
export function recordingHook(): AgentLifecycleHook & { calls: string[] } {
  const calls: string[] = [];
  return {
    name: 'recorder',
    calls,
    start: (agent) => {
      calls.push(`start:${agent.name}`);
    },
    stop: (agent, reason) => {
      calls.push(`stop:${agent.name}:${reason}`);
    },
  };
}
