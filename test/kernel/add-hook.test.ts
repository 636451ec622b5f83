import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import type { Store } from '../../src/contracts/index.ts';
import { type AgentLifecycleHook, createUuidGenerator, type Kernel } from '../../src/kernel/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { openSqliteStore } from '../../src/store/index.ts';
import { buildKernel, makeTempDir, manifest } from '../support/test-kernel.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let opened: { kernel: Kernel; store: Store }[];

beforeEach(async () => {
  dir = await makeTempDir();
  opened = [];
});

afterEach(async () => {
  for (const { kernel, store } of opened) {
    await kernel.shutdown();
    await store.close();
  }
  await dir.remove();
});

/** A hook that writes what it hears into a log shared with other hooks, so their order shows. */
function loggingHook(name: string, log: string[]): AgentLifecycleHook {
  return {
    name,
    start: (agent) => {
      log.push(`${name} start ${agent.name}`);
    },
    stop: (agent, reason) => {
      log.push(`${name} stop ${agent.name} ${reason}`);
    },
  };
}

function open(hooks: readonly AgentLifecycleHook[]): Kernel {
  const store = openSqliteStore({ path: join(dir.path, 'data', 'loom.db') });
  const kernel = buildKernel({ store, clock: createFakeClock(), ids: createUuidGenerator(), logger: createSilentLogger(), hooks });
  opened.push({ kernel, store });
  return kernel;
}

it('addHook() before boot: the added hook hears the agents boot restores, and later spawns and kills, after the hooks the kernel was built with', async () => {
  const first = open([]);
  await first.boot();
  await first.spawn(manifest('name = "stored"'));

  const log: string[] = [];
  const kernel = open([loggingHook('built', log)]);
  kernel.addHook(loggingHook('added', log));
  await kernel.boot();
  expect(log).toEqual(['built start stored', 'added start stored']);

  log.length = 0;
  await kernel.spawn(manifest('name = "spawned"'));
  await kernel.kill('spawned');
  expect(log).toEqual(['built start spawned', 'added start spawned', 'built stop spawned kill', 'added stop spawned kill']);
});
