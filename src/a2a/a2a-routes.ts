/**
 * Loom's A2A server, composed: the card routes (card-routes.ts), the legacy task endpoints
 * (legacy-task-routes.ts) and the protocol bindings (binding-routes.ts), over one
 * `A2aRouteContext` holding who asks (`A2aAccess`), what is kept of each request (`A2aRequests`)
 * and the SDK handlers of each agent (`AgentHandlers`).
 */
import { Hono, type Context } from 'hono';
import { A2aAccess } from './a2a-access.ts';
import { A2aRequests } from './a2a-requests.ts';
import type { A2aRouteContext } from './a2a-route-context.ts';
import { type A2aServerOptions, DEFAULT_MAX_MESSAGE_BYTES } from './a2a-server-options.ts';
import { buildAgentCard, endpointsOf } from './agent-cards.ts';
import { textPart } from './agent-executor.ts';
import { AgentHandlers } from './agent-handlers.ts';
import { addJsonRpcRoute, addRestRoutes } from './binding-routes.ts';
import { BoundedTaskStore } from './bounded-task-store.ts';
import { cardRoutes } from './card-routes.ts';
import { toA2aErrorResponse } from './json-rpc-request-error.ts';
import { addLegacyTaskRoutes } from './legacy-task-routes.ts';
import { LoomPushConfigStore } from './push-config-store.ts';
import { PushNotifier } from './push-notifier.ts';
import { recoverTasks } from './task-recovery.ts';

export { DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_REQUEST_BYTES } from './a2a-server-options.ts';
export type { A2aPushOptions, A2aServerOptions } from './a2a-server-options.ts';
export { resultText, toLegacyTask } from './task-views.ts';
export { textPart };

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
  /**
   * Stops waiting for the turns of tasks a previous process left (running on another node): those
   * tasks stay as they are, for the next start. The daemon's stop; its running tasks end with the
   * kernel's shutdown, as its turns do, and a write of a task that meets the store closed from then
   * on is dropped: the next start gives such a task its turn's end. Push deliveries go on until
   * {@link drain}.
   */
  stopRecovery(): void;
  /**
   * The daemon's stop, before the store closes: the push deliveries under way finish (bounded:
   * `PushNotifier.drain`), then push deliveries stop.
   */
  drain(): Promise<void>;
  /** Aborts the running tasks (as their clients' cancels would), stops the recovery and push deliveries. */
  close(): void;
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
  const now = options.now ?? Date.now;
  // Aborted when the daemon stops (or the server closes): see stopRecovery.
  const closing = new AbortController();
  const push = options.push !== undefined && options.config.a2a.push_notifications ? options.push : undefined;
  const allowPrivateNetwork = options.config.a2a.push_allow_private_network;
  const access = new A2aAccess(options);
  const notifier =
    push === undefined ? undefined : new PushNotifier({ ...push, logger, allowPrivateNetwork, agentIdOf: (name) => access.findAgent(name)?.id ?? null });
  const store = new BoundedTaskStore({
    repository: options.repository,
    now,
    stopping: closing.signal,
    // A task its client canceled with no executor running it gets no event the notifier follows.
    canceled: (taskId) => notifier?.forget(taskId),
    ...(options.maxTasks === undefined ? {} : { maxTasks: options.maxTasks }),
  });
  const pushConfigs =
    push === undefined ? undefined : new LoomPushConfigStore({ repository: push.repository, now, allowPrivateNetwork, resolve: push.resolve });
  // Tasks left unfinished by the previous process meet their turns before any request reads them:
  // a turn resumed here finishes its task when it ends, one that ended gives the task its outcome,
  // and a task whose turn cannot be found is failed, saying why (task-recovery.ts); a client
  // waiting on a webhook is told. While other nodes share the store, unfinished tasks may be
  // theirs, running: those are left alone.
  const recovered = (options.othersAlive?.() ?? Promise.resolve(false))
    .then(async (othersAlive) => {
      if (othersAlive) return;
      await recoverTasks({
        kernel,
        store,
        notifier,
        logger,
        now,
        clock: options.clock,
        closing: closing.signal,
        othersAlive: options.othersAlive ?? (() => Promise.resolve(false)),
        leasesTurns: options.leasesTurns,
      });
    })
    .catch((error: unknown) => logger.error({ err: error }, 'could not settle the A2A tasks the previous daemon left unfinished'));
  const requests = new A2aRequests(options, access);
  const cardOf: A2aRouteContext['cardOf'] = (agent, origin, keyed) =>
    buildAgentCard(agent, endpointsOf(origin, listenPath, agent?.name ?? 'loom'), { pushNotifications: push !== undefined, keyed });
  const agents = new AgentHandlers({
    kernel,
    logger,
    store,
    access,
    requests,
    cardOf,
    maxMessageBytes: options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    notifier,
    pushConfigs,
    clock: options.clock,
  });
  const base = listenPath === '/' ? '' : listenPath;
  const context: A2aRouteContext = { options, logger, base, now, store, access, requests, agents, cardOf };

  // Cards (public: with keys, each shown only to the callers that may see its agent).
  const publicRoutes = cardRoutes(context);

  const routes = new Hono();
  // Every refusal below is thrown and answered here: a JSON-RPC error where a JSON-RPC client asked, else Loom's error body.
  routes.onError((error, c) => toA2aErrorResponse(c, error, { now: now(), logger }));
  routes.use(`${base}/*`, async (c: Context, next) => {
    // Nobody authenticated reaches no agent and no task (the cards above are the public part).
    access.callerFor(c);
    await recovered;
    await next();
    // A turn refused for the client's rate is answered with that refusal (429, Retry-After), not
    // with the error the SDK made of it.
    const refusal = requests.refusalOf(c.req.raw);
    if (refusal !== undefined) throw refusal;
  });
  // Legacy endpoints (spec/05), on the default agent; then JSON-RPC, and HTTP+JSON 1.0 and 0.3.
  addLegacyTaskRoutes(routes, context);
  addJsonRpcRoute(routes, context);
  addRestRoutes(routes, context);

  return {
    publicRoutes,
    routes,
    store,
    stopRecovery: () => closing.abort(),
    drain: () => notifier?.drain() ?? Promise.resolve(),
    close: () => {
      closing.abort();
      agents.abortAll();
      notifier?.close();
    },
  };
}
