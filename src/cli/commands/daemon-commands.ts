import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { Command } from 'commander';
import { setTimeout as delay } from 'node:timers/promises';
import { type Config, ConfigSchema, ensureLoomHome, loadConfig, type LoomHome, resolveLoomHome, resolveStoreUrl } from '../../config/index.ts';
import {
  daemonFilePath,
  isProcessAlive,
  logAiSdkWarnings,
  modelKeysIn,
  readDaemonFile,
  releaseStartUpHeap,
  startDaemon,
  startedBeforeConfigChanged,
} from '../../daemon/index.ts';
import type { AgentRecord, ClusterView } from '../../contracts/index.ts';
import { LoomError, UsageError } from '../../errors/index.ts';
import { ManifestSchema } from '../../manifest/index.ts';
import { checkAgentModels, type ModelProblem, modelName } from '../../models/index.ts';
import { createSystemClock } from '../../clock/index.ts';
import { createLogger, LOG_FORMATS, type LogFormat, LogRing, persistLogRing } from '../../logging/index.ts';
import { inspectPostgresDatabase, openPostgresStore, openSqliteStore, type PostgresInspection, redactDatabaseUrl } from '../../store/index.ts';
import { givenDaemonUrl } from '../backend.ts';
import { openHome } from '../cli-context.ts';
import { formatTable } from '../format.ts';
import { type CliIo, EXIT, ExitStatus } from '../cli-io.ts';
import { installedPath, LOOM_VERSION } from '../../config/installation.ts';

/** How long `loom start` waits for a background daemon to answer, and `loom stop` for it to end. */
const DAEMON_WAIT_MS = 15_000;

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new UsageError(`--port: expected a port number from 0 to 65535, got "${value}"`);
  return port;
}

async function health(url: string): Promise<{ status: string; version?: string; agents?: number } | undefined> {
  try {
    const response = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(2_000) });
    return response.ok ? ((await response.json()) as { status: string; version?: string; agents?: number }) : undefined;
  } catch {
    return undefined;
  }
}

/** The daemons sharing the store, as the daemon at `url` sees them (undefined when it does not say: an older daemon, a user key). */
async function clusterOf(url: string, apiKey: string | undefined): Promise<ClusterView | undefined> {
  try {
    const response = await fetch(`${url}/api/cluster`, {
      signal: AbortSignal.timeout(2_000),
      headers: apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` },
    });
    return response.ok ? ((await response.json()) as ClusterView) : undefined;
  } catch {
    return undefined;
  }
}

/** The nodes as `loom status` lists them, when there is more than one ('' otherwise). */
export function formatCluster(cluster: ClusterView | undefined): string {
  if (cluster === undefined || cluster.nodes.length < 2) return '';
  const leader = cluster.nodes.find((node) => node.id === cluster.leader);
  const alive = cluster.nodes.filter((node) => node.alive).length;
  const rows = cluster.nodes.map((node) => [
    node.name,
    node.url ?? '-',
    node.version,
    node.last_seen,
    [node.alive ? (node.leader ? 'leader' : 'alive') : 'gone', ...(node.self ? ['this node'] : [])].join(', '),
  ]);
  const jobs =
    cluster.jobs === null || cluster.jobs === undefined
      ? ''
      : `Work queue: ${cluster.jobs.queued} queued, ${cluster.jobs.running} running, ${cluster.jobs.failed} failed.\n`;
  const head = `${alive} of ${cluster.nodes.length} nodes alive on the shared database; ${leader === undefined ? 'no leader now (one is elected within seconds)' : `leader: ${leader.name}`}.
${jobs}`;
  return `
${head}${formatTable(['NODE', 'URL', 'VERSION', 'LAST SEEN', 'STATE'], rows)}`;
}

/** `--log-format`: readable lines at a terminal and JSON lines otherwise (`auto`), or either always. */
const LOG_FORMAT_CHOICES = ['auto', ...LOG_FORMATS] as const;

function parseLogFormat(value: string, from = '--log-format'): (typeof LOG_FORMAT_CHOICES)[number] {
  const format = LOG_FORMAT_CHOICES.find((choice) => choice === value);
  if (format === undefined) throw new UsageError(`${from}: expected one of ${LOG_FORMAT_CHOICES.join(', ')}, got "${value}"`);
  return format;
}

/**
 * What the daemon prints on standard output: readable lines at a terminal, JSON lines when it is
 * not one (a pipe, a service manager), unless `--log-format` or `LOOM_LOG_FORMAT` says otherwise.
 * @throws {UsageError} for an unknown `LOOM_LOG_FORMAT`.
 */
export function daemonLogFormat(io: CliIo, flag?: (typeof LOG_FORMAT_CHOICES)[number]): LogFormat {
  const fromEnv = io.env['LOOM_LOG_FORMAT'];
  const chosen = flag ?? (fromEnv === undefined || fromEnv === '' ? 'auto' : parseLogFormat(fromEnv, 'LOOM_LOG_FORMAT'));
  if (chosen !== 'auto') return chosen;
  return io.stdoutIsTerminal === true ? 'pretty' : 'json';
}

/** The daemon's log file, JSON lines whatever its standard output shows. */
function daemonLogPath(home: LoomHome): string {
  return join(home.logsDir, 'daemon.log');
}

/** The daemon's log ring, kept across restarts (the last 1,000 records at info and above, JSON lines). */
function logRingPath(home: LoomHome): string {
  return join(home.logsDir, 'log-ring.jsonl');
}

/** How long after it answers a daemon gives back the memory its start grew. */
const START_UP_SETTLE_MS = 1_000;

interface StartOptions {
  host?: string;
  port?: number;
  foreground?: boolean;
  logFormat?: (typeof LOG_FORMAT_CHOICES)[number];
  json?: boolean;
}

/** Runs the daemon in this process until SIGINT or SIGTERM. */
async function runForeground(io: CliIo, options: StartOptions): Promise<void> {
  const { home, config, configText } = await openHome(io);
  const format = daemonLogFormat(io, options.logFormat);
  const logFile = daemonLogPath(home);
  // The daemon keeps its last 1,000 records at info and above for event-log agents, across restarts.
  const logs = new LogRing();
  const logger = createLogger({
    level: config.log.level,
    ring: logs,
    file: logFile,
    format,
    fd: 1,
    colorize: format === 'pretty' && io.stdoutIsTerminal === true,
  });
  let ringFailed = false;
  const ring = await persistLogRing(logs, {
    file: logRingPath(home),
    clock: createSystemClock(),
    onError: (error) => {
      // Said once: a warning for each failed write would fill the ring itself.
      if (ringFailed) return;
      ringFailed = true;
      logger.warn({ err: error }, `could not write the log ring to ${logRingPath(home)}; it is kept in memory only`);
    },
  });
  // The model library's warnings are the daemon's log lines, not raw lines on standard error.
  const restoreWarnings = logAiSdkWarnings(logger);
  // With JSON lines on standard output, it holds nothing else.
  const say = (text: string): void => {
    if (format === 'pretty') io.stdout(text);
  };
  // One handler from before the start to the stop: a signal while it starts stops it once it has
  // started. (Two in turn left a moment with none: Node then stops watching the signal, and a
  // SIGTERM sent as the start line came out was lost, the daemon running on.)
  let stopAsked = false;
  let stopNow: (() => void) | undefined;
  const onSignal = (): void => {
    if (stopNow === undefined) stopAsked = true;
    else stopNow();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const unwatch = (): void => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  let daemon: Awaited<ReturnType<typeof startDaemon>>;
  try {
    daemon = await startDaemon({
      home,
      config,
      configText,
      env: io.env,
      logger,
      logs,
      version: LOOM_VERSION,
      ...(options.host === undefined ? {} : { host: options.host }),
      ...(options.port === undefined ? {} : { port: options.port }),
    });
  } catch (error) {
    unwatch();
    restoreWarnings();
    // Another daemon may run on this home (DAEMON_RUNNING): its ring file is its own.
    await ring.close({ write: false });
    throw error;
  }
  say(`Loom ${LOOM_VERSION} (pid ${daemon.info.pid}), JSON logs in ${logFile}. Press Ctrl-C to stop.\n`);
  // Once the start's first requests (`loom start` asks for health) are answered.
  const release = setTimeout(releaseStartUpHeap, START_UP_SETTLE_MS).unref();
  await new Promise<void>((resolve) => {
    stopNow = (): void => {
      clearTimeout(release);
      unwatch();
      say('Stopping Loom…\n');
      void daemon
        .stop()
        .then(() => ring.close())
        .finally(() => {
          restoreWarnings();
          resolve();
        });
    };
    if (stopAsked) stopNow();
  });
}

/** Starts the daemon as a detached process and waits until it answers. */
async function runBackground(io: CliIo, options: StartOptions): Promise<void> {
  const { home } = await openHome(io);
  const running = await readDaemonFile(home);
  const json = options.json === true;
  if (running !== undefined) {
    io.stdout(
      json
        ? `${JSON.stringify({ started: false, url: running.url, pid: running.pid, log: daemonLogPath(home) }, null, 2)}\n`
        : `Loom is already running at ${running.url} (pid ${running.pid}).\n`,
    );
    return;
  }
  const logPath = daemonLogPath(home);
  const log = openSync(logPath, 'a');
  const args = [installedPath('bin', 'loom.js'), 'start', '--foreground'];
  if (options.host !== undefined) args.push('--host', options.host);
  if (options.port !== undefined) args.push('--port', String(options.port));
  // The daemon writes its JSON lines into the log file itself; what else it says on standard
  // error (a crash) lands there too, and standard output would only repeat the log.
  const child = spawn(process.execPath, args, { cwd: io.cwd, env: { ...io.env }, detached: true, stdio: ['ignore', 'ignore', log] });
  closeSync(log);
  child.unref();
  const deadline = Date.now() + DAEMON_WAIT_MS;
  while (Date.now() < deadline) {
    const info = await readDaemonFile(home);
    if (info !== undefined && info.pid === child.pid && (await health(info.url)) !== undefined) {
      io.stdout(
        json
          ? `${JSON.stringify({ started: true, url: info.url, pid: info.pid, log: logPath }, null, 2)}\n`
          : `Loom is running at ${info.url} (pid ${info.pid}); logs in ${logPath}.\n`,
      );
      return;
    }
    if (child.pid === undefined || !isProcessAlive(child.pid)) break;
    await delay(100);
  }
  const tail = (await readFile(logPath, 'utf8').catch(() => '')).split('\n').slice(-15).join('\n');
  throw new LoomError('DAEMON_START_FAILED', 'system', `the daemon did not start; the end of ${logPath}:\n${tail}`);
}

/** The options of `loom start` that npm takes for itself when they come before `--`. */
const NPM_TAKES = [
  ['port', 'npm_config_port'],
  ['host', 'npm_config_host'],
  ['log-format', 'npm_config_log_format'],
] as const;

/**
 * Refuses what `npm start --port 4210` hands Loom: npm keeps `--port` (as `npm_config_port`) and
 * passes "4210" on as a stray word, so the daemon would start on its default port. Says the form
 * that works, `npm start -- --port 4210`.
 * @throws {UsageError} for stray words, or an option npm took.
 */
function refuseOptionsNpmTook(io: CliIo, words: readonly string[], options: StartOptions): void {
  const taken = NPM_TAKES.filter(([, variable]) => (io.env[variable] ?? '') !== '').map(([name, variable]) => {
    const value = io.env[variable];
    // `--port 4210` leaves "true" with the value among the stray words; `--port=4210` leaves the value.
    return { name, value: value === 'true' ? words[0] : value };
  });
  const given = (name: string): boolean => (name === 'port' ? options.port : name === 'host' ? options.host : options.logFormat) !== undefined;
  const lost = taken.filter(({ name }) => !given(name));
  if (io.env['npm_lifecycle_event'] !== undefined && lost.length > 0) {
    const flags = lost.map(({ name, value }) => `--${name}${value === undefined ? '' : ` ${value}`}`).join(' ');
    throw new UsageError(
      `cannot start Loom with ${flags}: npm kept ${lost.length === 1 ? 'it' : 'them'} for itself, as npm does with options before \`--\`; run \`npm ${io.env['npm_lifecycle_event'] === 'start' ? 'start' : `run ${io.env['npm_lifecycle_event']}`} -- ${flags}\``,
    );
  }
  if (words.length > 0)
    throw new UsageError(
      `loom start takes no arguments, got ${words.map((word) => `"${word}"`).join(' ')}; options are written --port 4210 (through npm: npm start -- --port 4210)`,
    );
}

/** `loom start`, `loom stop`, `loom status`, `loom doctor`. */
export function registerDaemonCommands(program: Command, io: CliIo): void {
  program
    .command('start')
    .description('start the Loom daemon: agents, schedules, the HTTP API (in the background unless --foreground)')
    .option('--host <host>', 'the address to listen on (default [daemon].host, 127.0.0.1)')
    .option('--port <port>', 'the port to listen on (default [daemon].port, 4200; 0 picks a free one)', parsePort)
    .option('--foreground', 'run in this terminal until Ctrl-C (what `npm start` does)')
    .option('--json', 'in the background, print { started, url, pid, log } (started is false when one already runs)')
    .option(
      '--log-format <format>',
      'with --foreground, what standard output shows: auto (readable lines at a terminal, JSON lines otherwise), pretty or json (default LOOM_LOG_FORMAT, else auto)',
      (value) => parseLogFormat(value),
    )
    .addHelpText(
      'after',
      '\nThe daemon always appends JSON lines to LOOM_HOME/logs/daemon.log; [log].level sets how much.\nThrough npm, options follow `--`: npm start -- --port 4210\n\nExample:\n  $ loom start\n  $ loom start --foreground --port 4300\n  $ loom start --foreground --log-format json | jq .msg\n',
    )
    // Stray words are refused below, saying why: `npm start --port 4210` leaves "4210" here.
    .allowExcessArguments(true)
    .action(async (options: StartOptions, command: Command) => {
      refuseOptionsNpmTook(io, command.args, options);
      if (options.foreground === true) await runForeground(io, options);
      else await runBackground(io, options);
    });

  program
    .command('stop')
    .description('stop the running daemon (in-flight turns are cancelled and their work saved)')
    .addHelpText('after', '\nExample:\n  $ loom stop\n')
    .option('--json', 'print { stopped, pid }')
    .action(async (options: { json?: boolean }) => {
      const { home } = await openHome(io);
      const info = await readDaemonFile(home);
      const url = givenDaemonUrl(io.env);
      // Stopping is signalling a process of this machine: a daemon named only by URL is not one.
      if (url !== undefined && url !== info?.url) {
        throw new UsageError(
          `loom stop stops the daemon of this home (${home.root}${info === undefined ? ', none runs' : `, at ${info.url}`}), not the one at ${url} (--url or LOOM_URL); stop that one where it runs`,
        );
      }
      if (info === undefined) {
        io.stdout(options.json === true ? `${JSON.stringify({ stopped: false, pid: null }, null, 2)}\n` : 'Loom is not running.\n');
        return;
      }
      process.kill(info.pid, 'SIGTERM');
      const deadline = Date.now() + DAEMON_WAIT_MS;
      while (isProcessAlive(info.pid)) {
        if (Date.now() > deadline)
          throw new LoomError('DAEMON_STOP_FAILED', 'system', `the daemon (pid ${info.pid}) did not stop within ${DAEMON_WAIT_MS / 1000} s`);
        await delay(100);
      }
      io.stdout(options.json === true ? `${JSON.stringify({ stopped: true, pid: info.pid }, null, 2)}\n` : `Loom stopped (pid ${info.pid}).\n`);
    });

  program
    .command('status')
    .description('say whether the daemon runs, where, and how many agents it holds')
    .option('--json', 'print { running, url, pid, version, agents, started_at, home, cluster: { store, self, leader, nodes } }')
    .addHelpText(
      'after',
      '\nWith --url (or LOOM_URL), the daemon at that address. When several daemons share a PostgreSQL database,\nit lists them with their last heartbeat and says which one leads (fires the schedules). Exit status 0 when the daemon answers, 1 when it\ndoes not run or does not answer.\n\nExample:\n  $ loom status --json\n  $ loom --url http://10.0.0.5:4200 status\n',
    )
    .action(async (options: { json?: boolean }) => {
      const url = givenDaemonUrl(io.env);
      if (url !== undefined) {
        const answer = await health(url);
        const cluster = answer === undefined ? undefined : await clusterOf(url, io.env['LOOM_API_KEY']);
        const status = { running: answer !== undefined, url, version: answer?.version ?? null, agents: answer?.agents ?? null, cluster: cluster ?? null };
        if (options.json === true) io.stdout(`${JSON.stringify(status, null, 2)}\n`);
        else
          io.stdout(
            answer === undefined
              ? `No Loom daemon answers at ${url}.\n`
              : `Loom ${answer.version ?? '?'} is running at ${url} (${answer.agents ?? '?'} agents).\n${formatCluster(cluster)}`,
          );
        if (answer === undefined) throw new ExitStatus(EXIT.failure);
        return;
      }
      const { home } = await openHome(io);
      const info = await readDaemonFile(home);
      const answer = info === undefined ? undefined : await health(info.url);
      const cluster = info === undefined || answer === undefined ? undefined : await clusterOf(info.url, io.env['LOOM_API_KEY']);
      const status =
        info === undefined
          ? { running: false, home: home.root }
          : {
              running: answer !== undefined,
              url: info.url,
              pid: info.pid,
              version: info.version,
              agents: answer?.agents ?? null,
              started_at: info.startedAt,
              home: home.root,
              cluster: cluster ?? null,
            };
      if (options.json === true) io.stdout(`${JSON.stringify(status, null, 2)}\n`);
      else if (info === undefined) io.stdout(`Loom is not running (home ${home.root}). Start it with: loom start\n`);
      else
        io.stdout(
          `Loom ${info.version} is ${answer === undefined ? 'not answering' : 'running'} at ${info.url} (pid ${info.pid}, since ${info.startedAt}, ${answer?.agents ?? '?'} agents).\n${formatCluster(cluster)}`,
        );
      // Scripts can ask `loom status` whether the daemon serves, as they ask `systemctl is-active`.
      if (answer === undefined) throw new ExitStatus(EXIT.failure);
    });

  program
    .command('doctor')
    .description('check this machine: Node version, home folder, database, model keys, Ollama, the port, and agents that cannot run')
    .option(
      '--json',
      'print { ok, checks: [{ ok, essential, text }], agents: [{ name, state, problems: [{ field, model, kind, problem, fix }] }], daemon_file }',
    )
    .addHelpText(
      'after',
      "\nAn agent cannot run when a model it calls needs a key that is not set (checked in this shell's\nenvironment), or its model server (Ollama, a base_url) does not answer; each is listed with the fix.\nWith [store] url or LOOM_DATABASE_URL, the database check connects to PostgreSQL and reads its\nschema version and clock; it migrates nothing.\nExit status 1 when a check that Loom needs fails (marked ✗); agents that cannot run are warnings (!).\n\nExample:\n  $ loom doctor\n  $ loom doctor --json\n",
    )
    .action(async (options: { json?: boolean }) => {
      const checks: DoctorCheck[] = [];
      const major = Number(process.versions.node.split('.')[0]);
      checks.push({ ok: major >= 24, essential: true, text: `Node.js ${process.version}${major >= 24 ? '' : ' (Loom needs 24 or later)'}` });
      const home = resolveLoomHome(io.env, io.cwd);
      await ensureLoomHome(home);
      let config: Config;
      try {
        config = await loadConfig(home);
        checks.push({ ok: true, essential: true, text: `home folder ${home.root}, config valid` });
      } catch (error) {
        // A broken config is a finding, not the end of the check-up: the rest runs on the defaults.
        checks.push({ ok: false, essential: true, text: `config ${home.configPath}: ${error instanceof Error ? error.message : String(error)}` });
        config = ConfigSchema.parse({});
      }
      const records = await checkDatabase(home, config, io.env, checks);
      if (config.default_model === undefined)
        checks.push({ ok: false, essential: false, text: 'no [default_model]: agents without [model] cannot run (loom init sets one)' });
      else checks.push({ ok: true, essential: false, text: `default model ${modelName(config.default_model)}` });
      const keys = modelKeysIn(io.env);
      checks.push({
        ok: keys.found.length > 0,
        essential: false,
        text:
          keys.found.length > 0
            ? `model keys: ${keys.found.join(', ')} (not set: ${keys.missing.join(', ') || 'none'})`
            : `no model key set (looked for ${keys.missing.join(', ')})`,
      });
      const ollama = await fetch('http://127.0.0.1:11434/api/tags', { signal: AbortSignal.timeout(1_000) }).then(
        (response) => response.ok,
        () => false,
      );
      checks.push({
        ok: ollama,
        essential: false,
        text: ollama ? 'Ollama answers at http://127.0.0.1:11434' : 'Ollama does not answer at http://127.0.0.1:11434',
      });
      const daemon = await readDaemonFile(home);
      if (daemon !== undefined) {
        // The checks above read config.toml as it is now; the daemon holds it as it was when it started.
        const stale = await startedBeforeConfigChanged(home, daemon);
        checks.push({
          ok: !stale,
          essential: false,
          text: `the daemon runs at ${daemon.url} (pid ${daemon.pid})${stale ? ', with config.toml as it was when it started: it changed since, so restart the daemon to use it (loom stop, then loom start)' : ''}`,
        });
      } else {
        const free = await portIsFree(config.daemon.host, config.daemon.port);
        checks.push({
          ok: free,
          essential: true,
          text: `port ${config.daemon.host}:${config.daemon.port} ${free ? 'is free' : 'is taken by another program ([daemon].port or --port picks another)'}`,
        });
      }
      const agents = await agentsThatCannotRun(records, config, io.env);
      const ok = !checks.some((check) => check.essential && !check.ok);
      if (options.json === true) {
        io.stdout(`${JSON.stringify({ ok, checks, agents, daemon_file: daemonFilePath(home) }, null, 2)}\n`);
        if (!ok) throw new ExitStatus(EXIT.failure);
        return;
      }
      for (const check of checks) io.stdout(`${check.ok ? '✓' : check.essential ? '✗' : '!'} ${check.text}\n`);
      const live = records.length;
      if (agents.length === 0) io.stdout(`✓ ${live === 0 ? 'no agents yet' : `${live} agent${live === 1 ? '' : 's'}, each with a model it can call`}\n`);
      for (const agent of agents) {
        for (const problem of agent.problems) io.stdout(`! agent "${agent.name}" cannot run: ${problem.problem}\n    fix: ${problem.fix}\n`);
      }
      io.stdout(`daemon file: ${daemonFilePath(home)}\n`);
      if (!ok) throw new LoomError('DOCTOR_FAILED', 'system', 'some checks failed (marked ✗)');
    });
}

/** A line of `loom doctor`: ✓ when ok, else ✗ when Loom needs it (essential), ! when not. */
interface DoctorCheck {
  ok: boolean;
  essential: boolean;
  text: string;
}

/** How far this machine's clock may be from the database server's before doctor warns. */
const CLOCK_SKEW_WARNING_MS = 1_000;

/**
 * Checks the store and returns its agents: the PostgreSQL database `LOOM_DATABASE_URL` or
 * `[store] url` names (the connection, the schema version, the clock), without migrating it;
 * else the SQLite file (its integrity). Never shows a password.
 */
async function checkDatabase(home: LoomHome, config: Config, env: CliIo['env'], checks: DoctorCheck[]): Promise<AgentRecord[]> {
  let database: ReturnType<typeof resolveStoreUrl>;
  try {
    database = resolveStoreUrl(config, env);
  } catch (error) {
    checks.push({ ok: false, essential: true, text: `database: ${(error as Error).message}` });
    return [];
  }
  if (database === undefined) {
    try {
      const store = openSqliteStore({ path: home.databasePath });
      try {
        const integrity = store.integrityCheck();
        checks.push({ ok: integrity.join() === 'ok', essential: true, text: `database ${home.databasePath}: ${integrity.join('; ')}` });
        return await store.agents.list();
      } finally {
        await store.close();
      }
    } catch (error) {
      checks.push({ ok: false, essential: true, text: `database ${home.databasePath}: ${(error as Error).message}` });
      return [];
    }
  }
  const target = redactDatabaseUrl(database.url);
  let found: PostgresInspection;
  try {
    found = await inspectPostgresDatabase(database.url, { connectTimeoutMs: 5_000 });
  } catch (error) {
    checks.push({ ok: false, essential: true, text: `database ${target} (from ${database.from}): ${(error as Error).message}` });
    return [];
  }
  checks.push({ ok: true, essential: true, text: `database ${target} (from ${database.from}): connected` });
  const { schemaVersion, latestVersion } = found;
  checks.push(
    schemaVersion > latestVersion
      ? {
          ok: false,
          essential: true,
          text: `database schema version ${schemaVersion} is newer than this Loom knows (${latestVersion}): upgrade Loom, or point [store] url at another database`,
        }
      : schemaVersion < latestVersion
        ? { ok: true, essential: true, text: `database schema version ${schemaVersion}: Loom migrates it to ${latestVersion} when it starts` }
        : { ok: true, essential: true, text: `database schema version ${schemaVersion} (the newest)` },
  );
  const skew = found.serverTime - found.localTime;
  checks.push({
    ok: Math.abs(skew) <= CLOCK_SKEW_WARNING_MS,
    essential: false,
    text: `this machine's clock is ${Math.abs(skew)} ms ${skew > 0 ? 'behind' : 'ahead of'} the database server's${Math.abs(skew) <= CLOCK_SKEW_WARNING_MS ? '' : ' (run NTP on both: schedules and timeouts follow this clock)'}`,
  });
  if (schemaVersion !== latestVersion) return [];
  try {
    const store = await openPostgresStore({ url: database.url, poolSize: 1 });
    try {
      return await store.agents.list();
    } finally {
      await store.close();
    }
  } catch (error) {
    checks.push({ ok: false, essential: true, text: `database ${target}: ${(error as Error).message}` });
    return [];
  }
}

/** The stored agents whose models cannot be called, each with what is wrong and the fix. */
async function agentsThatCannotRun(
  records: readonly AgentRecord[],
  config: Config,
  env: CliIo['env'],
): Promise<{ name: string; state: string; problems: ModelProblem[] }[]> {
  // Each model server is asked once, however many agents name it.
  const probes = new Map<string, Promise<boolean>>();
  const found = await Promise.all(
    records.map(async (record) => {
      const manifest = ManifestSchema.safeParse(record.manifest);
      // A stored manifest that no longer parses is reported when the kernel restores it.
      const problems = manifest.success ? await checkAgentModels(manifest.data, { defaultModel: config.default_model, env, probes }) : [];
      return { name: record.name, state: record.state, problems };
    }),
  );
  return found.filter((agent) => agent.problems.length > 0);
}

function portIsFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}
