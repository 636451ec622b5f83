import type { Handler, MiddlewareHandler } from 'hono';
import type { HttpEnv } from './http-context.ts';

/** A route's handler that answers for a few fixed values of one path parameter; see {@link fixedSegments}. */
export type FixedSegmentsHandler = MiddlewareHandler<HttpEnv> & {
  /** The fixed values it answers for, as the route table names them (`/api/packages/check`). */
  readonly segments: readonly string[];
  /** Whether any other value is a route too (`GET /api/packages/:slug`), not passed on. */
  readonly answersOthers: boolean;
};

/**
 * Routes fixed path segments (`POST /api/packages/check`, `/skills`) registered as one parameter
 * (`POST /api/packages/:segment`): the handler of the value the request names, else `otherwise`
 * (a parameter route of its own, `GET /api/packages/:slug`), else the request passes on as though
 * no route had matched. Hono's RegExp router refuses a fixed segment beside a parameter with more
 * segments after it (`POST /:slug/bindings/:binding/run`), and then routes every request of the
 * app with its slower trie router (~25 µs a request against ~4); test/http/router-shape.test.ts
 * checks that the daemon's app keeps to the shapes it takes.
 */
export function fixedSegments<Path extends string = string>(
  param: string,
  handlers: Readonly<Record<string, Handler<HttpEnv, Path>>>,
  otherwise?: Handler<HttpEnv, Path>,
): FixedSegmentsHandler {
  const byValue = new Map(Object.entries(handlers));
  const handler: MiddlewareHandler<HttpEnv, Path> = (c, next) => {
    const chosen = byValue.get(c.req.param(param) ?? '') ?? otherwise;
    return chosen === undefined ? next() : (chosen(c, next) as ReturnType<MiddlewareHandler<HttpEnv>>);
  };
  return Object.assign(handler, { segments: [...byValue.keys()], answersOthers: otherwise !== undefined });
}
