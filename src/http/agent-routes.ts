import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import type { Clock } from '../contracts/index.ts';
import { AccessDeniedError, TurnNotRunningError } from '../errors/index.ts';
import { type AgentDetailView, type Caller, type Kernel, toTurnView } from '../kernel/index.ts';
import { type Manifest, parseManifest } from '../manifest/index.ts';
import { type ModelReadinessOptions, modelWarnings } from '../models/index.ts';
import type { AgentEvent } from '../runtime/index.ts';
import { LOCAL_PRINCIPAL_NAME, mayReachAgent, type Principal } from '../access/index.ts';
// Not the MCP server's index: that loads the MCP SDK, which the daemon loads on the first MCP request.
import { agentToolClash } from '../mcp/server/agent-tools.ts';
import { reachAgent } from './caller-scope.ts';
import { HttpRequestError } from './http-request-error.ts';
import { startTurnStream } from './start-turn-stream.ts';
import { type HttpContext, type HttpEnv, principalOf, requireOwner } from './http-context.ts';
import { MANIFEST_MEDIA_TYPES, mediaTypeOf, readJsonBody, readQuery } from './request-input.ts';

/** The body of `POST /api/agents/:agent/messages`. */
export const MessageBodySchema = z.strictObject({ message: z.string().min(1, { error: 'expected a non-empty message' }) });

const SpawnQuerySchema = z.strictObject({ parent: z.string().min(1).optional() });

/** What the agent routes need. */
export interface AgentRoutesOptions {
  kernel: Kernel;
  clock: Clock;
  /** The daemon's default model and environment: a spawn or update warns when the agent's models cannot be called. */
  readiness?: ModelReadinessOptions;
}

/** The response to a spawn: the agent as `loom agent show --json` shows it, plus the manifest's warnings. */
export type SpawnResponse = AgentDetailView & { warnings: string[] };


function callerOf(principal: Principal): Caller {
  return { kind: 'user', role: principal.role, name: principal.name, agents: principal.agents };
}

/** An SSE event's data: the agent event, with a finished run's result in the API's turn shape. */
function wireEvent(event: AgentEvent): unknown {
  return event.type === 'run-finish' ? { type: event.type, result: toTurnView(event.result) } : event;
}

/** Who a principal is, as a cancelled turn names them. */
function byline(principal: Principal): string {
  return principal.name === LOCAL_PRINCIPAL_NAME ? `the ${principal.role}` : `"${principal.name}"`;
}

/** Refuses a viewer key what changes a conversation. */
function requireSpeaker(principal: Principal, action: string): void {
  if (principal.role === 'viewer') throw new AccessDeniedError(`a viewer key ("${principal.name}") may not ${action}; it needs the user or owner role`);
}

/**
 * The agent routes, mounted at `/api/agents`: list and spawn; show and kill; suspend and
 * resume; messages (JSON or SSE); the running turn (follow it, cancel it); the session. Role
 * checks are made here; the kernel applies its own RBAC on send and cancel as well.
 */
export function createAgentRoutes(options: AgentRoutesOptions): Hono<HttpEnv> {
  const { kernel } = options;
  const routes = new Hono<HttpEnv>();

  /** Why the agent's models cannot be called (a missing key, a server that does not answer), and a clash of its MCP tool, as warnings. */
  const cannotRun = async (name: string, manifest: Manifest): Promise<string[]> => [
    ...(options.readiness === undefined ? [] : await modelWarnings(name, manifest, options.readiness)),
    ...agentToolClash(name, kernel.list()),
  ];

  /** Resolves the agent (404 when unknown) and checks the principal may reach it (403). */
  const reach = (c: HttpContext): { principal: Principal; name: string } => {
    const principal = principalOf(c);
    return { principal, name: reachAgent(kernel, principal, c.req.param('agent') ?? '').name };
  };

  routes.get('/', (c) => {
    const principal = principalOf(c);
    return c.json(kernel.list().filter((agent) => mayReachAgent(principal, agent.name)));
  });

  routes.post('/', async (c) => {
    requireOwner(principalOf(c), 'spawn agents');
    const { parent } = readQuery(c, SpawnQuerySchema);
    const type = mediaTypeOf(c);
    const format = MANIFEST_MEDIA_TYPES[type];
    if (format === undefined) {
      throw new HttpRequestError('UNSUPPORTED_MEDIA_TYPE', `cannot spawn an agent: the manifest must be sent as "application/toml" or "application/json", got "${type || 'none'}"`);
    }
    const { manifest, warnings } = parseManifest(await c.req.text(), { source: 'request body', format });
    const view = await kernel.spawn(manifest, parent === undefined ? {} : { parent });
    const body: SpawnResponse = { ...kernel.get(view.id), warnings: [...warnings, ...(await cannotRun(view.name, manifest))] };
    return c.json(body, 201);
  });

  routes.put('/:agent', async (c) => {
    requireOwner(principalOf(c), 'update agents');
    const type = mediaTypeOf(c);
    const format = MANIFEST_MEDIA_TYPES[type];
    if (format === undefined) {
      throw new HttpRequestError('UNSUPPORTED_MEDIA_TYPE', `cannot update an agent: the manifest must be sent as "application/toml" or "application/json", got "${type || 'none'}"`);
    }
    const { manifest, warnings } = parseManifest(await c.req.text(), { source: 'request body', format });
    const view = await kernel.update(c.req.param('agent'), manifest);
    const body: SpawnResponse = { ...kernel.get(view.id), warnings: [...warnings, ...(await cannotRun(view.name, manifest))] };
    return c.json(body);
  });

  routes.get('/:agent', (c) => {
    reach(c);
    return c.json(kernel.get(c.req.param('agent')));
  });

  routes.delete('/:agent', async (c) => {
    requireOwner(principalOf(c), 'kill agents');
    return c.json(await kernel.kill(c.req.param('agent')));
  });

  routes.post('/:agent/suspend', async (c) => {
    requireOwner(principalOf(c), 'suspend agents');
    return c.json(await kernel.suspend(c.req.param('agent')));
  });

  routes.post('/:agent/resume', async (c) => {
    requireOwner(principalOf(c), 'resume agents');
    return c.json(await kernel.resume(c.req.param('agent')));
  });

  routes.post('/:agent/messages', async (c) => {
    const { principal } = reach(c);
    requireSpeaker(principal, 'send messages');
    const { message } = await readJsonBody(c, MessageBodySchema);
    const reference = c.req.param('agent');
    const deadline = c.get('deadline');
    // The turn runs under the request's time limit, not the client's connection: a client that
    // leaves does not take the turn with it (see decision 0021); it is cancelled on purpose
    // (`POST …/turn/cancel`) or when `[daemon].request_timeout_seconds` runs out. (Every request
    // here has a time limit; without one, a signal that never aborts.)
    const signal = deadline.timeLimit;
    const wantsStream = (c.req.header('accept') ?? '').includes('text/event-stream');
    if (!wantsStream) {
      const result = await kernel.send(reference, message, { caller: callerOf(principal), signal });
      return c.json(toTurnView(result));
    }

    const { first, events } = await startTurnStream(kernel, reference, message, callerOf(principal), signal);
    return streamSSE(c, async (stream) => {
      try {
        if (first.done === true) return;
        await stream.writeSSE({ event: first.value.type, data: JSON.stringify(wireEvent(first.value)) });
        // A client that left stops getting events, not the turn: it runs to its end (its time
        // limit stays until then) and `GET …/turn` follows it again.
        for (let next = await events.next(); next.done !== true; next = await events.next()) {
          if (stream.aborted) continue;
          await stream.writeSSE({ event: next.value.type, data: JSON.stringify(wireEvent(next.value)) }).catch(() => undefined);
        }
      } finally {
        deadline.dispose();
      }
    });
  });

  // The agent's running turn on its main session (whoever started it): shown, followed, cancelled.
  routes.get('/:agent/turn', (c) => {
    const { name } = reach(c);
    const deadline = c.get('deadline');
    if (!(c.req.header('accept') ?? '').includes('text/event-stream')) {
      const view = kernel.runningTurn(name);
      if (view === undefined) throw new TurnNotRunningError(name, 'show');
      return c.json(view);
    }
    const events = kernel.followTurn(name)[Symbol.asyncIterator]();
    return streamSSE(c, async (stream) => {
      try {
        for (let next = await events.next(); next.done !== true; next = await events.next()) {
          if (stream.aborted) break;
          await stream.writeSSE({ event: next.value.type, data: JSON.stringify(wireEvent(next.value)) });
        }
      } finally {
        await events.return?.(undefined);
        deadline.dispose();
      }
    });
  });

  routes.post('/:agent/turn/cancel', async (c) => {
    const { principal, name } = reach(c);
    requireSpeaker(principal, 'cancel turns');
    return c.json(await kernel.cancelTurn(name, { caller: callerOf(principal), by: byline(principal) }));
  });

  routes.get('/:agent/workflow', async (c) => {
    const { name } = reach(c);
    const workflow = await kernel.workflow(name);
    if (workflow === undefined) throw new HttpRequestError('WORKFLOW_NOT_FOUND', `agent "${name}" has no workflow${kernel.get(name).module === 'builtin:workflow' ? ' yet: send it a request' : ' (it is not a workflow agent)'}`);
    return c.json(workflow);
  });

  // The workflow's commands, as the chat takes them (spec/03): the same checks as a message.
  routes.post('/:agent/workflow/:action{approve|cancel|pause|resume}', async (c) => {
    const { principal, name } = reach(c);
    if (principal.role === 'viewer') throw new AccessDeniedError(`a viewer key ("${principal.name}") may not steer workflows; it needs the user or owner role`);
    if (kernel.get(name).module !== 'builtin:workflow') throw new HttpRequestError('WORKFLOW_NOT_FOUND', `agent "${name}" is not a workflow agent`);
    const command = { approve: 'go', cancel: 'cancel', pause: 'pause', resume: 'resume' }[c.req.param('action') as 'approve' | 'cancel' | 'pause' | 'resume'];
    const result = await kernel.send(name, command, { caller: callerOf(principal), signal: c.get('deadline').signal });
    return c.json({ reply: result.text, workflow: await kernel.workflow(name) });
  });

  routes.get('/:agent/session', async (c) => {
    const { name } = reach(c);
    // The turn not yet committed to it, if one runs: a client shows it and follows it with `GET …/turn`.
    return c.json({ ...(await kernel.session(name)), running: kernel.runningTurn(name) ?? null });
  });

  routes.delete('/:agent/session', async (c) => {
    requireOwner(principalOf(c), 'reset sessions');
    await kernel.resetSession(c.req.param('agent'));
    return c.body(null, 204);
  });

  return routes;
}
