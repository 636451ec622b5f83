/**
 * The legacy A2A endpoints (spec/05), on the default agent: `POST {listen path}/tasks/send`,
 * `GET {listen path}/tasks/{id}`, `POST {listen path}/tasks/{id}/cancel`, answering tasks in
 * spec/05's shape. A task the caller may not see is as missing as an unknown one.
 */
import { randomUUID } from 'node:crypto';
import { SendMessageRequest } from '@a2a-js/sdk';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import { ResultManager } from '@a2a-js/sdk/server';
import type { Hono } from 'hono';
import { HttpRequestError, LoomError } from '../errors/index.ts';
import { safeParseJson } from '../validation/index.ts';
import { type A2aRouteContext, slashed } from './a2a-route-context.ts';
import { canceledUpdate, cancellerByline } from './agent-executor.ts';
import { isTerminalState } from './bounded-task-store.ts';
import { JsonRpcRequestError } from './json-rpc-request-error.ts';
import { toLegacyTask } from './task-views.ts';

const legacyNotFound = (id: string): HttpRequestError => new HttpRequestError('TASK_NOT_FOUND', `no task "${id}" (unknown, or evicted)`);

/** Adds the legacy endpoints to `routes`. */
export function addLegacyTaskRoutes(routes: Hono, context: A2aRouteContext): void {
  const { access, agents, base, options, requests, store } = context;
  routes.on('POST', slashed(`${base}/tasks/send`), async (c) => {
    const body = safeParseJson(await requests.textOf(c));
    if (!body.ok) throw new JsonRpcRequestError({ code: 'INVALID_REQUEST', rpcCode: -32700, id: null, status: 400, message: 'Invalid JSON payload.' });
    if (typeof body.value !== 'object' || body.value === null || Array.isArray(body.value)) {
      throw new JsonRpcRequestError({
        code: 'INVALID_REQUEST',
        rpcCode: -32600,
        id: null,
        status: 400,
        message: 'the request must be a JSON-RPC object: {"jsonrpc": "2.0", "id": …, "method": "tasks/send", "params": {"message": …}}',
      });
    }
    const request = body.value as { id?: unknown; method?: unknown; params?: { message?: { role?: unknown; parts?: unknown }; sessionId?: unknown } };
    const id = typeof request.id === 'string' || typeof request.id === 'number' ? request.id : null;
    const parts: unknown[] = Array.isArray(request.params?.message?.parts) ? request.params.message.parts : [];
    const text = parts
      .flatMap((part) => {
        const { type, text: partText } = (part ?? {}) as { type?: unknown; text?: unknown };
        return type === 'text' && typeof partText === 'string' ? [partText] : [];
      })
      .join('\n\n');
    if (request.method !== undefined && request.method !== 'tasks/send') {
      throw new JsonRpcRequestError({
        code: 'ROUTE_NOT_FOUND',
        rpcCode: -32601,
        id,
        status: 400,
        message: `Method not found: ${typeof request.method === 'string' ? request.method : JSON.stringify(request.method)}`,
      });
    }
    if (text === '')
      throw new JsonRpcRequestError({
        code: 'INVALID_REQUEST',
        rpcCode: -32602,
        id,
        status: 400,
        message: 'params.message.parts must hold at least one text part',
      });
    const agent = access.defaultAgent();
    if (agent === undefined) throw new LoomError('AGENT_NOT_FOUND', 'user', 'no agent is running to take the task');
    const sessionId = typeof request.params?.sessionId === 'string' ? request.params.sessionId : undefined;
    const { handler } = agents.of(agent, c);
    const params = SendMessageRequest.fromJSON({
      message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...(sessionId === undefined ? {} : { contextId: sessionId }) },
      ...(sessionId === undefined ? {} : { metadata: { sessionId } }),
    });
    const result = await handler.sendMessage(params, requests.contextOf(c, '1.0'));
    if (!('status' in result))
      throw new JsonRpcRequestError({ code: 'INTERNAL', rpcCode: -32603, id, status: 500, message: 'the agent answered without a task' });
    const task = await store.load(result.id);
    return c.json(toLegacyTask(task ?? result));
  });
  // Loaded in the caller's context: a task it may not see is as missing as an unknown one.
  routes.on('GET', slashed(`${base}/tasks/:id`), async (c) => {
    const id = c.req.param('id') ?? '';
    const task = await store.load(id, requests.contextOf(c, '1.0'));
    if (task === undefined) throw legacyNotFound(id);
    return c.json(toLegacyTask(task));
  });
  // The cancel of the task's own agent's endpoints (`CheckedRequestHandler.cancelTask`): the kernel
  // judges the canceller, the task's status message names them, and a task whose cancel is refused
  // or fails is left as it is.
  routes.on('POST', slashed(`${base}/tasks/:id/cancel`), async (c) => {
    const id = c.req.param('id') ?? '';
    const context = requests.contextOf(c, '1.0');
    const task = await store.load(id, context);
    if (task === undefined) throw legacyNotFound(id);
    if (isTerminalState(task.status?.state)) return c.json(toLegacyTask(task));
    const owner: unknown = task.metadata?.['loomAgent'];
    const agent = access.findAgent(typeof owner === 'string' ? owner : '');
    if (agent === undefined) {
      // Its agent is gone, and its turns with it (stopped when it was killed): nothing runs to stop.
      await new ResultManager(store, context).processEvent(canceledUpdate(id, task.contextId, cancellerByline(options.kernel, access.callerFor(c))));
      // What is stored: the save is dropped when the task ended meanwhile (its first end wins).
      return c.json(toLegacyTask((await store.load(id)) ?? task));
    }
    try {
      return c.json(toLegacyTask(await agents.of(agent, c).handler.cancelTask({ id, tenant: '', metadata: {} }, context)));
    } catch (error) {
      if (error instanceof TaskNotFoundError) throw legacyNotFound(id);
      if (!(error instanceof TaskNotCancelableError)) throw error;
      // Ended meanwhile: answered as it is. Else refused, and left running.
      const latest = await store.load(id, context);
      if (latest !== undefined && isTerminalState(latest.status?.state)) return c.json(toLegacyTask(latest));
      throw new HttpRequestError('TASK_NOT_CANCELABLE', error.message);
    }
  });
}
