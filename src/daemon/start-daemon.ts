import { createSystemClock } from '../clock/index.ts';
import type { Config, LoomHome } from '../config/index.ts';
import { daemonEntry, sourcesNote } from '../config/daemon-build.ts';
import { INSTALL_DIR, RUNS_BUILT } from '../config/installation.ts';
import type { Clock, Logger } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';
import type { LogRing } from '../logging/index.ts';
import { type Host, openHost } from '../host/index.ts';
import { startExternalDiscovery } from '../a2a/external-agents.ts';
import { createHttpApp, startHttpServer } from '../http/index.ts';
import { DEFAULT_API_KEY_ENV } from '../models/index.ts';
import { type DaemonInfo, readDaemonFile, removeDaemonFile, writeDaemonFile } from './daemon-file.ts';

/** Options for {@link startDaemon}. */
export interface StartDaemonOptions {
  home: LoomHome;
  config: Config;
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  version: string;
  /** Overrides `[daemon].host` / `[daemon].port` (port 0 picks a free one). */
  host?: string;
  port?: number;
  clock?: Clock;
  /** The ring the logger also writes to, read by event-log agents. */
  logs?: LogRing;
}

/** A daemon serving its API, with the way to stop it. */
export interface RunningDaemon {
  info: DaemonInfo;
  host: Host;
  /** Stops accepting, cancels in-flight turns (their work is saved), closes the store. Idempotent. */
  stop(): Promise<void>;
}

/** The model keys the environment holds, and those it lacks, for the start-up message. */
export function modelKeysIn(env: Readonly<Record<string, string | undefined>>): { found: string[]; missing: string[] } {
  const names = [...new Set(Object.values(DEFAULT_API_KEY_ENV).filter((name): name is string => name !== null))];
  const found = names.filter((name) => (env[name] ?? '').trim() !== '');
  return { found, missing: names.filter((name) => !found.includes(name)) };
}

/**
 * Starts the daemon: the kernel with schedules running, the HTTP API, and the daemon file that
 * tells other commands how to reach it. Starts without any model key, and says what it looked for.
 * @throws {LoomError} `DAEMON_RUNNING` when a daemon already serves this home.
 */
export async function startDaemon(options: StartDaemonOptions): Promise<RunningDaemon> {
  const { home, config, env, logger } = options;
  const running = await readDaemonFile(home);
  if (running !== undefined) {
    throw new LoomError('DAEMON_RUNNING', 'user', `a Loom daemon already serves ${home.root} at ${running.url} (pid ${running.pid}); stop it with: loom stop`);
  }
  const clock = options.clock ?? createSystemClock();
  const host = await openHost({ home, config, env, logger, runSchedules: true, connectMcpServers: true, runChannels: true, clock, version: options.version, ...(options.logs === undefined ? {} : { logs: options.logs }) });
  try {
    const bindHost = options.host ?? config.daemon.host;
    const app = createHttpApp({ kernel: host.kernel, config, env, clock, logger, tasks: host.store.tasks, a2aPushConfigs: host.store.a2aPushConfigs, events: host.store.events, bindHost, packages: host.packages, channels: host.channels, cluster: host.cluster, ...(host.mcp === undefined ? {} : { mcp: host.mcp }) });
    // In the background: an unreachable peer never holds up the start.
    if (config.a2a.enabled) void startExternalDiscovery(config, logger);
    const server = await startHttpServer(app, { host: bindHost, port: options.port ?? config.daemon.port });
    const info: DaemonInfo = {
      pid: process.pid,
      host: bindHost,
      port: server.port,
      url: server.url,
      startedAt: new Date().toISOString(),
      version: options.version,
    };
    host.cluster.setUrl(info.url);
    await writeDaemonFile(home, info);
    const keys = modelKeysIn(env);
    // Which code runs, and why the sources when they do (a stat per source file: only then).
    const sources = RUNS_BUILT ? undefined : sourcesNote(daemonEntry(INSTALL_DIR, env));
    const listening = keys.found.length === 0
      ? `Loom is listening at ${info.url}. No model key found: looked for ${keys.missing.join(', ')}, and Ollama at http://127.0.0.1:11434/v1 (agents with provider "ollama" use it).`
      : `Loom is listening at ${info.url}.`;
    logger.info(
      { url: info.url, agents: host.kernel.list().length, running: host.report.running, keys: keys.found, code: RUNS_BUILT ? 'built' : 'sources', ...(sources === undefined ? {} : { sources_why: sources.why }) },
      sources?.hint === undefined ? listening : `${listening} Note: ${sources.hint}.`,
    );
    if (host.cluster.store === 'postgres') {
      logger.info(
        { node: host.cluster.id, leader: host.cluster.isLeader() },
        host.cluster.isLeader()
          ? `This node ("${host.cluster.name}") leads the daemons sharing the database: it fires the schedules.`
          : `This node ("${host.cluster.name}") joined the daemons sharing the database; another leads and fires the schedules (see loom status).`,
      );
    }
    let stopping: Promise<void> | undefined;
    return {
      info,
      host,
      stop: () => {
        stopping ??= (async () => {
          const closed = server.close();
          await host.close();
          await closed;
          await removeDaemonFile(home, info.pid);
          logger.info({}, 'Loom stopped');
        })();
        return stopping;
      },
    };
  } catch (error) {
    await host.close();
    throw error;
  }
}
