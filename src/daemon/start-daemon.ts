import { createSystemClock } from '../clock/index.ts';
import type { Config, LoomHome } from '../config/index.ts';
import { daemonEntry, sourcesNote } from '../config/daemon-build.ts';
import { INSTALL_DIR, RUNS_BUILT } from '../config/installation.ts';
import type { Clock, Logger } from '../contracts/index.ts';
import { LoomError } from '../errors/index.ts';
import type { LogRing } from '../logging/index.ts';
import { type Host, openHost } from '../host/index.ts';
import { startExternalDiscovery } from '../a2a/external-agents.ts';
import { createHttpApp, type HttpAppOptions, startHttpServer } from '../http/index.ts';
import { checkDefaultModel, createCostCatalog, DEFAULT_API_KEY_ENV, modelName } from '../models/index.ts';
import type { LoomMetrics } from '../telemetry/loom-metrics.ts';
import { configDigest, configMtime, type DaemonInfo, digestOf, readDaemonFile, removeDaemonFile, writeDaemonFile } from './daemon-file.ts';
import { followDefaultModel } from './follow-default-model.ts';
// Not the telemetry index: that loads the OpenTelemetry SDK, which only a daemon that traces needs.
import { tracingEndpoint } from '../telemetry/tracing-endpoint.ts';

/** Options for {@link startDaemon}. */
export interface StartDaemonOptions {
  home: LoomHome;
  config: Config;
  /**
   * The text `config` was parsed from (null: there was no file). The daemon records its digest,
   * so a change written between the read and the start is still told as a change; without it,
   * the file as it is at the start.
   */
  configText?: string | null;
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
 * What the start line says about models: the default model (and why it cannot run, as
 * model-readiness decides: a keyless one needs no key), else the keys found, and `loom init`
 * when there is neither.
 */
function modelNote(config: Config, env: StartDaemonOptions['env'], keys: { found: string[]; missing: string[] }): string {
  const defaultModel = config.default_model;
  if (defaultModel !== undefined) {
    const [problem] = checkDefaultModel({ defaultModel, env });
    return problem === undefined
      ? `Default model: ${modelName(defaultModel)} ([default_model] in config.toml).`
      : `Agents without [model] cannot run: ${problem.problem}; ${problem.fix}.`;
  }
  if (keys.found.length > 0) return 'No default model: agents without [model] cannot run; `loom init` picks one from your keys, then restart the daemon.';
  return `No model key found: looked for ${keys.missing.join(', ')}, and Ollama at http://127.0.0.1:11434/v1 (agents with provider "ollama" use it). No default model either: run \`loom init\` to set one up (or to try Loom with a scripted model), then restart the daemon.`;
}

/**
 * Why the daemon cannot listen at `host`:`port`, with the fix: the port is taken, needs
 * privileges, or the address is not this machine's. Undefined for any other error.
 */
function listenError(error: unknown, host: string, port: number, home: LoomHome): LoomError | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const elsewhere = `pass --port or set [daemon].port in ${home.configPath}`;
  const message =
    code === 'EADDRINUSE'
      ? `port ${port} on ${host} is in use (another Loom, or another program); stop it, or ${elsewhere}`
      : code === 'EACCES'
        ? port < 1024
          ? `port ${port} on ${host} needs privileges this user lacks (ports below 1024 do); ${elsewhere} to a port from 1024 up`
          : `port ${port} on ${host} may not be used by this user (a security policy refuses it); ${elsewhere} to another port`
        : code === 'EADDRNOTAVAIL'
          ? `cannot listen on ${host}: no network interface of this machine has that address; pass --host or set [daemon].host in ${home.configPath} (127.0.0.1 serves this machine only)`
          : undefined;
  return message === undefined ? undefined : new LoomError(code === 'EADDRINUSE' ? 'PORT_IN_USE' : 'CANNOT_LISTEN', 'user', message, { cause: error });
}

/** What {@link createDaemonApp} serves a host with, besides the host (`clientAddress` for tests' `app.request()`, which has no socket). */
export interface DaemonAppOptions extends Pick<HttpAppOptions, 'config' | 'env' | 'clock' | 'logger' | 'clientAddress' | 'closing'> {
  /** The address the daemon listens on (a loopback one leaves keys optional). */
  bindHost: string;
  metrics: LoomMetrics;
}

/**
 * The daemon's HTTP app over `host`: its API with every door the host has (its packages, channels,
 * cluster, MCP servers' tools, skills, tasks and push configs, its metrics). The one place that
 * says what a daemon serves, so that what is checked of it (test/http/router-shape.test.ts) is
 * the daemon's own app.
 */
export function createDaemonApp(host: Host, options: DaemonAppOptions): ReturnType<typeof createHttpApp> {
  return createHttpApp({
    ...options,
    kernel: host.kernel,
    skills: host.runtime.skills,
    tasks: host.store.tasks,
    a2aPushConfigs: host.store.a2aPushConfigs,
    events: host.store.events,
    packages: host.packages,
    channels: host.channels,
    cluster: host.cluster,
    leasesTurns: host.leasesTurns,
    ...(host.mcp === undefined ? {} : { mcp: host.mcp }),
  });
}

/**
 * Starts the daemon: the kernel with schedules running, the HTTP API, and the daemon file that
 * tells other commands how to reach it. Starts without any model key or default model, and says
 * which default model agents without [model] use, or what it looked for and how to set one.
 * @throws {LoomError} `DAEMON_RUNNING` when a daemon already serves this home; `PORT_IN_USE` or
 * `CANNOT_LISTEN` when it cannot listen where it is asked to.
 */
export async function startDaemon(options: StartDaemonOptions): Promise<RunningDaemon> {
  const { home, config, env, logger } = options;
  const running = await readDaemonFile(home);
  if (running !== undefined) {
    throw new LoomError('DAEMON_RUNNING', 'user', `a Loom daemon already serves ${home.root} at ${running.url} (pid ${running.pid}); stop it with: loom stop`);
  }
  // The config.toml this daemon runs with: as close to when it was read as the daemon can see it.
  const configMtimeMs = await configMtime(home);
  const configDigestAtStart = options.configText === undefined ? await configDigest(home) : digestOf(options.configText);
  const clock = options.clock ?? createSystemClock();
  // Traces only when an OTLP endpoint is named: the SDK is loaded only then.
  const endpoint = tracingEndpoint(config.telemetry, env);
  const tracing =
    endpoint === undefined
      ? undefined
      : (await import('../telemetry/tracing.ts')).startTracing({ endpoint, captureContent: config.telemetry.capture_content, serviceVersion: options.version });
  let metrics: LoomMetrics | undefined;
  const host = await openHost({
    home,
    config,
    env,
    logger,
    runSchedules: true,
    connectMcpServers: true,
    runChannels: true,
    clock,
    version: options.version,
    ...(options.logs === undefined ? {} : { logs: options.logs }),
  });
  // Aborted when the daemon stops, or fails to start: the doors stop waiting on the host (create-http-app.ts).
  const doors = new AbortController();
  try {
    const bindHost = options.host ?? config.daemon.host;
    // Counted from the start: each turn, call and run of this daemon, until it stops. Loaded
    // here, not with the module: prom-client costs every CLI command ~70 ms of CPU to load.
    const { createLoomMetrics } = await import('../telemetry/loom-metrics.ts');
    metrics = createLoomMetrics({ kernel: host.kernel, costs: createCostCatalog(config.prices), mcp: host.mcp });
    const app = createDaemonApp(host, { config, env, clock, logger, bindHost, metrics, closing: doors.signal });
    // In the background: an unreachable peer never holds up the start.
    if (config.a2a.enabled) void startExternalDiscovery(config, logger);
    const port = options.port ?? config.daemon.port;
    const server = await startHttpServer(app, { host: bindHost, port }).catch((error: unknown) => {
      throw listenError(error, bindHost, port, home) ?? error;
    });
    const info: DaemonInfo = {
      pid: process.pid,
      host: bindHost,
      port: server.port,
      url: server.url,
      startedAt: new Date().toISOString(),
      version: options.version,
      configMtimeMs,
      configDigest: configDigestAtStart,
    };
    host.cluster.setUrl(info.url);
    await writeDaemonFile(home, info);
    // `loom init` with the daemon running: a new default model takes effect without a restart.
    const following = followDefaultModel({
      home,
      config,
      runtime: host.runtime,
      logger,
      onRead: async (current, text) => {
        if (!current) return;
        info.configReadAt = new Date().toISOString();
        info.configMtimeMs = await configMtime(home);
        // The text it read, not the file now: a write after the read is a change still to tell.
        info.configDigest = digestOf(text);
        await writeDaemonFile(home, info);
      },
    });
    const keys = modelKeysIn(env);
    // Which code runs, and why the sources when they do (a stat per source file: only then).
    const sources = RUNS_BUILT ? undefined : sourcesNote(daemonEntry(INSTALL_DIR, env));
    const listening = `Loom is listening at ${info.url}. ${modelNote(config, env, keys)}`;
    logger.info(
      {
        url: info.url,
        agents: host.kernel.list().length,
        running: host.report.running,
        keys: keys.found,
        default_model: config.default_model === undefined ? null : modelName(config.default_model),
        code: RUNS_BUILT ? 'built' : 'sources',
        ...(sources === undefined ? {} : { sources_why: sources.why }),
      },
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
          following.close();
          doors.abort();
          // The server stops listening at once, keeping the connections open (a client's cancel
          // goes on an idle one). The doors end their clients' streams themselves
          // (MCP's sessions, answering 503 from now on), and the server cuts the connections left
          // once those have been written out (at most MCP_DRAIN_MS for a slow client).
          const drained = app.doorsClosed();
          const closed = server.close(drained);
          await drained;
          // The webhooks of A2A tasks that ended are told, before the store closes.
          await app.deliveriesDone();
          await host.close();
          await closed;
          metrics?.dispose();
          await tracing?.shutdown();
          await removeDaemonFile(home, info.pid);
          logger.info({}, 'Loom stopped');
        })();
        return stopping;
      },
    };
  } catch (error) {
    doors.abort();
    metrics?.dispose();
    await host.close();
    await tracing?.shutdown();
    throw error;
  }
}
