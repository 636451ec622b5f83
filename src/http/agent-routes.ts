import { Hono } from 'hono';
import type { Clock } from '../contracts/index.ts';
import { HttpRequestError, TurnNotRunningError } from '../errors/index.ts';
import { type EventId, eventIdOf, type FollowedEvent, type Kernel, parseEventId, toTurnView } from '../kernel/index.ts';
import { parseManifest } from '../manifest/index.ts';
import type { AgentEvent } from '../runtime/index.ts';
import { idempotencyKeyOf } from './idempotency-key.ts';
import { agentDetail, type SpawnCheckOptions, spawnedAgent } from './spawned-agent.ts';
import { startTurnStream } from './start-turn-stream.ts';
import { replySse, type SseMessage } from './sse-reply.ts';
import { type HttpEnv, kernelOf } from './http-context.ts';
import { manifestFormatOf, mediaTypeOf, readJsonBody, readQuery } from './request-input.ts';
import { MessageBodySchema, ScheduleRunsQuerySchema, SessionQuerySchema, SpawnQuerySchema, TurnQuerySchema } from '../wire/index.ts';

/** What the agent routes need: the kernel, and what a spawn's warnings and an agent's skills are checked against (the daemon's default model and environment, the runtime's installed skills). */
export interface AgentRoutesOptions extends SpawnCheckOptions {
  kernel: Kernel;
  clock: Clock;
}

/** An SSE event's data: the agent event, with a finished run's result in the API's turn shape. */
function wireEvent(event: AgentEvent): unknown {
  return event.type === 'run-finish' ? { type: event.type, result: toTurnView(event.result) } : event;
}

/** An event of a turn as an SSE message, with the id a client reconnects with (`GET …/turn` with `Last-Event-ID`). */
function sseOf(event: AgentEvent, id = eventIdOf(event)): SseMessage {
  const data = JSON.stringify(wireEvent(event));
  return id === undefined ? { event: event.type, data } : { event: event.type, data, id };
}

/** A streamed turn's messages: its first event, read already, then the rest. */
async function* sseMessagesOf(first: IteratorResult<AgentEvent>, events: AsyncIterator<AgentEvent>): AsyncGenerator<SseMessage> {
  if (first.done === true) return;
  yield sseOf(first.value);
  for (let next = await events.next(); next.done !== true; next = await events.next()) yield sseOf(next.value);
}

/** A followed turn's messages: its events with their ids, and a `rewind` where its replay starts over. */
async function* followedMessagesOf(events: AsyncIterator<FollowedEvent>): AsyncGenerator<SseMessage> {
  for (let next = await events.next(); next.done !== true; next = await events.next()) {
    const item = next.value;
    if ('rewind' in item) yield { event: 'rewind', data: JSON.stringify({ type: 'rewind', reason: item.rewind }) };
    else yield sseOf(item.event, item.id);
  }
}

/** A `Last-Event-ID` (or `?last_event_id=`) as the kernel takes it. @throws {HttpRequestError} when it is not an id this daemon gives. */
function lastEventIdOf(value: string | undefined): EventId | undefined {
  if (value === undefined || value === '') return undefined;
  const id = parseEventId(value);
  if (id === undefined)
    throw new HttpRequestError(
      'INVALID_REQUEST',
      `Last-Event-ID "${value.slice(0, 100)}" is not an event id of a turn's stream: expected "<turn id>:<epoch>:<seq>", as the stream's "id:" lines give`,
    );
  return id;
}

/**
 * The agent routes, mounted at `/api/agents`: list and spawn; show and kill; suspend and
 * resume; messages (JSON or SSE); the running turn (follow it, cancel it); the session; the
 * scheduled wake-ups (list them, force one). Each
 * route makes one call on the kernel as its caller (`kernelOf`), which decides what it may do.
 */
export function createAgentRoutes(options: AgentRoutesOptions): Hono<HttpEnv> {
  const { kernel } = options;
  const routes = new Hono<HttpEnv>();

  routes.get('/', (c) => c.json(kernelOf(c, kernel).list()));

  routes.post('/', async (c) => {
    const caller = kernelOf(c, kernel);
    caller.require('spawn agents');
    const { parent } = readQuery(c, SpawnQuerySchema);
    const type = mediaTypeOf(c);
    const format = manifestFormatOf(type);
    if (format === undefined) {
      throw new HttpRequestError(
        'UNSUPPORTED_MEDIA_TYPE',
        `cannot spawn an agent: the manifest must be sent as "application/toml" or "application/json", got "${type || 'none'}"`,
      );
    }
    const { manifest, warnings } = parseManifest(await c.req.text(), { source: 'request body', format });
    const view = await caller.spawn(manifest, parent === undefined ? {} : { parent });
    return c.json(await spawnedAgent(kernel, view, manifest, options, warnings), 201);
  });

  routes.put('/:agent', async (c) => {
    const caller = kernelOf(c, kernel);
    caller.require('update agents');
    const type = mediaTypeOf(c);
    const format = manifestFormatOf(type);
    if (format === undefined) {
      throw new HttpRequestError(
        'UNSUPPORTED_MEDIA_TYPE',
        `cannot update an agent: the manifest must be sent as "application/toml" or "application/json", got "${type || 'none'}"`,
      );
    }
    const { manifest, warnings } = parseManifest(await c.req.text(), { source: 'request body', format });
    const view = await caller.update(c.req.param('agent'), manifest);
    return c.json(await spawnedAgent(kernel, view, manifest, options, warnings));
  });

  routes.get('/:agent', async (c) => c.json((await agentDetail(kernelOf(c, kernel), c.req.param('agent'), options)).detail));

  routes.delete('/:agent', async (c) => c.json(await kernelOf(c, kernel).kill(c.req.param('agent'))));

  routes.post('/:agent/suspend', async (c) => c.json(await kernelOf(c, kernel).suspend(c.req.param('agent'))));

  routes.post('/:agent/resume', async (c) => c.json(await kernelOf(c, kernel).resume(c.req.param('agent'))));

  routes.post('/:agent/messages', async (c) => {
    const caller = kernelOf(c, kernel);
    // Refused before the body is read: a viewer, or an agent out of the key's reach.
    caller.require('send messages', caller.agentName(c.req.param('agent')));
    const { message, session: sessionId, thread } = await readJsonBody(c, MessageBodySchema);
    const reference = c.req.param('agent');
    const deadline = c.get('deadline');
    // The turn runs under the request's time limit, not the client's connection: a client that
    // leaves does not take the turn with it (see decision 0021); it is cancelled on purpose
    // (`POST …/turn/cancel`) or when `[daemon].request_timeout_seconds` runs out. (Every request
    // here has a time limit; without one, a signal that never aborts.)
    const signal = deadline.timeLimit;
    const wantsStream = (c.req.header('accept') ?? '').includes('text/event-stream');
    // The caller's retry of a message it did not get the reply to gets the same turn (decision 0045).
    const idempotencyKey = idempotencyKeyOf(c);
    const keyed = idempotencyKey === undefined ? {} : { idempotencyKey };
    if (!wantsStream) {
      const result = await caller.send(reference, message, { signal, sessionId, thread, ...keyed });
      return c.json(toTurnView(result));
    }

    const { first, events } = await startTurnStream(caller, reference, message, signal, { sessionId, thread, ...keyed });
    // A client that left stops getting events, not the turn: it runs to its end (its time limit
    // stays until then) and `GET …/turn` follows it again.
    return replySse(c, { messages: sseMessagesOf(first, events), clientGone: 'drain', onEnd: () => deadline.dispose() });
  });

  // The running turn on the caller's own session of the agent, or on the one it chose (whoever
  // started it): shown, followed (from the event after `Last-Event-ID`, decision 0059), cancelled.
  routes.get('/:agent/turn', async (c) => {
    const caller = kernelOf(c, kernel);
    const reference = c.req.param('agent');
    const deadline = c.get('deadline');
    const { session: sessionId, thread, last_event_id: lastEventId } = readQuery(c, TurnQuerySchema);
    if (!(c.req.header('accept') ?? '').includes('text/event-stream')) {
      const view = await caller.runningTurn(reference, { sessionId, thread });
      if (view === undefined) throw new TurnNotRunningError(caller.get(reference).name, 'show');
      return c.json(view);
    }
    // The header wins: a browser's EventSource sends it on each reconnect, with the URL it first had.
    const after = lastEventIdOf(c.req.header('last-event-id') ?? lastEventId);
    // The client's own signal: on a cluster a turn another node runs is read from the store until the client leaves.
    const events = (await caller.followTurn(reference, { sessionId, thread }, after, c.req.raw.signal))[Symbol.asyncIterator]();
    return replySse(c, {
      messages: followedMessagesOf(events),
      clientGone: 'stop',
      onEnd: async () => {
        await events.return?.(undefined);
        deadline.dispose();
      },
    });
  });

  routes.post('/:agent/turn/cancel', async (c) => {
    const { session: sessionId, thread } = readQuery(c, SessionQuerySchema);
    return c.json(await kernelOf(c, kernel).cancelTurn(c.req.param('agent'), { sessionId, thread }));
  });

  routes.get('/:agent/workflow', async (c) => {
    const caller = kernelOf(c, kernel);
    const { name } = caller.get(c.req.param('agent'));
    const workflow = await caller.workflow(name);
    if (workflow === undefined)
      throw new HttpRequestError(
        'WORKFLOW_NOT_FOUND',
        `agent "${name}" has no workflow${kernel.get(name).module === 'builtin:workflow' ? ' yet: send it a request' : ' (it is not a workflow agent)'}`,
      );
    return c.json(workflow);
  });

  // The workflow's commands, as the chat takes them (spec/03): the same checks as a message.
  routes.post('/:agent/workflow/:action{approve|cancel|pause|resume}', async (c) => {
    const caller = kernelOf(c, kernel);
    const agent = caller.get(c.req.param('agent'));
    caller.require('steer workflows', agent.name);
    if (agent.module !== 'builtin:workflow') throw new HttpRequestError('WORKFLOW_NOT_FOUND', `agent "${agent.name}" is not a workflow agent`);
    const command = ({ approve: 'go', cancel: 'cancel', pause: 'pause', resume: 'resume' } as const)[
      c.req.param('action') as 'approve' | 'cancel' | 'pause' | 'resume'
    ];
    return c.json(await caller.steerWorkflow(agent.name, command, c.get('deadline').signal));
  });

  // The caller's own session of the agent (the main one for the owner), or one it holds by `?session=`.
  routes.get('/:agent/session', async (c) => {
    const caller = kernelOf(c, kernel);
    const reference = c.req.param('agent');
    const { session: sessionId, thread } = readQuery(c, SessionQuerySchema);
    const session = await caller.session(reference, { sessionId, thread });
    // The turn not yet committed to it, if one runs: a client shows it and follows it with `GET …/turn`.
    const running = await caller.runningTurn(reference, { sessionId, thread });
    return c.json({ ...session, running: running ?? null });
  });

  routes.get('/:agent/sessions', async (c) => c.json(await kernelOf(c, kernel).sessions(c.req.param('agent'))));

  // The agent's scheduled wake-ups (decision 0046), run or skipped, newest due first; a POST forces one now.
  routes.get('/:agent/runs', async (c) => {
    const { limit } = readQuery(c, ScheduleRunsQuerySchema);
    return c.json(await kernelOf(c, kernel).scheduleRuns(c.req.param('agent'), limit === undefined ? {} : { limit }));
  });

  routes.post('/:agent/runs', async (c) => c.json(await kernelOf(c, kernel).wakeNow(c.req.param('agent'))));

  routes.delete('/:agent/session', async (c) => {
    const { session: sessionId, thread } = readQuery(c, SessionQuerySchema);
    await kernelOf(c, kernel).resetSession(c.req.param('agent'), { sessionId, thread });
    return c.body(null, 204);
  });

  return routes;
}
