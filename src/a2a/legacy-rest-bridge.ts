import type { IncomingMessage, ServerResponse } from 'node:http';
import { LegacyA2AError, toLegacyHTTPError } from '@a2a-js/sdk/compat/v0_3/server';
import type { A2ARequestHandler, ServerCallContext, User } from '@a2a-js/sdk/server';
import type { Logger } from '../contracts/index.ts';
import { firstEventOnly } from './rest-binding.ts';

/** A Node request listener (an Express app). */
export type NodeRequestListener = (request: IncomingMessage, response: ServerResponse) => void;

interface ExpressApp extends NodeRequestListener {
  disable(setting: string): void;
  set(setting: string, value: unknown): void;
  use(handler: unknown): void;
}

interface LegacyRestRouterModule {
  legacyRestRouter(options: { requestHandler: A2ARequestHandler; userBuilder: (request: IncomingMessage) => Promise<User> }): unknown;
}

/**
 * Loads the SDK's A2A 0.3 HTTP+JSON router (`@a2a-js/sdk/compat/v0_3/server/express`) and Express,
 * its optional peer dependency. Undefined when Express is not installed: the 0.3 REST binding is
 * then answered 501 (JSON-RPC 0.3 and A2A 1.0 keep working).
 */
let loading: Promise<{ express: () => ExpressApp; router: LegacyRestRouterModule } | undefined> | undefined;
async function loadSdkRouter(): Promise<{ express: () => ExpressApp; router: LegacyRestRouterModule } | undefined> {
  loading ??= (async () => {
    try {
      // A variable specifier: Express ships no types and is not a direct dependency of Loom.
      const expressSpecifier = 'express';
      const expressModule = (await import(expressSpecifier)) as { default: () => ExpressApp };
      const router = (await import('@a2a-js/sdk/compat/v0_3/server/express')) as unknown as LegacyRestRouterModule;
      return { express: expressModule.default, router };
    } catch {
      return undefined;
    }
  })();
  return loading;
}

/** `handler`, whose subscriptions asked by a HEAD (`isHead`) end after their first event (the task). */
function headAware(handler: A2ARequestHandler, isHead: (context: ServerCallContext) => boolean): A2ARequestHandler {
  async function* resubscribe(...[params, context]: Parameters<A2ARequestHandler['resubscribe']>): ReturnType<A2ARequestHandler['resubscribe']> {
    const events = handler.resubscribe(params, context);
    if (!isHead(context)) {
      yield* events;
      return;
    }
    const first = await firstEventOnly(events);
    if (first.done !== true) yield first.value;
  }
  return new Proxy(handler, {
    get: (target, property) => {
      if (property === 'resubscribe') return resubscribe;
      const value: unknown = Reflect.get(target, property, target);
      // Bound to the handler itself: its methods read its private fields.
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * The SDK's own A2A 0.3 HTTP+JSON endpoints (`/v1/message:send`, `/v1/message:stream`,
 * `/v1/tasks/{id}`, `/v1/tasks/{id}:cancel`, `/v1/tasks/{id}:subscribe`, `/v1/card`) for one
 * request handler, as a Node request listener: the 0.3 wire format, its translation to 1.0 and
 * its errors are the SDK's; a path or method it has no route for is answered 404 with a JSON error
 * naming the request's `originalUrl` (the whole path the client asked for, when the caller has set
 * it before handing the router the path under the agent as `url`). An error the router does not
 * answer itself (a path segment that does not decode, a failure) is answered in the same shape, 400
 * or 500, never with Express's HTML page and its stack; a 500's error goes to `logger`. `userOf`
 * gives the caller of a request.
 */
export async function createLegacyRestListener(
  requestHandler: A2ARequestHandler,
  userOf: (request: IncomingMessage) => User,
  logger?: Logger,
): Promise<NodeRequestListener | undefined> {
  const loaded = await loadSdkRouter();
  if (loaded === undefined) return undefined;
  const app = loaded.express();
  app.disable('x-powered-by');
  // Not Express's development mode (NODE_ENV unset): no stack in what it may still answer itself.
  app.set('env', 'production');
  // Express routes a HEAD to the GET's route. A HEAD of a subscription is answered as its GET, the
  // router's checks and errors with it, but its stream ends after the first event, which Node drops
  // with the rest of the body (decision 0075): else the subscription went on, read by no one.
  const heads = new WeakSet<User>();
  const userBuilder = (request: IncomingMessage): Promise<User> => {
    const user = userOf(request);
    if (request.method === 'HEAD') heads.add(user);
    return Promise.resolve(user);
  };
  app.use(
    loaded.router.legacyRestRouter({
      requestHandler: headAware(requestHandler, (context) => context.user !== undefined && heads.has(context.user)),
      userBuilder,
    }),
  );
  // What the router has no route for is answered in its error shape, as JSON: Express's own answer is an HTML page.
  // A HEAD is answered as its GET (Express routes it to the GET's route; Node's response sends no body).
  app.use((request: IncomingMessage & { originalUrl?: string }, response: ServerResponse, next: () => void) => {
    if (response.headersSent) {
      next();
      return;
    }
    const path = (request.originalUrl ?? request.url ?? '/').split('?', 1)[0] ?? '/';
    const error = toLegacyHTTPError(new LegacyA2AError(-32601, `no A2A route ${request.method ?? 'GET'} ${path}`));
    response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify(error));
  });
  // Four parameters: Express's error handler. Its own, HTML with the stack, would replace the API's headers too.
  app.use((error: unknown, request: IncomingMessage & { originalUrl?: string }, response: ServerResponse, _next: unknown) => {
    const path = (request.originalUrl ?? request.url ?? '/').split('?', 1)[0] ?? '/';
    if (response.headersSent) {
      // Too late for an answer: the connection is cut, as Express's final handler cuts it, which
      // would also print the stack to standard error, past the daemon's log.
      logger?.warn({ err: error, path }, 'A2A 0.3 HTTP+JSON request failed after its answer started; its connection is cut');
      response.destroy();
      return;
    }
    const badRequest = (error as { status?: unknown } | null)?.status === 400;
    if (!badRequest) logger?.warn({ err: error, path }, 'A2A 0.3 HTTP+JSON request failed');
    const answer = badRequest
      ? LegacyA2AError.invalidRequest(`cannot read ${request.method ?? 'GET'} ${path}: ${error instanceof Error ? error.message : String(error)}`)
      : LegacyA2AError.internalError(`${request.method ?? 'GET'} ${path} failed on the server; its log says why`);
    response.writeHead(badRequest ? 400 : 500, { 'content-type': 'application/json' }).end(JSON.stringify(toLegacyHTTPError(answer)));
  });
  return app;
}
