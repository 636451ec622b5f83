import {
  ListTaskPushNotificationConfigsResponse,
  ListTasksResponse,
  SendMessageRequest,
  SendMessageResponse,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
  TaskState,
  taskStateFromJSON,
} from '@a2a-js/sdk';
import { ContentTypeNotSupportedError, RequestMalformedError, restStatusFor, toRestErrorBody } from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { answeredMethod } from '../wire/index.ts';

const JSON_HEADERS = { 'content-type': 'application/json' };

/**
 * The media types A2A 1.0's HTTP+JSON binding reads a request body in: `application/a2a+json`,
 * which the specification says clients SHOULD send (§11.1), and `application/json`, which the
 * SDK's clients send. Parameters (`; charset=utf-8`) may follow either.
 */
export const REST_MEDIA_TYPES: readonly string[] = ['application/a2a+json', 'application/json'];

/** The one media type A2A 0.3's HTTP+JSON binding reads a request body in (it had no `application/a2a+json`). */
export const LEGACY_REST_MEDIA_TYPES: readonly string[] = ['application/json'];

/** The status of a request whose body is of a type the binding does not read (RFC 9110 §15.5.16). */
export const UNSUPPORTED_MEDIA_TYPE = 415;

/**
 * Why a request body of Content-Type `contentType` cannot be read, when it is not one of
 * `accepted` (compared without parameters, in any case); undefined when it is one, or when there
 * is none (read as JSON, as the SDK's own server does). The error is the SDK's, so a client reads
 * its reason (`CONTENT_TYPE_NOT_SUPPORTED`) from the body whatever the status.
 * @example
 * contentTypeRefusal('text/plain', REST_MEDIA_TYPES)?.message
 * // 'unsupported Content-Type "text/plain": this endpoint reads application/a2a+json or application/json (a parameter such as "; charset=utf-8" may follow); send the body as JSON with one of them'
 */
export function contentTypeRefusal(contentType: string | undefined, accepted: readonly string[]): ContentTypeNotSupportedError | undefined {
  if (contentType === undefined || contentType.trim() === '') return undefined;
  const mediaType = (contentType.split(';', 1)[0] ?? '').trim().toLowerCase();
  if (accepted.includes(mediaType)) return undefined;
  const expected = accepted.length === 1 ? (accepted[0] ?? '') : `${accepted.slice(0, -1).join(', ')} or ${accepted.at(-1) ?? ''}`;
  return new ContentTypeNotSupportedError(
    `unsupported Content-Type ${JSON.stringify(contentType)}: this endpoint reads ${expected} (a parameter such as "; charset=utf-8" may follow); send the body as JSON with one of them`,
  );
}

/** The HTTP+JSON answer to a body it cannot read: 415, the error in the binding's shape, and the types it reads in `Accept`. */
export function unsupportedMediaTypeResponse(error: ContentTypeNotSupportedError, accepted: readonly string[]): Response {
  return new Response(JSON.stringify(toRestErrorBody(error, UNSUPPORTED_MEDIA_TYPE)), {
    status: UNSUPPORTED_MEDIA_TYPE,
    headers: { ...JSON_HEADERS, accept: accepted.join(', ') },
  });
}
/** The headers of A2A 1.0's streams, JSON-RPC's and HTTP+JSON's. */
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };

/** A JSON response. */
export function jsonResponse(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: JSON_HEADERS });
}

/** An A2A 1.0 HTTP+JSON error response (the SDK's status and body for the error). */
export function restErrorResponse(error: unknown): Response {
  const status = restStatusFor(error);
  return jsonResponse(toRestErrorBody(error, status), status);
}

/** An SSE response of `events`; an error after the stream started is sent as an `error` event. */
export function sseResponse(events: AsyncIterable<unknown>, onError: (error: unknown) => unknown): Response {
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

/**
 * The first event of a subscription asked by a HEAD, the subscription ended after it: the SDK's
 * checks and errors run as for the GET, and nothing stays subscribed (decision 0075).
 */
export async function firstEventOnly<T>(events: AsyncGenerator<T>): Promise<IteratorResult<T>> {
  const first = await events.next();
  await events.return(undefined);
  return first;
}

/** Reads the first event before answering, so errors raised before the stream starts answer as plain JSON. */
export async function primed<T>(stream: AsyncGenerator<T>): Promise<AsyncGenerator<T>> {
  const first = await stream.next();
  return (async function* () {
    if (first.done !== true) yield first.value;
    yield* stream;
  })();
}

/** One A2A 1.0 HTTP+JSON request, as {@link answerRestRequest} takes it. */
export interface RestRequest {
  /** A HEAD is answered as its GET (the caller drops the body). */
  method: string;
  /** The path under the agent's `/rest` (e.g. `/message:send`), without a trailing slash. */
  path: string;
  query: Record<string, string>;
  /** The body as JSON (`{}` when empty); throws RequestMalformedError when it is not JSON. */
  body(): Promise<unknown>;
  context: ServerCallContext;
}

function requireMessage(params: SendMessageRequest): SendMessageRequest {
  if (params.message === undefined || params.message.messageId === '') throw new RequestMalformedError('message.messageId is required');
  return params;
}

function streamOf(stream: AsyncGenerator<StreamResponse>): Response {
  return sseResponse(
    (async function* () {
      for await (const event of stream) yield StreamResponse.toJSON(event);
    })(),
    (error) => toRestErrorBody(error, restStatusFor(error)),
  );
}

/**
 * Answers one A2A 1.0 HTTP+JSON request with `handler`: `message:send`, `message:stream`,
 * `tasks`, `tasks/{id}`, `tasks/{id}:cancel`, `tasks/{id}:subscribe`, and the push-notification
 * configs `tasks/{id}/pushNotificationConfigs[/{configId}]` (POST, GET, DELETE). Undefined for
 * any other route. A HEAD is answered as its GET; a subscription's after the GET's checks (the
 * task is there, the caller's, not ended), with the stream's headers alone (decision 0075): no
 * subscription goes on, read by no one. Throws the SDK's errors, for {@link restErrorResponse}.
 */
export async function answerRestRequest(handler: A2ARequestHandler, request: RestRequest): Promise<Response | undefined> {
  const { path, query, context } = request;
  const method = answeredMethod(request.method);
  if (method === 'POST' && path === '/message:send') {
    const result = await handler.sendMessage(requireMessage(SendMessageRequest.fromJSON(await request.body())), context);
    const payload = 'messageId' in result ? { $case: 'message' as const, value: result } : { $case: 'task' as const, value: result };
    return jsonResponse(SendMessageResponse.toJSON({ payload }));
  }
  if (method === 'POST' && path === '/message:stream') {
    return streamOf(await primed(handler.sendMessageStream(requireMessage(SendMessageRequest.fromJSON(await request.body())), context)));
  }
  if (method === 'GET' && path === '/tasks') {
    const status = query['status'];
    const result = await handler.listTasks(
      {
        tenant: '',
        contextId: query['contextId'] ?? '',
        status:
          status === undefined || status === '' ? TaskState.TASK_STATE_UNSPECIFIED : taskStateFromJSON(Number.isNaN(Number(status)) ? status : Number(status)),
        pageSize: query['pageSize'] === undefined ? undefined : Number.parseInt(query['pageSize'], 10),
        pageToken: query['pageToken'] ?? '',
        historyLength: query['historyLength'] === undefined ? undefined : Number.parseInt(query['historyLength'], 10),
        statusTimestampAfter: query['statusTimestampAfter'],
        includeArtifacts: query['includeArtifacts'] === 'true',
      },
      context,
    );
    return jsonResponse(ListTasksResponse.toJSON(result));
  }
  const configs = /^\/tasks\/([^/:]+)\/pushNotificationConfigs(?:\/([^/]+))?$/.exec(path);
  if (configs !== null) {
    const taskId = configs[1] ?? '';
    const id = configs[2];
    if (id === undefined && method === 'POST') {
      const body = await request.body();
      const params = TaskPushNotificationConfig.fromJSON({ ...(typeof body === 'object' && body !== null ? body : {}), taskId });
      return jsonResponse(TaskPushNotificationConfig.toJSON(await handler.createTaskPushNotificationConfig(params, context)), 201);
    }
    if (id === undefined && method === 'GET') {
      const result = await handler.listTaskPushNotificationConfigs({ tenant: '', taskId, pageSize: 0, pageToken: '' }, context);
      return jsonResponse(ListTaskPushNotificationConfigsResponse.toJSON(result));
    }
    if (id !== undefined && method === 'GET')
      return jsonResponse(TaskPushNotificationConfig.toJSON(await handler.getTaskPushNotificationConfig({ tenant: '', taskId, id }, context)));
    if (id !== undefined && method === 'DELETE') {
      await handler.deleteTaskPushNotificationConfig({ tenant: '', taskId, id }, context);
      return new Response(null, { status: 204 });
    }
    return undefined;
  }
  const match = /^\/tasks\/([^/:]+)(:cancel|:subscribe)?$/.exec(path);
  if (match === null) return undefined;
  const id = match[1] ?? '';
  if (match[2] === ':cancel' && method === 'POST') return jsonResponse(Task.toJSON(await handler.cancelTask({ id, tenant: '', metadata: {} }, context)));
  if (match[2] === ':subscribe' && (method === 'GET' || method === 'POST')) {
    const events = handler.resubscribe({ id, tenant: '' }, context);
    if (request.method !== 'HEAD') return streamOf(await primed(events));
    await firstEventOnly(events);
    return new Response(null, { status: 200, headers: SSE_HEADERS });
  }
  if (match[2] === undefined && method === 'GET') {
    const historyLength = query['historyLength'];
    return jsonResponse(
      Task.toJSON(
        await handler.getTask({ id, tenant: '', ...(historyLength === undefined ? {} : { historyLength: Number.parseInt(historyLength, 10) }) }, context),
      ),
    );
  }
  return undefined;
}
