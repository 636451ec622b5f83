import { randomUUID } from 'node:crypto';
import { A2A_VERSION_HEADER, type AgentCard, type Message, Role, SendMessageRequest, Task, TaskState, type Task as TaskValue } from '@a2a-js/sdk';
import { LegacyA2AError, LegacyJsonRpcTransportHandler, toLegacyHTTPError } from '@a2a-js/sdk/compat/v0_3/server';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono, type Context } from 'hono';
import { matchesPattern } from '../capabilities/index.ts';
import { type Config, LOCAL_PRINCIPAL_NAME } from '../config/index.ts';
import { HttpRequestError, LoomError, UnauthorizedError } from '../errors/index.ts';
import type { Clock, Logger } from '../contracts/index.ts';
import { type AgentDetailView, type Caller, type Kernel, OWNER, principalOfCaller, reachesAgent } from '../kernel/index.ts';
import { safeDecodeUriComponent, trimTrailingSlashes } from '../validation/index.ts';
import { buildAgentCard, endpointsOf, toCardJson, toDualCard, toLegacyCard } from './agent-cards.ts';
import { agentMessage, LoomA2aUser, LoomAgentExecutor, textOf, textPart } from './agent-executor.ts';
import { BoundedTaskStore, isTerminalState } from './bounded-task-store.ts';
import { CARD_MAX_AGE_SECONDS, CardCache } from './card-cache.ts';
import { CheckedRequestHandler } from './checked-request-handler.ts';
import { createLegacyRestListener, type NodeRequestListener } from './legacy-rest-bridge.ts';
import { LoomPushConfigStore } from './push-config-store.ts';
import { JsonRpcRequestError, toA2aErrorResponse } from './json-rpc-request-error.ts';
import { PushNotifier, type PushNotifierOptions } from './push-notifier.ts';
import { answerRestRequest, contentTypeRefusal, LEGACY_REST_MEDIA_TYPES, primed, REST_MEDIA_TYPES, restErrorResponse, sseResponse, UNSUPPORTED_MEDIA_TYPE, unsupportedMediaTypeResponse } from './rest-binding.ts';
import type { A2aTaskRepository } from './task-repository.ts';

/**
 * How push notifications are kept and delivered (see {@link A2aServerOptions.push}): the
 * notifier's options that come from outside the A2A server.
 */
export type A2aPushOptions = Pick<PushNotifierOptions, 'repository' | 'clock' | 'record' | 'resolve' | 'attempts' | 'backoffMs' | 'timeoutMs'>;

/** What the A2A server is built from. */
export interface A2aServerOptions {
  kernel: Kernel;
  config: Pick<Config, 'a2a'>;
  repository: A2aTaskRepository;
  logger: Logger;
  now?: () => number;
  /** Bound of the task store (default 1,000). */
  maxTasks?: number;
  /** Largest message text accepted, in UTF-8 bytes (default 1 MiB): larger ones are refused as invalid params. */
  maxMessageBytes?: number;
  /** Largest JSON-RPC request body (default 4 MiB): larger ones are refused as an invalid request (-32600). */
  maxRequestBytes?: number;
  /**
   * The caller of a request (from the API's auth: `c.get('principal')`). When it returns
   * undefined (nobody authenticated, as on the public card paths), a request that would reach an
   * agent or a task is refused: deny by default. Omitted, every request is the owner's: a server
   * mounted without Loom's API in front, whose mounter authenticates.
   */
  callerOf?: (c: Context) => Caller | undefined;
  /**
   * Whether the API in front asks for keys (its authenticator's `keyed`). Then a card is shown
   * only to a caller whose key reaches its agent, or to anyone when `[a2a].public_agents` names
   * it (to nobody else: 404, as an unknown agent, on every card path and every agent's
   * endpoints), and cards declare the key schemes. Omitted, it is read from each request's
   * caller: a daemon without keys serves its loopback clients as the owner named `local`, a name
   * no key may take. Without `callerOf`, no keys: every card is shown, and none declares a scheme.
   */
  keyed?: boolean | undefined;
  /**
   * Charges the client of request `c` for the turn its message starts (from the API: the
   * rate-limit units of a message beyond the read the request was priced as); throws when the
   * client is out. Called once per request that sends a message, whatever its binding, before the
   * turn starts; its error is the answer (the API's 429). Omitted, turns are not charged here.
   */
  chargeTurn?: ((c: Context) => void) | undefined;
  /**
   * Push notifications (`capabilities.pushNotifications` on the cards): without them, or with
   * `[a2a].push_notifications = false`, push-notification requests are answered
   * PushNotificationNotSupportedError. Webhooks pass the address guard of `web_fetch`;
   * `[a2a].push_allow_private_network` lets loopback and private addresses through.
   */
  push?: A2aPushOptions | undefined;
  /**
   * Whether other nodes share the store now (docs/cluster.md): then the unfinished tasks it holds
   * may be theirs, running, and are not failed as the previous process's.
   */
  othersAlive?: (() => Promise<boolean>) | undefined;
  /**
   * Paces the following of a task another node runs (a resubscription here): read again at each
   * event of its agent this node hears, and every half second. Without it such a task is answered
   * as it is now.
   */
  clock?: Clock | undefined;
}

/** How often a task running on another node is read again while a client here follows it, when no event of its agent came first. */
const FOLLOW_POLL_MS = 500;

/** A caller that reaches no agent: a viewer limited to none (what a request with no caller set gets, were there one). */
const NOBODY: Caller = { kind: 'user', role: 'viewer', agents: [] };

/** Loom's A2A server: the routes, and its task store (shared by A2A 1.0, 0.3 and the legacy endpoints). */
export interface A2aServer {
  /**
   * Agent cards: no key needed to ask (with keys, each card is shown only to the callers that may
   * see its agent: see `keyed`). Mount at the root, before the auth middleware (or list the paths
   * in `isPublicA2aPath`).
   */
  readonly publicRoutes: Hono;
  /** Everything else, behind the API's auth and rate limit. Mount at the root (paths include the listen path). */
  readonly routes: Hono;
  readonly store: BoundedTaskStore;
  /** Aborts the running tasks. */
  close(): void;
}

/** Default of {@link A2aServerOptions.maxMessageBytes}. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;
/** Default of {@link A2aServerOptions.maxRequestBytes}. */
export const DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** The status string of spec/05's task shape. */
function legacyStatus(state: TaskState | undefined): string {
  switch (state) {
    case TaskState.TASK_STATE_SUBMITTED:
      return 'submitted';
    case TaskState.TASK_STATE_WORKING:
      return 'working';
    case TaskState.TASK_STATE_INPUT_REQUIRED:
    case TaskState.TASK_STATE_AUTH_REQUIRED:
      return 'input-required';
    case TaskState.TASK_STATE_COMPLETED:
      return 'completed';
    case TaskState.TASK_STATE_CANCELED:
      return 'cancelled';
    default:
      return 'failed';
  }
}

function legacyParts(message: Message): { type: 'text'; text: string }[] {
  return [{ type: 'text', text: textOf(message) }];
}

/** A task in spec/05's shape: `{ id, sessionId, status, messages, artifacts }`. */
export function toLegacyTask(task: TaskValue): unknown {
  const messages = [...task.history];
  const final = task.status?.message;
  if (final !== undefined && !messages.some((message) => message.messageId === final.messageId)) messages.push(final);
  const sessionId: unknown = task.metadata?.['sessionId'];
  return {
    id: task.id,
    sessionId: typeof sessionId === 'string' ? sessionId : null,
    status: legacyStatus(task.status?.state),
    messages: messages.map((message) => ({ role: message.role === Role.ROLE_AGENT ? 'agent' : 'user', parts: legacyParts(message) })),
    artifacts: task.artifacts.map((artifact) => ({ name: artifact.name, parts: artifact.parts.map((part) => ({ type: 'text', text: part.content?.$case === 'text' ? part.content.value : '' })) })),
  };
}

/**
 * Builds the A2A server (spec/05 Part 2, A2A 1.0 and 0.3 through `@a2a-js/sdk`):
 * - cards: `/a2a/{agent}/.well-known/agent-card.json`, `/.well-known/agent-card.json` (default
 *   agent), `/.well-known/agent.json` (spec/05 shape), `/a2a/agents`;
 * - JSON-RPC: `POST /a2a/{agent}` (1.0 with `A2A-Version: 1.0`, 0.3 without the header);
 * - HTTP+JSON 1.0: `/a2a/{agent}/rest/message:send`, `message:stream`, `tasks`, `tasks/{id}`,
 *   `tasks/{id}:cancel`, `tasks/{id}:subscribe`, `tasks/{id}/pushNotificationConfigs[/{id}]`;
 * - HTTP+JSON 0.3 (the SDK's own 0.3 router): `/a2a/{agent}/v1/message:send`, `v1/message:stream`,
 *   `v1/tasks/{id}`, `v1/tasks/{id}:cancel`, `v1/tasks/{id}:subscribe`,
 *   `v1/tasks/{id}/pushNotificationConfigs[/{id}]`, `v1/card`;
 * - legacy (spec/05): `POST /a2a/tasks/send`, `GET /a2a/tasks/{id}`, `POST /a2a/tasks/{id}/cancel`.
 *
 * Every route answers with a trailing slash too. A card requested without `A2A-Version` is the
 * card both revisions read (`toDualCard`); with `A2A-Version: 0.3` the 0.3 card, with `1.0` the
 * 1.0 card; cards carry `Cache-Control`, `ETag` and `Last-Modified` and answer 304 when current.
 */
export function createA2aServer(options: A2aServerOptions): A2aServer {
  const { kernel } = options;
  const logger = options.logger.child({ component: 'a2a' });
  const listenPath = options.config.a2a.listen_path;
  const base = listenPath === '/' ? '' : listenPath;
  const now = options.now ?? Date.now;
  const store = new BoundedTaskStore({ repository: options.repository, now, ...(options.maxTasks === undefined ? {} : { maxTasks: options.maxTasks }) });
  const push = options.push !== undefined && options.config.a2a.push_notifications ? options.push : undefined;
  const allowPrivateNetwork = options.config.a2a.push_allow_private_network;
  const notifier =
    push === undefined
      ? undefined
      : new PushNotifier({ ...push, logger, allowPrivateNetwork, agentIdOf: (name) => findAgent(name)?.id ?? null });
  const pushConfigs = push === undefined ? undefined : new LoomPushConfigStore({ repository: push.repository, now, allowPrivateNetwork, resolve: push.resolve });
  // Tasks left unfinished by the previous process cannot finish: fail them, saying why, before any
  // request reads them; a client waiting on a webhook is told. While other nodes share the store,
  // unfinished tasks may be theirs, running: those are left alone.
  const recovered = (options.othersAlive?.() ?? Promise.resolve(false))
    .then(async (othersAlive) => {
      if (othersAlive) return;
      const count = await store.failUnfinished(
        (task) => agentMessage(task.id, task.contextId, 'The task was interrupted: the Loom daemon stopped while it ran. Send the message again.'),
        (task, agent) => notifier?.notifyStored(agent, task),
      );
      if (count > 0) logger.warn({ tasks: count }, 'failed the A2A tasks the previous daemon left unfinished');
    })
    .catch((error: unknown) => logger.error({ err: error }, 'could not fail the A2A tasks the previous daemon left unfinished'));
  /** The signal of each request's connection, by the context handed to the SDK: a task followed here stops being followed when its client leaves. */
  const requestSignals = new WeakMap<ServerCallContext, AbortSignal>();
  const { clock } = options;

  /** Each new state of a task this process runs no bus for (another node runs it), read from the store until it ends or the client leaves. */
  async function* followElsewhere(agent: string, first: TaskValue, context: ServerCallContext): AsyncGenerator<TaskValue> {
    const signal = requestSignals.get(context);
    if (clock === undefined || signal === undefined) return;
    let seen = JSON.stringify(Task.toJSON(first));
    let wake = new AbortController();
    // Another node's turn events reach this node's bus: read the task again at once.
    const unsubscribe = kernel.events.subscribe((event) => {
      if (event.name === agent) wake.abort();
    });
    try {
      while (!signal.aborted) {
        await clock.sleep(FOLLOW_POLL_MS, { signal: AbortSignal.any([signal, wake.signal]) }).catch(() => undefined);
        if (signal.aborted) return;
        if (wake.signal.aborted) wake = new AbortController();
        const task = await store.load(first.id, context);
        if (task === undefined) return;
        const now = JSON.stringify(Task.toJSON(task));
        if (now === seen) continue;
        seen = now;
        yield task;
        if (isTerminalState(task.status?.state)) return;
      }
    } finally {
      unsubscribe();
    }
  }
  const executors = new Map<string, LoomAgentExecutor>();
  const handlers = new Map<string, { handler: CheckedRequestHandler; jsonRpc: JsonRpcTransportHandler; legacy: LegacyJsonRpcTransportHandler; legacyRest: Promise<NodeRequestListener | undefined>; origin: string; keyed: boolean }>();
  /** The caller of each request handed to the SDK's 0.3 HTTP+JSON router, and its turn's charge (by its Node request). */
  const legacyRestCallers = new WeakMap<IncomingMessage, LoomA2aUser>();

  function findAgent(name: string): AgentDetailView | undefined {
    try {
      return kernel.get(name);
    } catch {
      return undefined;
    }
  }
  const defaultAgent = (): AgentDetailView | undefined => {
    const configured = options.config.a2a.default_agent;
    if (configured !== undefined) {
      const agent = findAgent(configured);
      if (agent !== undefined) return agent;
    }
    const first = kernel.list()[0];
    return first === undefined ? undefined : findAgent(first.id);
  };
  const originOf = (c: Context): string => new URL(c.req.url).origin;
  /** Who reads a card: see `callerOf` (undefined: nobody authenticated, as on the public card paths). */
  const readerOf = (c: Context): Caller | undefined => (options.callerOf === undefined ? OWNER : options.callerOf(c));
  /** Whether the API asks for keys, as `caller` (who asks) shows it: see `keyed`. */
  const keyedFor = (caller: Caller | undefined): boolean => {
    if (options.callerOf === undefined) return false;
    if (options.keyed !== undefined) return options.keyed;
    return !(caller?.kind === 'user' && caller.name === LOCAL_PRINCIPAL_NAME);
  };
  const publicAgents = options.config.a2a.public_agents;
  /**
   * Whether `caller` may see the card of the agent named `name`: with keys, when
   * `[a2a].public_agents` names it or the caller's key reaches it (owners and viewers reach every
   * agent, a user key those its patterns match); without keys, always.
   */
  const sees = (caller: Caller | undefined, name: string): boolean => {
    if (!keyedFor(caller) || publicAgents.some((pattern) => matchesPattern(pattern, name))) return true;
    if (caller === undefined) return false;
    return caller.kind !== 'user' || reachesAgent(principalOfCaller(caller), name);
  };
  /** The live agent `name` names, when request `c`'s caller may see it: one it may not is as unknown as a missing one. */
  const visibleAgent = (c: Context, name: string): AgentDetailView | undefined => {
    const agent = findAgent(name);
    return agent !== undefined && sees(readerOf(c), agent.name) ? agent : undefined;
  };
  const cardOf = (agent: AgentDetailView | undefined, origin: string, keyed: boolean): AgentCard =>
    buildAgentCard(agent, endpointsOf(origin, listenPath, agent?.name ?? 'loom'), { pushNotifications: push !== undefined, keyed });

  /** The SDK handlers of an agent for request `c`, built once per agent (and again if its origin, or whether keys are asked, changes). */
  const handlersOf = (agent: AgentDetailView, c: Context) => {
    const origin = originOf(c);
    const keyed = keyedFor(readerOf(c));
    const cached = handlers.get(agent.name);
    if (cached !== undefined && cached.origin === origin && cached.keyed === keyed) return cached;
    const { name } = agent;
    let executor = executors.get(name);
    if (executor === undefined) {
      executor = new LoomAgentExecutor(kernel, name, logger, store, notifier === undefined ? undefined : (event) => notifier.observe(name, event));
      executors.set(name, executor);
    }
    const handler = new CheckedRequestHandler({
      card: cardOf(agent, origin, keyed),
      store,
      executor,
      maxBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
      pushConfigs,
      follow: (task, context) => followElsewhere(name, task, context),
    });
    // Every request reaching the listener was given its caller below; one that was not reaches nothing.
    const legacyRest = createLegacyRestListener(handler, (request) => legacyRestCallers.get(request) ?? new LoomA2aUser(NOBODY));
    const built = { handler, jsonRpc: new JsonRpcTransportHandler(handler), legacy: new LegacyJsonRpcTransportHandler(handler), legacyRest, origin, keyed };
    handlers.set(agent.name, built);
    return built;
  };
  /** Who asks: see `callerOf`. @throws {UnauthorizedError} when a request reaching agents or tasks has nobody behind it. */
  const callerFor = (c: Context): Caller => {
    if (options.callerOf === undefined) return { kind: 'user', role: 'owner' };
    const caller = options.callerOf(c);
    if (caller === undefined) throw new UnauthorizedError('this A2A request needs an API key: send "Authorization: Bearer <key>" or "X-API-Key: <key>" (only the agent cards are public)');
    return caller;
  };
  /** Requests already charged for their turn (a request sends one message at most), and the refusals met doing so. */
  const charged = new WeakSet<Request>();
  const refusals = new WeakMap<Request, Error>();
  /**
   * Charges request `c` for its turn, once (see `chargeTurn`). A refusal is recorded as well as
   * thrown: the SDK answers what a handler throws as its own error, and the request is answered
   * with the refusal instead (see the middleware below).
   */
  const chargeTurnOf = (c: Context) => (): void => {
    if (options.chargeTurn === undefined || charged.has(c.req.raw)) return;
    charged.add(c.req.raw);
    try {
      options.chargeTurn(c);
    } catch (error) {
      if (error instanceof Error) refusals.set(c.req.raw, error);
      throw error;
    }
  };
  const contextOf = (c: Context, requestedVersion: string | undefined): ServerCallContext => {
    const caller = callerFor(c);
    const context = new ServerCallContext({ user: new LoomA2aUser(caller, chargeTurnOf(c)), ...(requestedVersion === undefined ? {} : { requestedVersion }) });
    requestSignals.set(context, c.req.raw.signal);
    return context;
  };
  const unknownAgent = (name: string): LoomError => new LoomError('AGENT_NOT_FOUND', 'user', `no agent named "${name}"`);

  /** A route's path and the same path with a trailing slash (clients that normalise URLs add one). */
  const slashed = (path: string): string[] => [path, `${path}/`];

  // Cards (public: with keys, each shown only to the callers that may see its agent).
  const publicRoutes = new Hono();
  const cards = new CardCache(now);
  /**
   * With keys, what a card path answers depends on the caller's key: no cache may keep one
   * caller's answer for another (`private`, and `Vary` naming the headers a key comes in).
   */
  const perCaller = (headers: Headers, keyed: boolean): void => {
    if (!keyed) return;
    headers.set('cache-control', `private, max-age=${CARD_MAX_AGE_SECONDS}`);
    headers.set('vary', [headers.get('vary'), 'Authorization', 'X-API-Key'].filter((value) => value !== null).join(', '));
  };
  const cardResponse = (c: Context, key: string, card: unknown, keyed: boolean): Response => {
    const answer = cards.answer(`${key} ${originOf(c)}`, card, { ifNoneMatch: c.req.header('if-none-match'), ifModifiedSince: c.req.header('if-modified-since') }, A2A_VERSION_HEADER);
    const headers = new Headers(answer.headers);
    perCaller(headers, keyed);
    return new Response(answer.body ?? null, { status: answer.status, headers });
  };
  /** A card path's 404: the same for an agent the caller may not see as for one that does not exist. */
  const cardNotFound = (c: Context, message: string, keyed: boolean): Response => {
    const response = c.json({ error: { code: 'AGENT_NOT_FOUND', message } }, 404);
    perCaller(response.headers, keyed);
    return response;
  };
  /** The card in the shape the request asks for: 0.3 or 1.0 by `A2A-Version`, both without it. */
  const serveCard = (c: Context, agent: AgentDetailView | undefined): Response => {
    const keyed = keyedFor(readerOf(c));
    const card = cardOf(agent, originOf(c), keyed);
    const version = c.req.header(A2A_VERSION_HEADER)?.trim();
    const key = `card ${agent?.name ?? ''}`;
    if (version === undefined || version === '') return cardResponse(c, `${key} dual`, toDualCard(card), keyed);
    return version.startsWith('0.') ? cardResponse(c, `${key} 0.3`, toLegacyCard(card), keyed) : cardResponse(c, `${key} 1.0`, toCardJson(card), keyed);
  };
  /** The default agent's card; a 404 naming no agent when the caller may not see it (the placeholder card when there are no agents). */
  const serveDefaultCard = (c: Context): Response => {
    const agent = defaultAgent();
    const reader = readerOf(c);
    if (agent === undefined || sees(reader, agent.name)) return serveCard(c, agent);
    return cardNotFound(c, 'no agent card here for this caller: an agent\'s card is shown to an API key that reaches the agent ("Authorization: Bearer <key>" or "X-API-Key: <key>"), or to anyone when [a2a].public_agents names it', keyedFor(reader));
  };
  publicRoutes.on('GET', slashed('/.well-known/agent-card.json'), serveDefaultCard);
  publicRoutes.on('GET', slashed('/.well-known/agent.json'), serveDefaultCard);
  publicRoutes.on('GET', slashed(`${base}/agents`), (c) => {
    const origin = originOf(c);
    const reader = readerOf(c);
    const keyed = keyedFor(reader);
    const agents = kernel.list().flatMap((view) => {
      const agent = findAgent(view.id);
      return agent === undefined || !sees(reader, agent.name) ? [] : [toDualCard(cardOf(agent, origin, keyed))];
    });
    // One list per caller: each keeps its own Last-Modified.
    const who = reader === undefined ? 'anonymous' : reader.kind === 'user' ? `${reader.role} ${reader.name ?? ''}` : reader.agentId;
    return cardResponse(c, `agents ${who}`, { agents, total: agents.length }, keyed);
  });
  publicRoutes.on('GET', slashed(`${base}/:agent/.well-known/agent-card.json`), (c) => {
    const name = c.req.param('agent') ?? '';
    const agent = visibleAgent(c, name);
    return agent === undefined ? cardNotFound(c, `no agent named "${name}"`, keyedFor(readerOf(c))) : serveCard(c, agent);
  });

  const routes = new Hono();
  // Every refusal below is thrown and answered here: a JSON-RPC error where a JSON-RPC client asked, else Loom's error body.
  routes.onError((error, c) => toA2aErrorResponse(c, error, now(), logger));
  routes.use(`${base}/*`, async (c: Context, next) => {
    // Nobody authenticated reaches no agent and no task (the cards above are the public part).
    callerFor(c);
    await recovered;
    await next();
    // A turn refused for the client's rate is answered with that refusal (429, Retry-After), not
    // with the error the SDK made of it.
    const refusal = refusals.get(c.req.raw);
    if (refusal !== undefined) throw refusal;
  });

  // Legacy endpoints (spec/05), on the default agent.
  routes.on('POST', slashed(`${base}/tasks/send`), async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      throw new JsonRpcRequestError({ code: 'INVALID_REQUEST', rpcCode: -32700, id: null, status: 400, message: 'Invalid JSON payload.' });
    }
    const request = body as { id?: unknown; method?: unknown; params?: { message?: { role?: unknown; parts?: unknown }; sessionId?: unknown } };
    const id = typeof request.id === 'string' || typeof request.id === 'number' ? request.id : null;
    const parts = Array.isArray(request.params?.message?.parts) ? (request.params.message.parts as { type?: unknown; text?: unknown }[]) : undefined;
    const text = (parts ?? []).filter((part) => part.type === 'text' && typeof part.text === 'string').map((part) => part.text as string).join('\n\n');
    if (request.method !== undefined && request.method !== 'tasks/send') {
      throw new JsonRpcRequestError({ code: 'ROUTE_NOT_FOUND', rpcCode: -32601, id, status: 400, message: `Method not found: ${typeof request.method === 'string' ? request.method : JSON.stringify(request.method)}` });
    }
    if (text === '') throw new JsonRpcRequestError({ code: 'INVALID_REQUEST', rpcCode: -32602, id, status: 400, message: 'params.message.parts must hold at least one text part' });
    const agent = defaultAgent();
    if (agent === undefined) throw new LoomError('AGENT_NOT_FOUND', 'user', 'no agent is running to take the task');
    const sessionId = typeof request.params?.sessionId === 'string' ? request.params.sessionId : undefined;
    const { handler } = handlersOf(agent, c);
    const params = SendMessageRequest.fromJSON({
      message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...(sessionId === undefined ? {} : { contextId: sessionId }) },
      ...(sessionId === undefined ? {} : { metadata: { sessionId } }),
    });
    const result = await handler.sendMessage(params, contextOf(c, '1.0'));
    if (!('status' in result)) throw new JsonRpcRequestError({ code: 'INTERNAL', rpcCode: -32603, id, status: 500, message: 'the agent answered without a task' });
    const task = await store.load(result.id);
    return c.json(toLegacyTask(task ?? result));
  });
  const legacyNotFound = (id: string): HttpRequestError => new HttpRequestError('TASK_NOT_FOUND', `no task "${id}" (unknown, or evicted)`);
  // Loaded in the caller's context: a task it may not see is as missing as an unknown one.
  routes.on('GET', slashed(`${base}/tasks/:id`), async (c) => {
    const id = c.req.param('id') ?? '';
    const task = await store.load(id, contextOf(c, '1.0'));
    if (task === undefined) throw legacyNotFound(id);
    return c.json(toLegacyTask(task));
  });
  routes.on('POST', slashed(`${base}/tasks/:id/cancel`), async (c) => {
    const id = c.req.param('id') ?? '';
    const task = await store.load(id, contextOf(c, '1.0'));
    if (task === undefined) throw legacyNotFound(id);
    if (isTerminalState(task.status?.state)) return c.json(toLegacyTask(task));
    const owner: unknown = task.metadata?.['loomAgent'];
    const agent = findAgent(typeof owner === 'string' ? owner : '') ?? defaultAgent();
    if (agent !== undefined) {
      const { handler } = handlersOf(agent, c);
      await handler.cancelTask({ id, tenant: '', metadata: {} }, contextOf(c, '1.0')).catch(() => undefined);
    }
    let latest = (await store.load(id)) ?? task;
    if (!isTerminalState(latest.status?.state)) {
      // No turn runs it any more (e.g. the daemon restarted): mark it canceled in the store.
      latest = { ...latest, status: { state: TaskState.TASK_STATE_CANCELED, message: agentMessage(id, latest.contextId, 'The task was canceled.'), timestamp: new Date().toISOString() } };
      await store.save(latest);
    }
    return c.json(toLegacyTask(latest));
  });

  // JSON-RPC (1.0 with the A2A-Version header, 0.3 without).
  routes.on('POST', slashed(`${base}/:agent`), async (c) => {
    const name = c.req.param('agent') ?? '';
    const agent = visibleAgent(c, name);
    if (agent === undefined) throw unknownAgent(name);
    const sdk = handlersOf(agent, c);
    const version = c.req.header(A2A_VERSION_HEADER);
    const legacy = version === undefined || version === '0.3';
    const mapError = (error: unknown): unknown => (legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error) : JsonRpcTransportHandler.mapToJSONRPCError(error));
    const contentType = (c.req.header('content-type') ?? 'application/json').split(';', 1)[0]?.trim().toLowerCase();
    if (contentType !== 'application/json') {
      throw new JsonRpcRequestError({ code: 'UNSUPPORTED_MEDIA_TYPE', rpcCode: -32005, id: null, status: 200, message: `Unsupported Content-Type "${contentType ?? ''}"; expected application/json.` });
    }
    const raw = await c.req.text();
    const maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
    if (Buffer.byteLength(raw) > maxRequestBytes) throw new JsonRpcRequestError({ code: 'BODY_TOO_LARGE', rpcCode: -32600, id: null, status: 200, message: `the request is larger than ${maxRequestBytes} bytes` });
    let body: unknown;
    try {
      body = JSON.parse(raw) as unknown;
    } catch {
      throw new JsonRpcRequestError({ code: 'INVALID_REQUEST', rpcCode: -32700, id: null, status: 200, message: 'Invalid JSON payload.' });
    }
    const id = (body as { id?: unknown } | null)?.id;
    const rpcId = typeof id === 'string' || typeof id === 'number' ? id : null;
    try {
      const context = contextOf(c, legacy ? '0.3' : version);
      validateVersion(context.requestedVersion, await sdk.handler.getAgentCard(), 'JSONRPC');
      const answer = await (legacy ? sdk.legacy : sdk.jsonRpc).handle(body as Record<string, unknown>, context);
      if (typeof (answer as AsyncGenerator<unknown>)[Symbol.asyncIterator] === 'function') {
        let stream: AsyncGenerator<unknown>;
        try {
          stream = await primed(answer as AsyncGenerator<unknown>);
        } catch (error) {
          return c.json({ jsonrpc: '2.0', id: rpcId, error: mapError(error) });
        }
        return sseResponse(stream, (error) => ({ jsonrpc: '2.0', id: rpcId, error: mapError(error) }));
      }
      return c.json(answer as object);
    } catch (error) {
      logger.warn({ err: error }, 'A2A JSON-RPC request failed');
      const mapped = mapError(error) as { code: number };
      return c.json({ jsonrpc: '2.0', id: rpcId, error: mapped }, mapped.code === -32603 ? 500 : 200);
    }
  });

  // HTTP+JSON (1.0).
  routes.on(['GET', 'POST', 'DELETE'], `${base}/:agent/rest/*`, async (c) => {
    const name = c.req.param('agent');
    const agent = visibleAgent(c, name);
    if (agent === undefined) throw unknownAgent(name);
    const { handler } = handlersOf(agent, c);
    const prefix = `${base}/${name}/rest`;
    const path = trimTrailingSlashes(decodeURIComponent(c.req.path.slice(c.req.path.indexOf(prefix) + prefix.length)));
    // Before anything reads the body: one of another type is refused, never read as JSON.
    const refused = c.req.method === 'POST' ? contentTypeRefusal(c.req.header('content-type'), REST_MEDIA_TYPES) : undefined;
    if (refused !== undefined) return unsupportedMediaTypeResponse(refused, REST_MEDIA_TYPES);
    try {
      // This binding is 1.0's: a request without the header is a 1.0 request (push notifications are shaped by it).
      const context = contextOf(c, c.req.header(A2A_VERSION_HEADER) ?? '1.0');
      validateVersion(context.requestedVersion, await handler.getAgentCard(), 'HTTP+JSON');
      const body = async (): Promise<unknown> => {
        const text = await c.req.text();
        if (text.trim() === '') return {};
        try {
          return JSON.parse(text) as unknown;
        } catch {
          throw new RequestMalformedError('Invalid JSON payload.');
        }
      };
      const answer = await answerRestRequest(handler, { method: c.req.method, path, query: c.req.query(), body, context });
      return answer ?? c.json({ error: { code: 404, status: 'NOT_FOUND', message: `no A2A route ${c.req.method} ${path}` } }, 404);
    } catch (error) {
      return restErrorResponse(error);
    }
  });

  // HTTP+JSON (0.3): the SDK's 0.3 REST router answers on the Node request and response themselves.
  routes.on(['GET', 'POST', 'DELETE'], `${base}/:agent/v1/*`, async (c) => {
    const name = c.req.param('agent');
    const agent = visibleAgent(c, name);
    if (agent === undefined) throw unknownAgent(name);
    const node = c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;
    const listener = await handlersOf(agent, c).legacyRest;
    if (listener === undefined || node?.incoming === undefined || node.outgoing === undefined) {
      return c.json({ code: -32004, message: 'A2A 0.3 HTTP+JSON is not available on this server; use JSON-RPC' }, 501);
    }
    const { incoming, outgoing } = node;
    const url = new URL(c.req.url);
    const agentSegment = url.pathname.slice(base.length + 1).split('/', 1)[0] ?? '';
    const rest = url.pathname.slice(base.length + 1 + agentSegment.length);
    incoming.url = `${rest}${url.search}`;
    // 0.3's HTTP+JSON is plain JSON only. The SDK's router is handed the body parsed here, so the
    // type is checked here, before a message is charged.
    const refused = c.req.method === 'POST' ? contentTypeRefusal(c.req.header('content-type'), LEGACY_REST_MEDIA_TYPES) : undefined;
    if (refused !== undefined) return c.json(toLegacyHTTPError(refused), UNSUPPORTED_MEDIA_TYPE, { accept: LEGACY_REST_MEDIA_TYPES.join(', ') });
    const chargeTurn = chargeTurnOf(c);
    // The SDK's router answers on the Node response itself, so a refusal met inside it could not be
    // answered as 429: a message is charged here, before the router sees it, in every spelling the
    // router takes (any case, a trailing slash). Any other that starts a turn is charged where it
    // starts (`CheckedRequestHandler`), answered with the router's error.
    if (c.req.method === 'POST' && /^\/v1\/message:(send|stream)$/.test(trimTrailingSlashes((safeDecodeUriComponent(rest) ?? rest).toLowerCase()))) chargeTurn();
    legacyRestCallers.set(incoming, new LoomA2aUser(callerFor(c), chargeTurn));
    if (c.req.method === 'POST') {
      // The API's middleware may have read the Node stream already: hand the SDK's router the parsed
      // body the way Express's body parser leaves it (`body`, `_body`), so it does not read it again.
      const text = await c.req.text();
      let parsed: unknown = {};
      try {
        parsed = text.trim() === '' ? {} : (JSON.parse(text) as unknown);
      } catch {
        return c.json(toLegacyHTTPError(LegacyA2AError.parseError('Invalid JSON payload.')), 400);
      }
      Object.assign(incoming, { body: parsed, _body: true });
    }
    listener(incoming, outgoing);
    return RESPONSE_ALREADY_SENT;
  });

  return {
    publicRoutes,
    routes,
    store,
    close: () => {
      for (const executor of executors.values()) executor.abortAll();
      notifier?.close();
    },
  };
}

/** The text of an A2A result (a task's final message or artifacts, or a message). */
export function resultText(result: TaskValue | Message): string {
  if ('messageId' in result) return textOf(result);
  const artifacts = result.artifacts.map((artifact) => textOf({ parts: artifact.parts } as Message)).join('\n\n');
  return artifacts !== '' ? artifacts : textOf(result.status?.message);
}

export { textPart };
