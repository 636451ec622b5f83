import type { LoomHome } from '../config/index.ts';
import { LoomError } from '../errors/index.ts';
import { readDaemonFile, staleDaemon } from '../daemon/index.ts';
import { agentDetail, type ApprovalView, type SpawnCheckOptions, spawnedAgent, toApprovalView, toPairingView } from '../http/index.ts';
import {
  type AnswerOf,
  API,
  type ApiClient,
  apiClient,
  type ApiRequestInit,
  type ApiRoute,
  type CallArgs,
  type ApprovalStatusFilter,
  type PairingView,
  pathOf,
} from '../wire/index.ts';
import { LOCAL_OWNER } from '../access/index.ts';
import {
  type AgentDetailView,
  type AgentView,
  type CancelledTurnView,
  kernelAs,
  type ScheduleRunView,
  toTurnView,
  type TurnView,
  type UsageRow,
} from '../kernel/index.ts';
import type { Manifest } from '../manifest/index.ts';
import { type ForgedToolView, type PromotionResult, registeredOrThrow } from '../forged-tools/index.ts';
import { type InstallPlan, offerInstalledSkills, type PackageService } from '../packages/index.ts';
import type { ChannelView } from '../channels/index.ts';
import type { JsonObject } from '../contracts/index.ts';
import type { AgentEvent } from '../runtime/index.ts';
import { safeParseJson } from '../validation/index.ts';
import { type CliContext, openCliContext, openHome } from './cli-context.ts';
import { reconnectingTurn } from './turn-reconnect.ts';
import type { CliIo } from './cli-io.ts';

/**
 * An agent event as the CLI renders it: a finished run carries the turn's JSON view; a `notice`
 * is the CLI's own (a broken stream being taken up again, see `reconnectingTurn`).
 */
export type CliEvent = Exclude<AgentEvent, { type: 'run-finish' }> | { type: 'run-finish'; result: TurnView } | { type: 'notice'; text: string };

/**
 * What CLI commands act through: a running daemon over HTTP, or (when none runs) a kernel
 * booted in this process on the same home. Both answer with the same JSON views.
 */
export interface CliBackend {
  /** `daemon <url>` or `in-process`, for messages. */
  readonly kind: 'daemon' | 'in-process';
  /** Spawns an agent; the warnings say why it cannot run where it runs (a missing key, a model server that does not answer). */
  spawn(manifest: Manifest, parent?: string): Promise<SpawnedAgent>;
  /** Replaces a live agent's manifest (its session and memory stay). */
  update(reference: string, manifest: Manifest): Promise<SpawnedAgent>;
  list(): Promise<AgentView[]>;
  get(reference: string): Promise<AgentDetailView>;
  suspend(reference: string): Promise<AgentView>;
  resume(reference: string): Promise<AgentView>;
  kill(reference: string): Promise<AgentView[]>;
  /** Sends a message and waits for the reply; `signal` stops waiting (in process, it cancels the turn; a daemon's turn outlives its client). */
  send(reference: string, message: string, options?: { signal?: AbortSignal }): Promise<TurnView>;
  /** Streams a turn's events; `signal` stops the stream (in process, it cancels the turn; a daemon's turn outlives its client). */
  stream(reference: string, message: string, options?: { signal?: AbortSignal }): AsyncIterable<CliEvent>;
  /** Cancels the agent's running turn (what it said is kept) and resolves once it is committed; `signal` stops waiting. */
  cancelTurn(reference: string, options?: { signal?: AbortSignal }): Promise<CancelledTurnView>;
  usage(agent?: string): Promise<UsageRow[]>;
  /** Approval requests with the status, oldest first (pending ones by default). */
  approvals(status?: ApprovalStatusFilter): Promise<ApprovalView[]>;
  /** Approves or denies a pending request; in-process the decision is recorded as by `local`. */
  /** `answer`: the fields answering a question (a request whose input carries `requestedSchema`). */
  decideApproval(id: string, approved: boolean, reason?: string, answer?: JsonObject): Promise<ApprovalView>;
  /** Empties an agent's session history. */
  resetSession(reference: string): Promise<void>;
  /** An agent's scheduled wake-ups, newest due first (100 unless `limit` says otherwise). */
  runs(reference: string, limit?: number): Promise<ScheduleRunView[]>;
  /** Forces a wake-up of a continuous or periodic agent now; resolves with its run once it has ended. */
  wake(reference: string): Promise<ScheduleRunView>;
  /** Agent packages: the daemon's API, or the in-process host's service (same views). */
  packages: PackageService;
  /** Forged tools: the daemon's `/api/tools/forged`, or the kernel's (a refused forge throws `FORGE_REFUSED`). */
  forgedTools: ForgedToolClient;
  /** Channels: the daemon's `/api/channels` (running), or the store's view of them (stopped). */
  channels: ChannelClient;
  close(): Promise<void>;
}

/** A spawned or updated agent as `loom agent show --json` shows it, with warnings about it (as `POST /api/agents` answers). */
export type SpawnedAgent = AgentDetailView & { warnings: string[] };

/** Channels as the CLI reaches them. */
export interface ChannelClient {
  list(): Promise<ChannelView[]>;
  approve(code: string): Promise<PairingView>;
}

/** Forged tools as the CLI reaches them, the same over HTTP and in process. */
export interface ForgedToolClient {
  list(agent?: string): Promise<ForgedToolView[]>;
  get(id: string): Promise<ForgedToolView>;
  forge(agent: string, request: unknown): Promise<ForgedToolView>;
  import(agent: string, document: string): Promise<ForgedToolView>;
  export(id: string): Promise<string>;
  promote(id: string): Promise<PromotionResult>;
  demote(id: string, reason?: string): Promise<ForgedToolView>;
}

function inProcess(context: CliContext, env: CliIo['env']): CliBackend {
  const { packages, channels } = context;
  // The person at the terminal is the owner of this LOOM_HOME; the kernel judges them as any door's caller.
  const kernel = kernelAs(context.kernel, LOCAL_OWNER);
  // What the daemon's agent routes check a spawn against, from this process: the same function makes the same warnings.
  const checks: SpawnCheckOptions = {
    readiness: { defaultModel: context.config.default_model, env },
    skills: (allowlist) => offerInstalledSkills(context.home.skillsDir, allowlist),
  };
  return {
    kind: 'in-process',
    spawn: async (manifest, parent) => spawnedAgent(kernel, await kernel.spawn(manifest, parent === undefined ? {} : { parent }), manifest, checks),
    update: async (reference, manifest) => spawnedAgent(kernel, await kernel.update(reference, manifest), manifest, checks),
    list: () => Promise.resolve(kernel.list()),
    get: async (reference) => (await agentDetail(kernel, reference, checks)).detail,
    suspend: (reference) => kernel.suspend(reference),
    resume: (reference) => kernel.resume(reference),
    kill: (reference) => kernel.kill(reference),
    send: async (reference, message, options = {}) =>
      toTurnView(await kernel.send(reference, message, options.signal === undefined ? {} : { signal: options.signal })),
    async *stream(reference, message, options = {}) {
      for await (const event of kernel.stream(reference, message, options.signal === undefined ? {} : { signal: options.signal })) {
        yield event.type === 'run-finish' ? { type: 'run-finish', result: toTurnView(event.result) } : event;
      }
    },
    // In process the cancel is the kernel's own, and done once the turn is committed: nothing to stop waiting for.
    cancelTurn: (reference) => kernel.cancelTurn(reference),
    usage: (agent) => kernel.usage(agent === undefined ? {} : { agent }),
    approvals: async (status = 'pending') => (await kernel.approvals(status)).map(toApprovalView),
    decideApproval: async (id, approved, reason, answer) => toApprovalView(await kernel.decide(id, { approved, reason: reason ?? null, answer })),
    resetSession: (reference) => kernel.resetSession(reference),
    runs: (reference, limit) => kernel.scheduleRuns(reference, limit === undefined ? {} : { limit }),
    wake: (reference) => kernel.wakeNow(reference),
    packages,
    forgedTools: {
      list: (agent) => kernel.forgedTools.list(agent === undefined ? {} : { agent }),
      get: (id) => kernel.forgedTools.get(id),
      forge: async (agent, request) => registeredOrThrow(await kernel.forgedTools.forge(agent, request)),
      import: async (agent, document) => registeredOrThrow(await kernel.forgedTools.import(agent, document)),
      export: async (id) => (await kernel.forgedTools.export(id)).document,
      promote: (id) => kernel.forgedTools.promote(id),
      demote: (id, reason) => kernel.forgedTools.demote(id, reason ?? null),
    },
    channels: { list: () => channels.list(), approve: async (code) => toPairingView(await channels.approve(code)) },
    close: () => context.close(),
  };
}

/** Turns an API error response into the LoomError the daemon raised (exit status 2 for 4xx). */
async function apiError(response: Response): Promise<LoomError> {
  const text = await response.text();
  const parsed = safeParseJson(text);
  const body = parsed.ok ? (parsed.value as { error?: { code?: string; message?: string } }) : {};
  const code = body.error?.code ?? `HTTP_${response.status}`;
  const message = body.error?.message ?? `the daemon answered ${response.status} ${response.statusText}`;
  return new LoomError(code, response.status < 500 ? 'user' : 'system', message);
}

/**
 * fetch's failures that mean the daemon cannot be reached, by the code of their `cause` (or the
 * name of a timeout's error): nothing answers there, the connection was cut, or it was too slow.
 */
const NETWORK_FAILURES = new Map<string, 'unreachable' | 'cut' | 'slow'>([
  ...['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT'].map(
    (code) => [code, 'unreachable'] as const,
  ),
  ...['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED'].map((code) => [code, 'cut'] as const),
  ...['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'TimeoutError'].map((code) => [code, 'slow'] as const),
]);

/**
 * The daemon's answer to a request for `path`. A network failure (see {@link NETWORK_FAILURES})
 * becomes `DAEMON_UNREACHABLE`, which says where and what to do instead of fetch's bare "fetch
 * failed"; anything else (an abort) is thrown as it is.
 * @throws {LoomError} `DAEMON_UNREACHABLE`.
 */
async function fetchDaemon(url: string, path: string, init: RequestInit = {}): Promise<Response> {
  try {
    return await fetch(`${url}${path}`, init);
  } catch (error) {
    const code = !(error instanceof Error) ? undefined : error.name === 'TimeoutError' ? error.name : (error.cause as NodeJS.ErrnoException | undefined)?.code;
    const kind = code === undefined ? undefined : NETWORK_FAILURES.get(code);
    if (kind === undefined) throw error;
    const fix = '`loom status` tells, `loom start` (or `npm start`) starts it';
    const message = {
      // Nothing listens there: the usual case, a daemon not started (or stopped).
      unreachable:
        code === 'ECONNREFUSED'
          ? `the daemon at ${url} is not running: start it with \`loom start\` (or \`npm start\`); \`loom status\` tells where it runs`
          : `cannot reach the Loom daemon at ${url} (${code}); is it running? ${fix}`,
      cut: `lost the connection to the Loom daemon at ${url} (${code}); is it still running? ${fix}`,
      slow: `the Loom daemon at ${url} did not answer within the time the CLI waits (${code}): a long turn goes on in the daemon (\`loom send --stream\` shows one as it runs); if it is not running, ${fix}`,
    }[kind];
    throw new LoomError('DAEMON_UNREACHABLE', 'system', message, { cause: error, isRetryable: true });
  }
}

/** A request to the daemon at `url`, with `apiKey` as its key when given. */
const fetchWithKey =
  (url: string, apiKey: string | undefined) =>
  (path: string, init: Partial<ApiRequestInit> = {}): Promise<Response> =>
    fetchDaemon(url, path, { ...init, headers: { ...(apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` }), ...init.headers } });

/** The API's client for the daemon at `url`: its refusals are the daemon's LoomErrors. */
const daemonClient = (url: string, apiKey: string | undefined): ApiClient => apiClient({ fetch: fetchWithKey(url, apiKey), error: apiError });

function overHttp(url: string, apiKey: string | undefined): CliBackend {
  const api = daemonClient(url, apiKey);
  const agent = (reference: string): { agent: string } => ({ agent: reference });
  const id = (value: string): { id: string } => ({ id: value });
  return {
    kind: 'daemon',
    spawn: (manifest, parent) => api.call(API.spawnAgent, { query: { parent }, body: manifest }),
    update: (reference, manifest) => api.call(API.updateAgent, { params: agent(reference), body: manifest }),
    list: () => api.call(API.listAgents),
    get: (reference) => api.call(API.getAgent, { params: agent(reference) }),
    suspend: (reference) => api.call(API.suspendAgent, { params: agent(reference) }),
    resume: (reference) => api.call(API.resumeAgent, { params: agent(reference) }),
    kill: (reference) => api.call(API.killAgent, { params: agent(reference) }),
    send: (reference, message, options = {}) => api.call(API.sendMessage, { params: agent(reference), body: { message }, ...withSignal(options.signal) }),
    async *stream(reference, message, options = {}) {
      const response = await api.open(API.sendMessage, {
        params: agent(reference),
        body: { message },
        headers: { accept: 'text/event-stream' },
        ...withSignal(options.signal),
      });
      if (response.body === null) throw await apiError(response);
      // A stream that breaks (the daemon restarted, the network failed) is taken up again from its last event (decision 0059).
      const follow = (lastEventId: string | undefined): Promise<Response> =>
        fetchWithKey(url, apiKey)(pathOf(API.runningTurn, agent(reference)), {
          headers: { accept: 'text/event-stream', ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) },
          ...withSignal(options.signal),
        });
      yield* reconnectingTurn(response.body, { url, follow, toError: apiError }, options.signal);
    },
    cancelTurn: (reference, options = {}) => api.call(API.cancelTurn, { params: agent(reference), ...withSignal(options.signal) }),
    usage: (name) => api.call(API.usage, { query: { agent: name } }),
    approvals: (status = 'pending') => api.call(API.approvals, { query: { status } }),
    decideApproval: (approval, approved, reason, answer) =>
      api.call(approved ? API.approve : API.deny, {
        params: id(approval),
        body:
          reason === undefined && answer === undefined
            ? undefined
            : { ...(reason === undefined ? {} : { reason }), ...(answer === undefined ? {} : { answer }) },
      }),
    resetSession: (reference) => api.call(API.resetSession, { params: agent(reference) }),
    runs: (reference, limit) => api.call(API.scheduleRuns, { params: agent(reference), query: { limit } }),
    wake: (reference) => api.call(API.wakeAgent, { params: agent(reference) }),
    packages: packagesOverHttp(api),
    forgedTools: {
      list: (name) => api.call(API.forgedTools, { query: { agent: name } }),
      get: (tool) => api.call(API.forgedTool, { params: id(tool) }),
      forge: (name, request) => api.call(API.forgeTool, { body: { agent: name, request: request as JsonObject } }),
      import: (name, document) => api.call(API.importTool, { body: { agent: name, document } }),
      export: (tool) => api.call(API.exportTool, { params: id(tool) }),
      promote: (tool) => api.call(API.promoteTool, { params: id(tool) }),
      demote: (tool, reason) => api.call(API.demoteTool, { params: id(tool), body: reason === undefined ? undefined : { reason } }),
    },
    channels: {
      list: () => api.call(API.channels),
      approve: (code) => api.call(API.approvePairing, { params: { code } }),
    },
    close: () => Promise.resolve(),
  };
}

/** `{ signal }` when there is one (for options under `exactOptionalPropertyTypes`). */
const withSignal = (signal: AbortSignal | undefined): { signal?: AbortSignal } => (signal === undefined ? {} : { signal });

/** The package service as the daemon's `/api/packages` serves it. */
function packagesOverHttp(api: ApiClient): PackageService {
  const slug = (value: string): { slug: string } => ({ slug: value });
  return {
    list: () => api.call(API.packages),
    show: (name) => api.call(API.package, { params: slug(name) }),
    // The plan and the installed skills are the package installer's shapes, not views of src/wire.
    check: (source, settings = []) => api.call<typeof API.checkPackage, InstallPlan>(API.checkPackage, { body: { source, settings: [...settings] } }),
    install: (source, settings = [], digest) =>
      api.call(API.installPackage, { body: { source, settings: [...settings], ...(digest === undefined ? {} : { digest }) } }),
    installSkill: (code) => api.call<typeof API.installSkill, Awaited<ReturnType<PackageService['installSkill']>>>(API.installSkill, { body: { code } }),
    uninstall: (name) => api.call(API.uninstallPackage, { params: slug(name) }),
    run: (name, binding, inputs = {}) => api.call(API.runBinding, { params: { slug: name, binding }, body: { inputs } }),
    runs: (query = {}) => api.call(API.packageRuns, { query }),
  };
}

/** The daemon `--url`/`LOOM_URL` names (without a trailing slash), if either is given. */
export function givenDaemonUrl(env: CliIo['env']): string | undefined {
  const url = env['LOOM_URL']?.trim();
  return url === undefined || url === '' ? undefined : url.replace(/\/+$/, '');
}

/**
 * The URL of the daemon for this command: the one `--url`/`LOOM_URL` names (another home, another
 * machine), else the one running for `home` (its daemon file); undefined when neither.
 */
export async function findDaemonUrl(home: LoomHome, env: CliIo['env']): Promise<string | undefined> {
  return givenDaemonUrl(env) ?? (await readDaemonFile(home))?.url;
}

/**
 * Calls `route` on the daemon (see {@link findDaemonUrl}), with `LOOM_API_KEY` as its key when set:
 * its answer, or undefined when no daemon runs.
 * @throws {LoomError} the daemon's error when it refuses; `DAEMON_UNREACHABLE` when it does not answer.
 */
export async function callDaemon<R extends ApiRoute, T extends AnswerOf<R> = AnswerOf<R>>(
  home: LoomHome,
  env: CliIo['env'],
  route: R,
  ...args: CallArgs<R>
): Promise<{ answer: T } | undefined> {
  const url = await findDaemonUrl(home, env);
  if (url === undefined) return undefined;
  return { answer: await daemonClient(url, env['LOOM_API_KEY']).call<R, T>(route, ...args) };
}

/**
 * When the home's daemon started before config.toml last changed, the line that says so: a
 * command it refuses may be refused for what the file has now and the daemon does not (an MCP
 * server, an external agent). Undefined for a daemon named by URL.
 */
export async function staleDaemonNote(io: CliIo): Promise<string | undefined> {
  if (givenDaemonUrl(io.env) !== undefined) return undefined;
  const daemon = await staleDaemon((await openHome(io)).home);
  if (daemon === undefined) return undefined;
  return `note: the daemon at ${daemon.url} (pid ${daemon.pid}) started before config.toml last changed, and runs with the config it read then; restart it to use what changed (loom stop, then loom start)`;
}

/**
 * The backend for one command: the daemon `--url`/`LOOM_URL` names, else the one running for this
 * home (with `LOOM_API_KEY` as its key when set), else a kernel booted in this process.
 */
export async function openBackend(io: CliIo): Promise<CliBackend> {
  // No home is opened for a daemon named by URL: it may serve another home, on another machine.
  const url = givenDaemonUrl(io.env);
  if (url !== undefined) return overHttp(url, io.env['LOOM_API_KEY']);
  const { home } = await openHome(io);
  const daemon = await readDaemonFile(home);
  if (daemon !== undefined) return overHttp(daemon.url, io.env['LOOM_API_KEY']);
  if (io.interactive === true) io.stderr(`(no daemon runs for ${home.root}: acting on its store directly)\n`);
  const context = await openCliContext(io);
  return inProcess(context, io.env);
}
