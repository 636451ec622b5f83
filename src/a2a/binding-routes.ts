/**
 * The A2A protocol bindings of each agent: JSON-RPC at `POST {listen path}/{agent}` (1.0 with
 * `A2A-Version: 1.0`, 0.3 without the header), HTTP+JSON 1.0 under `{agent}/rest/`, and HTTP+JSON
 * 0.3 under `{agent}/v1/` (the SDK's own 0.3 router, answering on the Node request and response).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { A2A_VERSION_HEADER, type Message } from '@a2a-js/sdk';
import { LegacyA2AError, LegacyJsonRpcTransportHandler, toLegacyHTTPError } from '@a2a-js/sdk/compat/v0_3/server';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import { JsonRpcTransportHandler, validateVersion } from '@a2a-js/sdk/server';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Hono } from 'hono';
import { safeDecodeUriComponent, trimTrailingSlashes } from '../validation/index.ts';
import { answeredMethod } from '../wire/index.ts';
import { unknownAgent } from './a2a-access.ts';
import { type A2aRouteContext, slashed } from './a2a-route-context.ts';
import { DEFAULT_MAX_REQUEST_BYTES } from './a2a-server-options.ts';
import { LoomA2aUser } from './agent-executor.ts';
import { JsonRpcRequestError } from './json-rpc-request-error.ts';
import {
  answerRestRequest,
  contentTypeRefusal,
  LEGACY_REST_MEDIA_TYPES,
  primed,
  REST_MEDIA_TYPES,
  restErrorResponse,
  sseResponse,
  UNSUPPORTED_MEDIA_TYPE,
  unsupportedMediaTypeResponse,
} from './rest-binding.ts';

/** Adds JSON-RPC (1.0 and 0.3) on each agent's path to `routes`. */
export function addJsonRpcRoute(routes: Hono, context: A2aRouteContext): void {
  const { access, agents, base, requests, logger, options } = context;
  routes.on('POST', slashed(`${base}/:agent`), async (c) => {
    const name = c.req.param('agent') ?? '';
    const agent = access.visibleAgent(c, name);
    if (agent === undefined) throw unknownAgent(name);
    const sdk = agents.of(agent, c);
    const version = c.req.header(A2A_VERSION_HEADER);
    const legacy = version === undefined || version === '0.3';
    const mapError = (error: unknown): unknown =>
      legacy ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error) : JsonRpcTransportHandler.mapToJSONRPCError(error);
    const contentType = (c.req.header('content-type') ?? 'application/json').split(';', 1)[0]?.trim().toLowerCase();
    if (contentType !== 'application/json') {
      throw new JsonRpcRequestError({
        code: 'UNSUPPORTED_MEDIA_TYPE',
        rpcCode: -32005,
        id: null,
        status: 200,
        message: `Unsupported Content-Type "${contentType ?? ''}"; expected application/json.`,
      });
    }
    const raw = await requests.textOf(c);
    const maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
    if (Buffer.byteLength(raw) > maxRequestBytes)
      throw new JsonRpcRequestError({
        code: 'BODY_TOO_LARGE',
        rpcCode: -32600,
        id: null,
        status: 200,
        message: `the request is larger than ${maxRequestBytes} bytes`,
      });
    let body: unknown;
    try {
      body = JSON.parse(raw) as unknown;
    } catch {
      throw new JsonRpcRequestError({ code: 'INVALID_REQUEST', rpcCode: -32700, id: null, status: 200, message: 'Invalid JSON payload.' });
    }
    const id = (body as { id?: unknown } | null)?.id;
    const rpcId = typeof id === 'string' || typeof id === 'number' ? id : null;
    try {
      const callContext = requests.contextOf(c, legacy ? '0.3' : version);
      validateVersion(callContext.requestedVersion, await sdk.handler.getAgentCard(), 'JSONRPC');
      const answer = await (legacy ? sdk.legacy : sdk.jsonRpc).handle(body as Record<string, unknown>, callContext);
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
}

/** Adds HTTP+JSON 1.0 (`{agent}/rest/…`) and 0.3 (`{agent}/v1/…`) to `routes`. */
export function addRestRoutes(routes: Hono, context: A2aRouteContext): void {
  const { access, agents, base, requests } = context;
  // HTTP+JSON (1.0).
  routes.on(['GET', 'POST', 'DELETE'], `${base}/:agent/rest/*`, async (c) => {
    const name = c.req.param('agent');
    const agent = access.visibleAgent(c, name);
    if (agent === undefined) throw unknownAgent(name);
    const { handler } = agents.of(agent, c);
    const prefix = `${base}/${name}/rest`;
    const decoded = safeDecodeUriComponent(c.req.path.slice(c.req.path.indexOf(prefix) + prefix.length));
    if (decoded === undefined)
      return restErrorResponse(new RequestMalformedError(`cannot read ${c.req.method} ${c.req.path}: a percent-escape in it does not decode`));
    const path = trimTrailingSlashes(decoded);
    // A HEAD is answered as its GET (`answerRestRequest`; Hono drops the body).
    const { method } = c.req;
    // Before anything reads the body: one of another type is refused, never read as JSON.
    const refused = c.req.method === 'POST' ? contentTypeRefusal(c.req.header('content-type'), REST_MEDIA_TYPES) : undefined;
    if (refused !== undefined) return unsupportedMediaTypeResponse(refused, REST_MEDIA_TYPES);
    try {
      // This binding is 1.0's: a request without the header is a 1.0 request (push notifications are shaped by it).
      const callContext = requests.contextOf(c, c.req.header(A2A_VERSION_HEADER) ?? '1.0');
      validateVersion(callContext.requestedVersion, await handler.getAgentCard(), 'HTTP+JSON');
      const body = async (): Promise<unknown> => {
        const text = await requests.textOf(c);
        if (text.trim() === '') return {};
        try {
          return JSON.parse(text) as unknown;
        } catch {
          throw new RequestMalformedError('Invalid JSON payload.');
        }
      };
      const answer = await answerRestRequest(handler, { method, path, query: c.req.query(), body, context: callContext });
      // Named by the whole path the client asked for, the agent's part with it.
      return answer ?? c.json({ error: { code: 404, status: 'NOT_FOUND', message: `no A2A route ${answeredMethod(c.req.method)} ${c.req.path}` } }, 404);
    } catch (error) {
      return restErrorResponse(error);
    }
  });

  // HTTP+JSON (0.3): the SDK's 0.3 REST router answers on the Node request and response themselves.
  routes.on(['GET', 'POST', 'DELETE'], `${base}/:agent/v1/*`, async (c) => {
    const name = c.req.param('agent');
    const agent = access.visibleAgent(c, name);
    if (agent === undefined) throw unknownAgent(name);
    const node = c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;
    const { handler, legacyRest } = agents.of(agent, c);
    const listener = await legacyRest;
    if (listener === undefined || node?.incoming === undefined || node.outgoing === undefined) {
      return c.json({ code: -32004, message: 'A2A 0.3 HTTP+JSON is not available on this server; use JSON-RPC' }, 501);
    }
    const { incoming, outgoing } = node;
    const url = new URL(c.req.url);
    const agentSegment = url.pathname.slice(base.length + 1).split('/', 1)[0] ?? '';
    const rest = url.pathname.slice(base.length + 1 + agentSegment.length);
    // The router routes on the path under the agent; its 404 names the whole path (`originalUrl`, as Express keeps it).
    Object.assign(incoming, { originalUrl: c.req.path });
    incoming.url = `${rest}${url.search}`;
    // 0.3's HTTP+JSON is plain JSON only. The SDK's router is handed the body parsed here, so the
    // type is checked here, before a message is charged.
    const refused = c.req.method === 'POST' ? contentTypeRefusal(c.req.header('content-type'), LEGACY_REST_MEDIA_TYPES) : undefined;
    if (refused !== undefined) return c.json(toLegacyHTTPError(refused), UNSUPPORTED_MEDIA_TYPE, { accept: LEGACY_REST_MEDIA_TYPES.join(', ') });
    const chargeTurn = requests.chargeTurnOf(c);
    let parsed: unknown = {};
    if (c.req.method === 'POST') {
      // The API in front may have read the Node stream already: hand the SDK's router the parsed
      // body the way Express's body parser leaves it (`body`, `_body`), so it does not read it again.
      const text = await requests.textOf(c);
      try {
        parsed = text.trim() === '' ? {} : (JSON.parse(text) as unknown);
      } catch {
        return c.json(toLegacyHTTPError(LegacyA2AError.parseError('Invalid JSON payload.')), 400);
      }
      Object.assign(incoming, { body: parsed, _body: true });
    }
    // The SDK's router answers on the Node response itself, so a refusal met inside it could not be
    // answered as 429: a message that starts a turn is charged here, before the router sees it, in
    // every spelling the router takes (any case, a trailing slash); one naming a task the caller
    // cannot reach here, or that has ended, starts none and is not (the router refuses it). Any
    // other that starts a turn is charged where it starts (`CheckedRequestHandler`), answered with
    // the router's error.
    if (c.req.method === 'POST' && /^\/v1\/message:(send|stream)$/.test(trimTrailingSlashes((safeDecodeUriComponent(rest) ?? rest).toLowerCase()))) {
      if (await handler.startsTurn(legacyMessageIdsOf(parsed), requests.contextOf(c, '0.3'))) chargeTurn();
    }
    agents.setLegacyRestUser(incoming, new LoomA2aUser(access.callerFor(c), chargeTurn));
    listener(incoming, outgoing);
    return RESPONSE_ALREADY_SENT;
  });
}

/**
 * The ids of the message of a 0.3 HTTP+JSON `message:send` body, read as the SDK's 0.3 router
 * reads them (`message`, else `request`; each id camelCase or snake_case, '' when absent); undefined
 * when the body holds no message.
 */
function legacyMessageIdsOf(body: unknown): Pick<Message, 'messageId' | 'taskId' | 'contextId'> | undefined {
  const { message, request } = (typeof body === 'object' && body !== null ? body : {}) as { message?: unknown; request?: unknown };
  const sent = message ?? request;
  if (typeof sent !== 'object' || sent === null) return undefined;
  const fields = sent as Record<string, unknown>;
  const id = (camel: string, snake: string): string => {
    const value = fields[camel] ?? fields[snake];
    // Not a string: the id the router makes of it (its `String`: `42` is the task "42", `["t"]` the
    // task "t"), never none.
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- the router converts it so
    return value === undefined || value === null ? '' : String(value);
  };
  return { messageId: id('messageId', 'message_id'), taskId: id('taskId', 'task_id'), contextId: id('contextId', 'context_id') };
}
