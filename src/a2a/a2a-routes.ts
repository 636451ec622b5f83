import { randomUUID } from 'node:crypto';
import {
  A2A_VERSION_HEADER,
  type AgentCard,
  ListTasksResponse,
  type Message,
  Role,
  SendMessageRequest,
  SendMessageResponse,
  StreamResponse,
  Task,
  TaskState,
  taskStateFromJSON,
  type Task as TaskValue,
} from '@a2a-js/sdk';
import { LegacyA2AError, LegacyJsonRpcTransportHandler, toLegacyHTTPError } from '@a2a-js/sdk/compat/v0_3/server';
import { RequestMalformedError, restStatusFor, toRestErrorBody } from '@a2a-js/sdk/errors';
import { DefaultRequestHandler, JsonRpcTransportHandler, ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { Hono, type Context } from 'hono';
import type { Config } from '../config/index.ts';
import type { Logger } from '../contracts/index.ts';
import type { AgentDetailView, Caller, Kernel } from '../kernel/index.ts';
import { buildAgentCard, endpointsOf, toLegacyCard } from './agent-cards.ts';
import { agentMessage, LoomA2aUser, LoomAgentExecutor, textOf, textPart } from './agent-executor.ts';
import { BoundedTaskStore, isTerminalState } from './bounded-task-store.ts';
import { createLegacyRestListener, type NodeRequestListener } from './legacy-rest-bridge.ts';
import type { A2aTaskRepository } from './task-repository.ts';

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
   * The caller of a request (from the API's auth: `c.get('principal')`); the owner when omitted
   * or when it returns undefined.
   */
  callerOf?: (c: Context) => Caller | undefined;
}

/** Loom's A2A server: the routes, and its task store (shared by A2A 1.0, 0.3 and the legacy endpoints). */
export interface A2aServer {
  /** Agent cards: public. Mount at the root, before the auth middleware (or list the paths in `isPublicA2aPath`). */
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

/** The SDK's request handler, refusing messages with no text or too much of it before a task starts. */
class CheckedRequestHandler extends DefaultRequestHandler {
  readonly #maxBytes: number;
  constructor(card: AgentCard, store: BoundedTaskStore, executor: LoomAgentExecutor, maxBytes: number) {
    super(card, store, executor);
    this.#maxBytes = maxBytes;
  }
  #check(params: SendMessageRequest): void {
    const text = textOf(params.message);
    if (text.trim() === '') throw new RequestMalformedError('the message has no text part: Loom agents take text');
    const bytes = Buffer.byteLength(text);
    if (bytes > this.#maxBytes) throw new RequestMalformedError(`the message is ${bytes} bytes; the limit is ${this.#maxBytes}`);
  }
  override sendMessage(params: SendMessageRequest, context: ServerCallContext): ReturnType<DefaultRequestHandler['sendMessage']> {
    this.#check(params);
    return super.sendMessage(params, context);
  }
  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): ReturnType<DefaultRequestHandler['sendMessageStream']> {
    this.#check(params);
    yield* super.sendMessageStream(params, context);
  }
}

const JSON_HEADERS = { 'content-type': 'application/json' };
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };

function sse(events: AsyncIterable<unknown>, onError: (error: unknown) => unknown): Response {
  const encoder = new TextEncoder();
  const iterator = events[Symbol.asyncIterator]();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await iterator.next();
        if (next.done === true) controller.close();
        else controller.enqueue(encoder.encode(`data: ${JSON.stringify(next.value)}\n\n`));
      } catch (error) {
        controller.enqueue(encoder.encode(`event: error\ndata: ${JSON.stringify(onError(error))}\n\n`));
        controller.close();
      }
    },
    async cancel() {
      await iterator.return?.(undefined);
    },
  });
  return new Response(stream, { status: 200, headers: SSE_HEADERS });
}

/** Reads the first event before answering, so errors raised before the stream starts answer as plain JSON. */
async function primed<T>(stream: AsyncGenerator<T>): Promise<AsyncGenerator<T>> {
  const first = await stream.next();
  return (async function* () {
    if (first.done !== true) yield first.value;
    yield* stream;
  })();
}

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
 *   `tasks/{id}:cancel`, `tasks/{id}:subscribe`;
 * - HTTP+JSON 0.3 (the SDK's own 0.3 router): `/a2a/{agent}/v1/message:send`, `v1/message:stream`,
 *   `v1/tasks/{id}`, `v1/tasks/{id}:cancel`, `v1/tasks/{id}:subscribe`, `v1/card`;
 * - legacy (spec/05): `POST /a2a/tasks/send`, `GET /a2a/tasks/{id}`, `POST /a2a/tasks/{id}/cancel`.
 */
export function createA2aServer(options: A2aServerOptions): A2aServer {
  const { kernel } = options;
  const logger = options.logger.child({ component: 'a2a' });
  const listenPath = options.config.a2a.listen_path;
  const base = listenPath === '/' ? '' : listenPath;
  const store = new BoundedTaskStore({ repository: options.repository, now: options.now ?? Date.now, ...(options.maxTasks === undefined ? {} : { maxTasks: options.maxTasks }) });
  // Tasks left unfinished by the previous process cannot finish: fail them, saying why, before any request reads them.
  const recovered = store
    .failUnfinished((task) => agentMessage(task.id, task.contextId, 'The task was interrupted: the Loom daemon stopped while it ran. Send the message again.'))
    .then((count) => {
      if (count > 0) logger.warn({ tasks: count }, 'failed the A2A tasks the previous daemon left unfinished');
    })
    .catch((error: unknown) => logger.error({ err: error }, 'could not fail the A2A tasks the previous daemon left unfinished'));
  const executors = new Map<string, LoomAgentExecutor>();
  const handlers = new Map<string, { handler: CheckedRequestHandler; jsonRpc: JsonRpcTransportHandler; legacy: LegacyJsonRpcTransportHandler; legacyRest: Promise<NodeRequestListener | undefined>; origin: string }>();
  /** The caller of each request handed to the SDK's 0.3 HTTP+JSON router (by its Node request). */
  const legacyRestCallers = new WeakMap<IncomingMessage, Caller>();

  const findAgent = (name: string): AgentDetailView | undefined => {
    try {
      return kernel.get(name);
    } catch {
      return undefined;
    }
  };
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
  const cardOf = (agent: AgentDetailView | undefined, origin: string): AgentCard => buildAgentCard(agent, endpointsOf(origin, listenPath, agent?.name ?? 'loom'));

  /** The SDK handlers of an agent, built once per agent (and again if its origin changes). */
  const handlersOf = (agent: AgentDetailView, origin: string) => {
    const cached = handlers.get(agent.name);
    if (cached !== undefined && cached.origin === origin) return cached;
    let executor = executors.get(agent.name);
    if (executor === undefined) {
      executor = new LoomAgentExecutor(kernel, agent.name, logger, store);
      executors.set(agent.name, executor);
    }
    const handler = new CheckedRequestHandler(cardOf(agent, origin), store, executor, options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
    const legacyRest = createLegacyRestListener(handler, (request) => new LoomA2aUser(legacyRestCallers.get(request) ?? { kind: 'user', role: 'owner' }));
    const built = { handler, jsonRpc: new JsonRpcTransportHandler(handler), legacy: new LegacyJsonRpcTransportHandler(handler), legacyRest, origin };
    handlers.set(agent.name, built);
    return built;
  };
  const contextOf = (c: Context, requestedVersion: string | undefined): ServerCallContext => {
    const caller = options.callerOf?.(c) ?? { kind: 'user', role: 'owner' };
    return new ServerCallContext({ user: new LoomA2aUser(caller), ...(requestedVersion === undefined ? {} : { requestedVersion }) });
  };
  const unknownAgent = (c: Context, name: string): Response => c.json({ error: { code: 'AGENT_NOT_FOUND', message: `no agent named "${name}"` } }, 404);

  // Cards (public).
  const publicRoutes = new Hono();
  const serveCard = (c: Context, agent: AgentDetailView | undefined): Response => {
    const card = cardOf(agent, originOf(c));
    const version = c.req.header(A2A_VERSION_HEADER);
    c.header('vary', A2A_VERSION_HEADER);
    return version === undefined || version.startsWith('0.') ? c.json(toLegacyCard(card)) : c.json(card);
  };
  publicRoutes.get('/.well-known/agent-card.json', (c) => serveCard(c, defaultAgent()));
  publicRoutes.get('/.well-known/agent.json', (c) => c.json(toLegacyCard(cardOf(defaultAgent(), originOf(c)))));
  publicRoutes.get(`${base}/agents`, (c) => {
    const origin = originOf(c);
    const agents = kernel.list().flatMap((view) => {
      const agent = findAgent(view.id);
      return agent === undefined ? [] : [toLegacyCard(cardOf(agent, origin))];
    });
    return c.json({ agents, total: agents.length });
  });
  publicRoutes.get(`${base}/:agent/.well-known/agent-card.json`, (c) => {
    const name = c.req.param('agent');
    const agent = findAgent(name);
    return agent === undefined ? unknownAgent(c, name) : serveCard(c, agent);
  });

  const routes = new Hono();
  routes.use(`${base}/*`, async (_c, next) => {
    await recovered;
    await next();
  });

  // Legacy endpoints (spec/05), on the default agent.
  routes.post(`${base}/tasks/send`, async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return c.json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload.' } }, 400);
    }
    const request = body as { id?: unknown; method?: unknown; params?: { message?: { role?: unknown; parts?: unknown }; sessionId?: unknown } };
    const id = typeof request.id === 'string' || typeof request.id === 'number' ? request.id : null;
    const parts = Array.isArray(request.params?.message?.parts) ? (request.params.message.parts as { type?: unknown; text?: unknown }[]) : undefined;
    const text = (parts ?? []).filter((part) => part.type === 'text' && typeof part.text === 'string').map((part) => part.text as string).join('\n\n');
    if (request.method !== undefined && request.method !== 'tasks/send') return c.json({ jsonrpc: '2.0', id, error: { code: -32601, message: `Method not found: ${typeof request.method === 'string' ? request.method : JSON.stringify(request.method)}` } }, 400);
    if (text === '') return c.json({ jsonrpc: '2.0', id, error: { code: -32602, message: 'params.message.parts must hold at least one text part' } }, 400);
    const agent = defaultAgent();
    if (agent === undefined) return c.json({ error: { code: 'AGENT_NOT_FOUND', message: 'no agent is running to take the task' } }, 404);
    const sessionId = typeof request.params?.sessionId === 'string' ? request.params.sessionId : undefined;
    const { handler } = handlersOf(agent, originOf(c));
    const params = SendMessageRequest.fromJSON({
      message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...(sessionId === undefined ? {} : { contextId: sessionId }) },
      ...(sessionId === undefined ? {} : { metadata: { sessionId } }),
    });
    const result = await handler.sendMessage(params, contextOf(c, '1.0'));
    if (!('status' in result)) return c.json({ jsonrpc: '2.0', id, error: { code: -32603, message: 'the agent answered without a task' } }, 500);
    const task = await store.load(result.id);
    return c.json(toLegacyTask(task ?? result));
  });
  const legacyNotFound = (c: Context, id: string): Response => c.json({ error: { code: 'TASK_NOT_FOUND', message: `no task "${id}" (unknown, or evicted)` } }, 404);
  // Loaded in the caller's context: a task it may not see is as missing as an unknown one.
  routes.get(`${base}/tasks/:id`, async (c) => {
    const id = c.req.param('id');
    const task = await store.load(id, contextOf(c, '1.0'));
    return task === undefined ? legacyNotFound(c, id) : c.json(toLegacyTask(task));
  });
  routes.post(`${base}/tasks/:id/cancel`, async (c) => {
    const id = c.req.param('id');
    const task = await store.load(id, contextOf(c, '1.0'));
    if (task === undefined) return legacyNotFound(c, id);
    if (isTerminalState(task.status?.state)) return c.json(toLegacyTask(task));
    const owner: unknown = task.metadata?.['loomAgent'];
    const agent = findAgent(typeof owner === 'string' ? owner : '') ?? defaultAgent();
    if (agent !== undefined) {
      const { handler } = handlersOf(agent, originOf(c));
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
  routes.post(`${base}/:agent`, async (c) => {
    const name = c.req.param('agent');
    const agent = findAgent(name);
    if (agent === undefined) return unknownAgent(c, name);
    const sdk = handlersOf(agent, originOf(c));
    const version = c.req.header(A2A_VERSION_HEADER);
    const legacy = version === undefined || version === '0.3';
    const mapError = (error: unknown): unknown => (legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error) : JsonRpcTransportHandler.mapToJSONRPCError(error));
    const contentType = (c.req.header('content-type') ?? 'application/json').split(';', 1)[0]?.trim().toLowerCase();
    if (contentType !== 'application/json') {
      return c.json({ jsonrpc: '2.0', id: null, error: { code: -32005, message: `Unsupported Content-Type "${contentType ?? ''}"; expected application/json.` } });
    }
    const raw = await c.req.text();
    const maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
    if (Buffer.byteLength(raw) > maxRequestBytes) return c.json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: `the request is larger than ${maxRequestBytes} bytes` } });
    let body: unknown;
    try {
      body = JSON.parse(raw) as unknown;
    } catch {
      return c.json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload.' } });
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
        return sse(stream, (error) => ({ jsonrpc: '2.0', id: rpcId, error: mapError(error) }));
      }
      return c.json(answer as object);
    } catch (error) {
      logger.warn({ err: error }, 'A2A JSON-RPC request failed');
      const mapped = mapError(error) as { code: number };
      return c.json({ jsonrpc: '2.0', id: rpcId, error: mapped }, mapped.code === -32603 ? 500 : 200);
    }
  });

  // HTTP+JSON (1.0).
  const restError = (error: unknown): Response => {
    const status = restStatusFor(error);
    return new Response(JSON.stringify(toRestErrorBody(error, status)), { status, headers: JSON_HEADERS });
  };
  routes.on(['GET', 'POST'], `${base}/:agent/rest/*`, async (c) => {
    const name = c.req.param('agent');
    const agent = findAgent(name);
    if (agent === undefined) return unknownAgent(c, name);
    const { handler } = handlersOf(agent, originOf(c));
    const prefix = `${base}/${name}/rest`;
    const rest = decodeURIComponent(c.req.path.slice(c.req.path.indexOf(prefix) + prefix.length));
    const query = c.req.query();
    const version = c.req.header(A2A_VERSION_HEADER);
    try {
      const context = contextOf(c, version);
      validateVersion(context.requestedVersion, await handler.getAgentCard(), 'HTTP+JSON');
      const readBody = async (): Promise<unknown> => {
        const text = await c.req.text();
        if (text.trim() === '') return {};
        try {
          return JSON.parse(text) as unknown;
        } catch {
          throw new RequestMalformedError('Invalid JSON payload.');
        }
      };
      const requireMessage = (params: SendMessageRequest): SendMessageRequest => {
        if (params.message === undefined || params.message.messageId === '') throw new RequestMalformedError('message.messageId is required');
        return params;
      };
      const method = c.req.method;
      if (method === 'POST' && rest === '/message:send') {
        const result = await handler.sendMessage(requireMessage(SendMessageRequest.fromJSON(await readBody())), context);
        const payload = 'messageId' in result ? { $case: 'message' as const, value: result } : { $case: 'task' as const, value: result };
        return c.json(SendMessageResponse.toJSON({ payload }) as object);
      }
      if (method === 'POST' && rest === '/message:stream') {
        const stream = await primed(handler.sendMessageStream(requireMessage(SendMessageRequest.fromJSON(await readBody())), context));
        return sse((async function* () { for await (const event of stream) yield StreamResponse.toJSON(event); })(), (error) => toRestErrorBody(error, restStatusFor(error)));
      }
      if (method === 'GET' && rest === '/tasks') {
        const status = query['status'];
        const result = await handler.listTasks(
          {
            tenant: '',
            contextId: query['contextId'] ?? '',
            status: status === undefined || status === '' ? TaskState.TASK_STATE_UNSPECIFIED : taskStateFromJSON(Number.isNaN(Number(status)) ? status : Number(status)),
            pageSize: query['pageSize'] === undefined ? undefined : Number.parseInt(query['pageSize'], 10),
            pageToken: query['pageToken'] ?? '',
            historyLength: query['historyLength'] === undefined ? undefined : Number.parseInt(query['historyLength'], 10),
            statusTimestampAfter: query['statusTimestampAfter'],
            includeArtifacts: query['includeArtifacts'] === 'true',
          },
          context,
        );
        return c.json(ListTasksResponse.toJSON(result) as object);
      }
      const match = /^\/tasks\/([^/:]+)(:cancel|:subscribe)?$/.exec(rest);
      if (match !== null) {
        const id = match[1] ?? '';
        if (match[2] === ':cancel' && method === 'POST') return c.json(Task.toJSON(await handler.cancelTask({ id, tenant: '', metadata: {} }, context)) as object);
        if (match[2] === ':subscribe') {
          const stream = await primed(handler.resubscribe({ id, tenant: '' }, context));
          return sse((async function* () { for await (const event of stream) yield StreamResponse.toJSON(event); })(), (error) => toRestErrorBody(error, restStatusFor(error)));
        }
        if (match[2] === undefined && method === 'GET') {
          const historyLength = query['historyLength'];
          return c.json(Task.toJSON(await handler.getTask({ id, tenant: '', ...(historyLength === undefined ? {} : { historyLength: Number.parseInt(historyLength, 10) }) }, context)) as object);
        }
      }
      return c.json({ error: { code: 404, status: 'NOT_FOUND', message: `no A2A route ${method} ${rest}` } }, 404);
    } catch (error) {
      return restError(error);
    }
  });

  // HTTP+JSON (0.3): the SDK's 0.3 REST router answers on the Node request and response themselves.
  routes.on(['GET', 'POST'], `${base}/:agent/v1/*`, async (c) => {
    const name = c.req.param('agent');
    const agent = findAgent(name);
    if (agent === undefined) return unknownAgent(c, name);
    const node = c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;
    const listener = await handlersOf(agent, originOf(c)).legacyRest;
    if (listener === undefined || node?.incoming === undefined || node.outgoing === undefined) {
      return c.json({ code: -32004, message: 'A2A 0.3 HTTP+JSON is not available on this server; use JSON-RPC' }, 501);
    }
    const { incoming, outgoing } = node;
    const url = new URL(c.req.url);
    const agentSegment = url.pathname.slice(base.length + 1).split('/', 1)[0] ?? '';
    incoming.url = `${url.pathname.slice(base.length + 1 + agentSegment.length)}${url.search}`;
    legacyRestCallers.set(incoming, options.callerOf?.(c) ?? { kind: 'user', role: 'owner' });
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
