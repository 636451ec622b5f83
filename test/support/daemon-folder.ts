import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { ConfigSchema, resolveLoomHome } from '../../src/config/index.ts';
import { type RunningDaemon, startDaemon } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { makeTempDir } from './test-kernel.ts';

/** A test's temporary folder, and the daemon it starts there in this process (see {@link useDaemonFolder}). */
export interface DaemonFolder {
  /** The test's temporary folder. */
  readonly dir: string;
  /**
   * Starts the daemon in this process (`startDaemon`, as `loom start` does) on a home in the
   * folder, at a free port of 127.0.0.1, with no configuration, key or log; stopped after the test
   * (a stop is idempotent).
   */
  start(): Promise<RunningDaemon>;
  /** Has `close` run after the test, before the folder is removed: what the test served there itself. */
  closeAfter(close: () => Promise<void>): void;
}

/**
 * Gives each test of the file a fresh folder. After the test (once the file's own `afterEach`
 * hooks, registered later, have run), what was started there is stopped, the last first, and the
 * folder is removed.
 */
export function useDaemonFolder(prefix: string): DaemonFolder {
  let temp: Awaited<ReturnType<typeof makeTempDir>> | undefined;
  let closes: (() => Promise<void>)[] = [];
  const folder = (): string => {
    if (temp === undefined) throw new Error('useDaemonFolder: used outside a test');
    return temp.path;
  };
  beforeEach(async () => {
    temp = await makeTempDir(prefix);
    closes = [];
  });
  afterEach(async () => {
    for (const close of closes.reverse()) await close();
    await temp?.remove();
    temp = undefined;
  });
  return {
    get dir() {
      return folder();
    },
    async start() {
      const dir = folder();
      const home = resolveLoomHome({ LOOM_HOME: join(dir, 'home') }, dir);
      const daemon = await startDaemon({
        home,
        config: ConfigSchema.parse({}),
        env: {},
        logger: createSilentLogger(),
        version: 'test',
        host: '127.0.0.1',
        port: 0,
      });
      closes.push(() => daemon.stop());
      return daemon;
    },
    closeAfter(close) {
      closes.push(close);
    },
  };
}
