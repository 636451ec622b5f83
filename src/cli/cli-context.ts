import { type Config, ensureLoomHome, loadConfigText, type LoomHome, resolveLoomHome } from '../config/index.ts';
import type { Logger, Store } from '../contracts/index.ts';
import { logAiSdkWarnings } from '../daemon/index.ts';
import { openHost } from '../host/index.ts';
import type { Kernel } from '../kernel/index.ts';
import type { PackageService } from '../packages/index.ts';
import type { ChannelService } from '../channels/index.ts';
import { createLogger, LOG_LEVELS, type LogLevel } from '../logging/index.ts';
import type { CliIo } from './cli-io.ts';

/** A booted kernel over the home's store, for one command. */
export interface CliContext {
  home: LoomHome;
  config: Config;
  kernel: Kernel;
  store: Store;
  packages: PackageService;
  channels: ChannelService;
  close(): Promise<void>;
}

function cliLogLevel(env: CliIo['env']): LogLevel {
  const level = env['LOOM_LOG_LEVEL'];
  return LOG_LEVELS.find((known) => known === level) ?? 'warn';
}

/** The logger of a command's in-process kernel: on standard error, readable lines at a terminal, JSON lines otherwise. */
function cliLogger(io: CliIo): Logger {
  const interactive = io.interactive === true;
  return createLogger({ level: cliLogLevel(io.env), format: interactive ? 'pretty' : 'json', colorize: interactive });
}

/** The home folder this run uses, created when missing. */
export async function openHome(io: CliIo): Promise<{ home: LoomHome; config: Config; configText: string | null }> {
  const home = resolveLoomHome(io.env, io.cwd);
  await ensureLoomHome(home);
  const { config, text } = await loadConfigText(home);
  return { home, config, configText: text };
}

/**
 * Opens the store and boots an in-process kernel. (Once the daemon exists, commands talk to it
 * over HTTP when it runs, and come here only when it does not.)
 */
export async function openCliContext(io: CliIo): Promise<CliContext> {
  const { home, config } = await openHome(io);
  const logger = cliLogger(io);
  const host = await openHost({ home, config, env: io.env, logger });
  // The model library's warnings are log lines of the command, not raw lines on standard error.
  const restoreWarnings = logAiSdkWarnings(logger);
  return {
    home,
    config,
    kernel: host.kernel,
    store: host.store,
    packages: host.packages,
    channels: host.channels,
    close: async () => {
      // A manual run's event chain ends before the process does.
      await host.packages.runtime.idle();
      await host.close();
      restoreWarnings();
    },
  };
}
