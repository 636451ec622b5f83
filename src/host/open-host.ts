import { homedir } from 'node:os';
import { sep } from 'node:path';
import { createSystemClock } from '../clock/index.ts';
import { type Config, expandHome, type LoomHome, resolveStoreUrl } from '../config/index.ts';
import type { Clock, Logger, Store, Tool } from '../contracts/index.ts';
import type { LogRing } from '../logging/index.ts';
import {
  type AgentLifecycleHook,
  type AgentRuntime,
  type BootReport,
  createKernel,
  createKernelServices,
  createUuidGenerator,
  type Kernel,
  kernelEventOf,
  logKernelEvents,
} from '../kernel/index.ts';
import { createEmergentEngine } from '../forged-tools/index.ts';
import { createCostCatalog, createModelResolver, type ModelFetch } from '../models/index.ts';
import { type CodeModules, createCodeModules } from '../code-modules/index.ts';
import { type ChannelService, createChannelService, pollsPlatform } from '../channels/index.ts';
import {
  type ChannelLeases,
  type ClusterNode,
  createSingleNode,
  defaultNodeName,
  type EventRelay,
  type JobWorker,
  openChannelLeases,
  openPostgresCluster,
  openPostgresEventRelay,
  openPostgresJobWorker,
  openTurnLeases,
  type TurnLeases,
} from '../cluster/index.ts';
// An entry past the index: the SDKs load on first use (test/architecture/lazy-sdks.test.ts).
import { a2aSendTool } from '../a2a/external-agents.ts';
import type { McpClientManager } from '../mcp/index.ts';
import {
  createPackageInstaller,
  createPackageRuntime,
  createPackageService,
  createSkillOffers,
  type PackageEnvironment,
  type PackageRuntime,
  type PackageService,
} from '../packages/index.ts';
import { createScheduler } from '../scheduler/index.ts';
import { openPostgresStore, openSqliteStore, postgresMigrations, redactDatabaseUrl } from '../store/index.ts';
import { BUILTIN_TOOLS } from '../tools/index.ts';
import { createIdentityFileReader } from './identity-files.ts';
import { createSkillsHook } from './skills-hook.ts';
import { createWorkspaceHook } from './workspace-hook.ts';
import { realPathAsFar } from './real-path.ts';

/** What a host is opened with. The environment is read here, never inside the kernel. */
export interface HostOptions {
  home: LoomHome;
  config: Config;
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  clock?: Clock;
  /** The fetch model providers use (tests point it nowhere in particular; the default is global fetch). */
  fetch?: ModelFetch;
  /**
   * Run agents' `[schedule]` (continuous, periodic, proactive). The daemon does; a one-off CLI
   * command must not, or listing agents would wake them.
   */
  runSchedules?: boolean;
  /** Connect to `[[mcp_servers]]` (in the background) and give agents their tools. The daemon does. */
  connectMcpServers?: boolean;
  /** Start `[[channels]]` (in the background): receive and answer people's messages. The daemon does. */
  runChannels?: boolean;
  /** The fetch channels' adapters use for plain HTTP (webhook replies). */
  channelFetch?: typeof fetch;
  /** The ring the logger also writes to: event-log agents read it (their own turns' records left out). */
  logs?: LogRing;
  /** The Loom version this node records in the cluster's view (the daemon's). */
  version?: string;
}

/** A booted kernel with its Node edges: the store (SQLite, or PostgreSQL), workspaces, models and tools. */
export interface Host {
  kernel: Kernel;
  store: Store;
  runtime: AgentRuntime;
  /** The MCP servers' connections, when the host connects them. */
  mcp: McpClientManager | undefined;
  /** Agent packages: install, list, run (the service every door uses) and their runtime. */
  packages: PackageService & { runtime: PackageRuntime };
  /** `[[channels]]`: running in the daemon; elsewhere their state and pairings only. */
  channels: ChannelService;
  /**
   * This process as a node: on PostgreSQL a daemon joins the other daemons of the database (one
   * leads and fires the schedules); otherwise it is alone, and leads.
   */
  cluster: ClusterNode;
  /**
   * Each running turn is leased to its node, and taken over by another once its node dies: on
   * PostgreSQL (decision 0061). The kernel and the A2A recovery go by it.
   */
  leasesTurns: boolean;
  report: BootReport;
  close(): Promise<void>;
}

/** The tools every agent may be granted: the built-ins and `a2a_send`. */
const LOCAL_TOOLS: readonly Tool<never>[] = [...BUILTIN_TOOLS, a2aSendTool as unknown as Tool<never>];

/**
 * Where an agent's workspace is: `[workspace]` of its manifest (with `~` the home of the
 * environment Loom was given), else under the home's workspaces. An agent's name is one path
 * segment (letters, digits, `_`, `-`, and `.` in names stored before the dot was refused; never
 * `.` or `..` alone), so the default is the folder's path and the name, with nothing to
 * normalize: a start asks it of every agent, and normalizing hundreds of paths at start made V8
 * optimize Node's path helper, paging ~5 MB of its optimizing compiler into an idle daemon
 * (docs/performance.md, "Start and idle memory").
 */
function workspacesOf(options: Pick<HostOptions, 'home' | 'env'>): AgentRuntime['workspaceOf'] {
  const { home, env } = options;
  return (agent) => (agent.workspace === undefined ? `${home.workspacesDir}${sep}${agent.name}` : expandHome(agent.workspace, env['HOME'] ?? homedir()));
}

/** What the runtime is given beside config and the environment, built before it. */
interface RuntimeParts {
  /** Tools that come and go (MCP servers'). */
  moreTools?: (() => readonly Tool<never>[]) | undefined;
  /** The modules of code agents. */
  codeModules?: CodeModules | undefined;
}

/** Builds the model runtime from config, the environment and the parts built before it; nothing changes it afterwards but the default model (decision 0054). */
function createRuntime(options: Pick<HostOptions, 'home' | 'config' | 'env' | 'fetch' | 'logs'>, parts: RuntimeParts = {}): AgentRuntime {
  const { config, home } = options;
  const { moreTools, codeModules } = parts;
  return {
    resolver: createModelResolver(options.fetch === undefined ? { env: options.env } : { env: options.env, fetch: options.fetch }),
    costs: createCostCatalog(config.prices),
    tools: moreTools === undefined ? LOCAL_TOOLS : () => [...LOCAL_TOOLS, ...moreTools()],
    env: options.env,
    logs: options.logs,
    ...(config.default_model === undefined ? {} : { defaultModel: config.default_model }),
    aliases: config.models.aliases,
    tiers: config.routing,
    workspaceOf: workspacesOf(options),
    realPath: realPathAsFar,
    contextWindowTokens: (model) => config.context_windows[`${model.provider}/${model.model}`] ?? 128_000,
    identityFiles: createIdentityFileReader(),
    skills: createSkillOffers(home.skillsDir),
    ...(config.models.max_concurrent_calls === 0 ? {} : { maxConcurrentModelCalls: config.models.max_concurrent_calls }),
    ...(codeModules === undefined ? {} : { codeModules }),
  };
}

/** What packages are checked against, from config: model names, MCP servers, the time zone, the default model. */
export function packageEnvironment(config: Config): PackageEnvironment {
  let userTimezone = config.scheduler.timezone;
  return {
    aliases: config.models.aliases,
    mcpServers: config.mcp_servers.map((server) => server.name),
    // Read when a package needs it: the time-zone data costs a daemon without packages start-up time and memory.
    get userTimezone(): string {
      userTimezone ??= Intl.DateTimeFormat().resolvedOptions().timeZone;
      return userTimezone;
    },
    defaultModel: config.default_model,
  };
}

/** Where the store is when it is on PostgreSQL: `LOOM_DATABASE_URL` or `[store] url` (the environment wins). */
type StoreUrl = NonNullable<ReturnType<typeof resolveStoreUrl>>;

/**
 * Opens the store: the PostgreSQL database `database` names, else the home's SQLite file.
 * @throws {StoreError} when the database cannot be opened.
 */
async function openStore(options: Pick<HostOptions, 'home' | 'config' | 'logger'>, database: StoreUrl | undefined, nodeId: string): Promise<Store> {
  if (database === undefined) return openSqliteStore({ path: options.home.databasePath, synchronous: options.config.store.synchronous });
  // The node's id names its events' notifications, so that its own relay skips them.
  return openPostgresStore({ url: database.url, logger: options.logger, origin: nodeId, turnLeaseMs: options.config.cluster.turn_lease_seconds * 1000 });
}

/**
 * Opens the store and boots a kernel on it: the composition root shared by the CLI's
 * in-process mode and the daemon, and the only one. Every part is built here, in the order it
 * needs the others, and handed what it uses: the kernel's services, the forged-tools engine on
 * their ports, the kernel proper with the engine; the parts built on the kernel (the scheduler,
 * the package runtime) are registered as its hooks before it boots.
 * @throws {ConfigError} when `LOOM_DATABASE_URL` is not a PostgreSQL URL.
 */
export async function openHost(options: HostOptions): Promise<Host> {
  const ids = createUuidGenerator();
  const nodeId = ids.uuid();
  // The PostgreSQL database the store is on, when it is: the cluster, the work queue and the event relay share it.
  const database = resolveStoreUrl(options.config, options.env);
  // On PostgreSQL each running turn is leased to its node (decision 0061).
  const leasesTurns = database !== undefined;
  const store = await openStore(options, database, nodeId);
  let cluster: ClusterNode | undefined;
  let worker: JobWorker | undefined;
  let relay: EventRelay | undefined;
  let leases: TurnLeases | undefined;
  let channelLeases: ChannelLeases | undefined;
  try {
    const clock = options.clock ?? createSystemClock();
    const joined = await openCluster(options, clock, nodeId, options.runSchedules === true ? database : undefined);
    cluster = joined;
    // Joined before anything starts, so this node knows whether it leads (fires the schedules).
    await joined.start();
    const leadership = joined.store === 'postgres' ? joined : undefined;
    // The database the nodes share, when they share one (openCluster joins PostgreSQL only with it).
    const shared = joined.store === 'postgres' ? database : undefined;
    // On PostgreSQL, triggered work goes through the shared work queue: any node runs it.
    const jobs = shared === undefined ? undefined : await openJobWorker(options, shared.url, nodeId);
    worker = jobs;
    const mcp =
      options.connectMcpServers === true && options.config.mcp_servers.length > 0
        ? (await import('../mcp/client/index.ts')).createMcpClientManager({
            servers: options.config.mcp_servers,
            env: options.env,
            logger: options.logger,
            clock,
            oauthDir: options.home.mcpOAuthDir,
          })
        : undefined;
    const workspaceOf = workspacesOf(options);
    const codeModules = createCodeModules({ clock, logger: options.logger, env: options.env, workspaceOf });
    const runtime = createRuntime(options, { moreTools: mcp === undefined ? undefined : () => mcp.tools(), codeModules });
    // Workspaces first: a Python script starts in its agent's.
    const hooks: AgentLifecycleHook[] = [createWorkspaceHook(workspaceOf), codeModules];
    if (runtime.skills !== undefined) hooks.push(createSkillsHook(runtime.skills, options.logger));
    // The kernel in two halves, the forged-tools engine between them: built here on the ports of
    // the kernel's services (its registry, its judges' metered model call, approvals), handed to the kernel proper.
    const services = createKernelServices({
      store,
      clock,
      ids,
      logger: options.logger,
      runtime,
      hooks,
      approvalTimeoutMs: options.config.approvals.timeout_seconds * 1000,
      taint: options.config.taint,
      // A workflow under way is the leader's to go on with (at its start; see docs/cluster.md).
      resumeBackgroundWork: options.runSchedules === true && joined.isLeader(),
      scheduleTimezone: options.config.scheduler.timezone,
      node: {
        id: joined.id,
        find: (id) => joined.liveNode(id),
        othersAlive: () => joined.othersAlive(),
        leasesTurns,
        turnLeaseMs: options.config.cluster.turn_lease_seconds * 1000,
        ...(joined.exclusive === undefined ? {} : { exclusive: joined.exclusive.bind(joined) }),
      },
    });
    const forged = createEmergentEngine({ store, clock, ids, logger: services.logger, ...services.forging });
    const kernel = createKernel(services, forged);
    // The subsystems built on the kernel are its hooks too, registered after the others and before it boots.
    // What becomes of the timed wake-ups and fires missed while the daemon was down (decision 0046).
    const catchUp = { policy: options.config.scheduler.catch_up, windowSeconds: options.config.scheduler.catch_up_window_seconds };
    const scheduler =
      options.runSchedules === true
        ? createScheduler({
            clock,
            logger: options.logger,
            timezone: options.config.scheduler.timezone,
            leadership,
            queue: jobs,
            runs: kernel.wakeRuns,
            catchUp,
            events: kernel.events,
          })
        : undefined;
    if (scheduler !== undefined) kernel.addHook(scheduler);
    const environment = packageEnvironment(options.config);
    const packageRuntime = createPackageRuntime({
      kernel,
      store,
      clock,
      ids,
      logger: options.logger,
      environment,
      timers: scheduler,
      catchUp,
      leadership,
      queue: jobs,
      node: leadership === undefined ? undefined : { id: joined.id, alive: async (id) => (await joined.liveNode(id)) !== undefined },
    });
    kernel.addHook(packageRuntime);
    // Every kernel event worth asking about is a line of the daemon's log (what event-log agents read).
    const stopEventLog = logKernelEvents(kernel.events, options.logger.child({ component: 'kernel' }));
    // A package installed on another node (heard through the event relay): its triggers start here too.
    kernel.events.subscribe((event) => {
      if (event.type !== 'package-install') return;
      packageRuntime
        .activate(event.name)
        .catch((error: unknown) =>
          options.logger.error({ err: error, package: event.name }, `could not start package "${event.name}" installed on another node`),
        );
    });
    options.logs?.excludeAgents((agentId) => {
      try {
        return kernel.get(agentId).module === 'builtin:eventlog';
      } catch {
        return false;
      }
    });
    const installer = createPackageInstaller({
      kernel,
      store,
      runtime: packageRuntime,
      clock,
      environment,
      registries: options.config.registries.map((registry) => registry.location),
      packagesDir: options.home.agentsDir,
      skillsDir: options.home.skillsDir,
      workspacesDir: options.home.workspacesDir,
    });
    // Wake-ups the last stop cut off: the daemon alone knows no other process runs them.
    // Its turn, once the agent was woken, was recorded when accepted and resumes (decision 0045): the run says so.
    if (scheduler !== undefined && leadership === undefined)
      await store.scheduleRuns.interruptRunning(
        clock.now(),
        "interrupted: the daemon stopped while the run was going; a turn it had begun resumes at this start, in the agent's session",
      );
    const report = await kernel.boot();
    // Other nodes' events, once the agents are held; read again after listening, for what changed in between.
    relay = shared === undefined ? undefined : await openEventRelay(options, shared.url, nodeId, store, kernel);
    if (relay !== undefined) {
      await relay.start();
      await kernel.reload();
    }
    // This node's turns are leased to it; a daemon takes over the turns of nodes that stopped renewing theirs.
    leases = database === undefined ? undefined : await openLeases(options, database.url, nodeId, kernel);
    leases?.start();
    // Jobs are taken once everything they run on is up.
    await jobs?.start();
    // In the background: a slow or broken server never holds up the start.
    mcp?.start();
    // On PostgreSQL a channel that polls its platform is polled by one node at a time (decision 0061).
    channelLeases =
      database === undefined || !options.config.channels.some(pollsPlatform)
        ? undefined
        : await openChannelLeases({ url: database.url, nodeId, leaseMs: options.config.cluster.channel_lease_seconds * 1000, logger: options.logger });
    const channels = createChannelService({
      channels: options.config.channels,
      people: options.config.people,
      kernel,
      store,
      clock,
      logger: options.logger,
      env: options.env,
      ...(options.channelFetch === undefined ? {} : { fetch: options.channelFetch }),
      ...(channelLeases === undefined ? {} : { pollLease: channelLeases }),
    });
    // In the background too: a platform that is slow to answer never holds up the start.
    if (options.runChannels === true) void channels.start();
    return {
      kernel,
      store,
      runtime,
      mcp,
      packages: { ...createPackageService({ installer, runtime: packageRuntime, store }), runtime: packageRuntime },
      channels,
      report,
      cluster: joined,
      leasesTurns,
      close: async () => {
        await relay?.stop();
        await channels.stop();
        await channelLeases?.close();
        // Jobs running here stop and go back to the queue: another node takes them at once.
        await jobs?.stop();
        await packageRuntime.shutdown();
        // No timed work is left here: the lock goes, and another node leads while this one ends its turns.
        scheduler?.stopAll();
        await joined.stop();
        await kernel.shutdown();
        // Renewed until the turns here are committed.
        await leases?.stop();
        // What channels were answering has ended with the turns; its outcome is stored before the store closes,
        // and the messages left unsettled are given up to the other nodes (decision 0061).
        await channels.idle();
        await codeModules.close();
        await mcp?.stop();
        await store.close();
        stopEventLog();
      },
    };
  } catch (error) {
    await channelLeases?.close();
    await leases?.stop();
    await relay?.stop();
    await worker?.stop();
    await cluster?.stop();
    await store.close();
    throw error;
  }
}

/** This daemon's relay of the events other nodes record: each reaches its kernel (agents held as stored, subscribers told). */
async function openEventRelay(options: HostOptions, url: string, nodeId: string, store: Store, kernel: Kernel): Promise<EventRelay> {
  return openPostgresEventRelay({
    url,
    origin: nodeId,
    logger: options.logger,
    events: store.events,
    deliver: (event) => kernel.receive(kernelEventOf(event)),
    resync: () => kernel.reload(),
  });
}

/**
 * This process's leases on the turns it runs on the PostgreSQL store; a daemon also takes over and
 * resumes the turns of nodes that stopped renewing theirs (a CLI command only renews its own).
 */
async function openLeases(options: HostOptions, url: string, nodeId: string, kernel: Kernel): Promise<TurnLeases> {
  return openTurnLeases({
    url,
    target: redactDatabaseUrl(url),
    nodeId,
    logger: options.logger,
    leaseMs: options.config.cluster.turn_lease_seconds * 1000,
    held: () => kernel.journaledTurns(),
    ...(options.runSchedules === true ? { resume: (turnId: string) => kernel.resumeTurn(turnId) } : {}),
  });
}

/** This daemon's side of the shared work queue on the PostgreSQL database its cluster node joined. */
async function openJobWorker(options: HostOptions, url: string, nodeId: string): Promise<JobWorker> {
  return openPostgresJobWorker({
    url,
    target: redactDatabaseUrl(url),
    nodeId,
    logger: options.logger,
    leaseMs: options.config.cluster.job_lease_seconds * 1000,
    concurrency: options.config.cluster.job_concurrency,
  });
}

/**
 * This process as a node: a daemon on PostgreSQL joins the database's nodes; anything else (a
 * daemon on SQLite, a CLI command) is a node alone, always leading.
 */
async function openCluster(options: HostOptions, clock: Clock, id: string, database: StoreUrl | undefined): Promise<ClusterNode> {
  const name = options.config.cluster.node_name ?? defaultNodeName();
  const version = options.version ?? 'unknown';
  if (database === undefined) return createSingleNode({ id, name, version, clock });
  return openPostgresCluster({
    url: database.url,
    target: redactDatabaseUrl(database.url),
    id,
    name,
    version,
    schemaVersion: postgresMigrations.at(-1)?.version ?? 0,
    logger: options.logger,
  });
}
