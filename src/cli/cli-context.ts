import { createSystemClock } from '../clock/index.ts';
import { type Config, ensureLoomHome, loadConfig, type LoomHome, resolveLoomHome } from '../config/index.ts';
import type { Store } from '../contracts/index.ts';
import { createKernel, createUuidGenerator, type Kernel } from '../kernel/index.ts';
import { createLogger, LOG_LEVELS, type LogLevel } from '../logging/index.ts';
import { openSqliteStore } from '../store/index.ts';
import type { CliIo } from './cli-io.ts';

/** A booted kernel over the home's store, for one command. */
export interface CliContext {
  home: LoomHome;
  config: Config;
  kernel: Kernel;
  store: Store;
  close(): Promise<void>;
}

function cliLogLevel(env: CliIo['env']): LogLevel {
  const level = env['LOOM_LOG_LEVEL'];
  return LOG_LEVELS.find((known) => known === level) ?? 'warn';
}

/** The home folder this run uses, created when missing. */
export async function openHome(io: CliIo): Promise<{ home: LoomHome; config: Config }> {
  const home = resolveLoomHome(io.env, io.cwd);
  await ensureLoomHome(home);
  return { home, config: await loadConfig(home) };
}

/**
 * Opens the store and boots an in-process kernel. (Once the daemon exists, commands talk to it
 * over HTTP when it runs, and come here only when it does not.)
 */
export async function openCliContext(io: CliIo): Promise<CliContext> {
  const { home, config } = await openHome(io);
  const store = openSqliteStore({ path: home.databasePath, synchronous: config.store.synchronous });
  try {
    const kernel = createKernel({
      store,
      clock: createSystemClock(),
      ids: createUuidGenerator(),
      logger: createLogger({ level: cliLogLevel(io.env) }),
    });
    await kernel.boot();
    return {
      home,
      config,
      kernel,
      store,
      close: async () => {
        await kernel.shutdown();
        await store.close();
      },
    };
  } catch (error) {
    await store.close();
    throw error;
  }
}
