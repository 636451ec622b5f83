/**
 * One HTTP client of Loom's API, typed by the route table: `call(API.getAgent, { params: { agent } })`
 * answers an `AgentDetailView`. How a request reaches the daemon (its URL, its key, what a network
 * failure means) and what a refusal becomes are the caller's: the CLI, the MCP server's directory
 * and the dashboard each give their own {@link ApiTransport}.
 */
import type { AnswerOf, ApiRoute, BodyOf, ParamsOf, QueryOf } from './route-spec.ts';

/** What a request of route `R` carries besides the key: its path and query parameters, its body, and a signal. */
export type CallInput<R> = (R extends { params: object } ? { params: ParamsOf<R> } : { params?: undefined }) & {
  query?: QueryOf<R> | undefined;
  body?: BodyOf<R> | undefined;
  /** A body already written, sent as it is with its media type instead of `body` as JSON (a manifest in TOML). */
  text?: { content: string; type: string } | undefined;
  /** More request headers (`accept`, `last-event-id`, `idempotency-key`). */
  headers?: Record<string, string>;
  signal?: AbortSignal;
};

/** The arguments after the route: the input, which may be left out when the route has no path parameter. */
export type CallArgs<R> = R extends { params: object } ? [input: CallInput<R>] : [input?: CallInput<R>];

/** A request as the client hands it to its transport. */
export interface ApiRequestInit {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/** How a client reaches the daemon. */
export interface ApiTransport {
  /** Sends a request for `path` (from the root, with its query): the caller adds the base URL and the key. */
  fetch(path: string, init: ApiRequestInit): Promise<Response>;
  /** The error a refusal (any status but 2xx) becomes; it reads the `{ error: { code, message } }` body. */
  error(response: Response): Promise<Error>;
}

/** A client of the API over one transport. */
export interface ApiClient {
  /**
   * Calls `route` and resolves with its view (a text for a text or YAML answer, undefined for 204).
   * `T` narrows the view to what the caller knows of the daemon's answer (the kernel's own view
   * with its typed manifest), never to anything the route's view does not allow.
   * @throws the transport's error on a refusal.
   */
  call<R extends ApiRoute, T extends AnswerOf<R> = AnswerOf<R>>(route: R, ...args: CallArgs<R>): Promise<T>;
  /** Sends `route`'s request and resolves with the response itself (a stream to read), once it is a success. @throws the transport's error on a refusal. */
  open<R extends ApiRoute>(route: R, ...args: CallArgs<R>): Promise<Response>;
}

/**
 * What a client reads of a route, and all the dashboard's bundle holds of the table
 * (web/vite.config.ts builds it with {@link wireRoute}): its method, its path, its answer's media.
 * `pathOf` and `apiClient` take routes as this type, so that reading more fails the type check.
 */
export interface WireRoute {
  method: ApiRoute['method'];
  path: ApiRoute['path'];
  answer: { content: ApiRoute['answer']['content'] };
}

/** `route` as a client reads it: the fields of {@link WireRoute}, nothing more. */
export const wireRoute = (route: WireRoute): WireRoute => ({ method: route.method, path: route.path, answer: { content: route.answer.content } });

/**
 * The path of a request of `route`: each `{name}` replaced by its parameter (URL-encoded), and the
 * query's defined entries after `?`.
 * @throws {Error} when a path parameter is missing.
 */
export function pathOf(
  route: Pick<WireRoute, 'path'>,
  params: Readonly<Record<string, string>> = {},
  query: Readonly<Record<string, string | number | undefined>> = {},
): string {
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`cannot call ${route.path}: the path parameter "${name}" is missing`);
    return encodeURIComponent(value);
  });
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) search.set(name, String(value));
  const text = search.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** A {@link CallInput} of any route. */
interface AnyInput {
  params?: Record<string, string>;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  text?: { content: string; type: string } | undefined;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** The view in `response`, a success of `route`: a text for a text or YAML answer, undefined for none. */
async function answerOf(route: WireRoute, response: Response): Promise<unknown> {
  const { content } = route.answer;
  if (response.status === 204 || content === 'none') {
    await response.body?.cancel();
    return undefined;
  }
  return content === 'text' || content === 'yaml' ? await response.text() : await response.json();
}

/** A client that sends each request through `transport`. */
export function apiClient(transport: ApiTransport): ApiClient {
  const open = async (route: WireRoute, input: AnyInput = {}): Promise<Response> => {
    const { params, query, body, text, headers = {}, signal } = input;
    const sent = text ?? (body === undefined ? undefined : { content: JSON.stringify(body), type: 'application/json' });
    const response = await transport.fetch(pathOf(route, params, query), {
      method: route.method.toUpperCase(),
      headers: sent === undefined ? headers : { 'content-type': sent.type, ...headers },
      ...(sent === undefined ? {} : { body: sent.content }),
      ...(signal === undefined ? {} : { signal }),
    });
    if (!response.ok) throw await transport.error(response);
    return response;
  };
  return {
    open: (route, ...args) => open(route, args[0] as AnyInput | undefined),
    call: async <R extends ApiRoute, T extends AnswerOf<R> = AnswerOf<R>>(route: R, ...args: CallArgs<R>): Promise<T> =>
      (await answerOf(route, await open(route, args[0] as AnyInput | undefined))) as T,
  };
}
