import { Hono } from 'hono';
import { z } from 'zod';
import { ManifestSchema } from '../manifest/index.ts';
import { MessageBodySchema } from './agent-routes.ts';
import { APPROVAL_STATUS_FILTERS, ApprovalDecisionBodySchema } from './approval-routes.ts';
import { ForgeBodySchema, ImportBodySchema } from './forged-tool-routes.ts';
import type { HttpEnv } from './http-context.ts';
import { ChatCompletionRequestSchema } from './openai/index.ts';
import { InstallBodySchema, RunBodySchema, SkillInstallBodySchema } from './package-routes.ts';

/** A JSON value as the document holds it. */
type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** An OpenAPI 3.1 document (the parts Loom's uses). */
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  security: JsonObject[];
  tags: { name: string; description: string }[];
  paths: Record<string, Record<string, JsonObject>>;
  components: { securitySchemes: JsonObject; schemas: Record<string, JsonObject>; responses: Record<string, JsonObject> };
}

const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });

/**
 * A request body's schema from the route's own zod schema, as a client writes it, registered in
 * `schemas` under `name`; the definitions zod puts in `$defs` (a recursive JSON value) become
 * components of their own, `<name>_<definition>`.
 */
function registerSchema(schemas: Record<string, JsonObject>, name: string, schema: z.ZodType): JsonObject {
  const { $schema: _schema, $defs, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonObject;
  const rename = (value: Json): Json => {
    if (Array.isArray(value)) return value.map(rename);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, key === '$ref' && typeof inner === 'string' ? inner.replace(/^#\/\$defs\//, `#/components/schemas/${name}_`) : rename(inner)]));
  };
  for (const [key, definition] of Object.entries(($defs ?? {}) as JsonObject)) schemas[`${name}_${key}`] = rename(definition) as JsonObject;
  schemas[name] = rename(rest) as JsonObject;
  return ref(name);
}

const json = (schema: JsonObject): JsonObject => ({ 'application/json': { schema } });
const ok = (description: string, schema: JsonObject = { type: 'object' }): JsonObject => ({ description, content: json(schema) });
const sse = (description: string): JsonObject => ({ description, content: { 'text/event-stream': { schema: { type: 'string' } } } });
const errors = (...statuses: number[]): Record<string, JsonObject> =>
  Object.fromEntries(statuses.map((status) => [String(status), { $ref: `#/components/responses/Error${status}` }]));

const path = (name: string, description: string): JsonObject => ({ name, in: 'path', required: true, description, schema: { type: 'string' } });
const query = (name: string, description: string, schema: JsonObject = { type: 'string' }): JsonObject => ({ name, in: 'query', required: false, description, schema });
const AGENT = path('agent', 'the agent\'s name or id');
const IDEMPOTENCY_KEY: JsonObject = { name: 'Idempotency-Key', in: 'header', required: false, description: 'a key of the caller\'s (1 to 255 printable ASCII characters): the same message sent again with it gets the turn the first one started (its reply once it ends), for 24 hours after that turn ended', schema: { type: 'string', maxLength: 255 } };
/** `?session=` and `?thread=`, as the session routes take them. */
const SESSION_CHOICE: JsonObject[] = [query('session', 'a session the caller holds; its own when left out'), query('thread', 'a conversation of the caller\'s own, by name (`mcp:<id>`: a `loom mcp` client session); not with session')];
const LAST_EVENT_ID: JsonObject = { name: 'Last-Event-ID', in: 'header', required: false, description: 'the id of the last event the client got (`<turn id>:<epoch>:<seq>`): the stream goes on after it', schema: { type: 'string', maxLength: 300 } };
const body = (schema: JsonObject, required = true): JsonObject => ({ required, content: json(schema) });

/** One operation: its summary, who may call it, and what it takes and gives. */
interface Operation {
  tag: string;
  summary: string;
  description?: string;
  parameters?: JsonObject[];
  requestBody?: JsonObject;
  responses: Record<string, JsonObject>;
  /** Answered without a key when keys are configured. */
  public?: boolean;
}

/**
 * The hand-kept list of Loom's HTTP routes: every path the daemon answers, by method. Request
 * bodies come from the routes' own zod schemas where they have one. `test/http/openapi.test.ts`
 * asks a real daemon for each, so a path listed here that no route answers fails there.
 */
function operations(schemaOf: (name: string, schema: z.ZodType) => JsonObject): Record<string, Record<string, Operation>> {
  const agentView = ref('Agent');
  return {
    '/api/health': { get: { tag: 'system', summary: 'whether the daemon answers: `{ status, version, agents }`', public: true, responses: { '200': ok('the daemon answers', { type: 'object', properties: { status: { const: 'ok' }, version: { type: 'string' }, agents: { type: 'integer' } } }) } } },
    '/api/openapi.json': { get: { tag: 'system', summary: 'this document', description: 'Any key (owner, user or viewer); the local user without keys.', responses: { '200': ok('the OpenAPI document') } } },
    '/metrics': { get: { tag: 'system', summary: 'the daemon\'s metrics in Prometheus text format (docs/observability.md lists them)', description: 'An owner\'s key, or any client with `[telemetry].metrics_public = true`.', responses: { '200': ok('the metrics, `text/plain; version=0.0.4`'), ...errors(403) } } },
    '/api/cluster': { get: { tag: 'system', summary: 'the daemons sharing the store, the leader and the work queue (owner and viewer keys)', responses: { '200': ok('the nodes'), ...errors(403) } } },
    '/api/agents': {
      get: { tag: 'agents', summary: 'the agents (the objects of `loom agent list --json`)', responses: { '200': ok('the agents', { type: 'array', items: agentView }) } },
      post: {
        tag: 'agents',
        summary: 'spawn an agent from a manifest',
        description: 'The body is a manifest, `application/toml` or `application/json`. Answers 201 with the agent and `warnings` (the manifest\'s, and why the agent cannot run here).',
        parameters: [query('parent', 'spawn as a child of this agent')],
        requestBody: { required: true, content: { 'application/json': { schema: ref('Manifest') }, 'application/toml': { schema: { type: 'string' } } } },
        responses: { '201': ok('the spawned agent, with warnings', agentView), ...errors(400, 403, 409) },
      },
    },
    '/api/manifests/validate': {
      post: {
        tag: 'agents',
        summary: 'check a manifest without spawning: `{ valid, format, errors, warnings }`',
        requestBody: { required: true, content: { 'application/json': { schema: ref('Manifest') }, 'application/toml': { schema: { type: 'string' } } } },
        responses: { '200': ok('the errors, each at its line, and the warnings') },
      },
    },
    '/api/agents/{agent}': {
      get: { tag: 'agents', summary: 'one agent, with its manifest', parameters: [AGENT], responses: { '200': ok('the agent', agentView), ...errors(404) } },
      put: {
        tag: 'agents',
        summary: 'replace its manifest (same name), keeping its id, session and memory (owner)',
        parameters: [AGENT],
        requestBody: { required: true, content: { 'application/json': { schema: ref('Manifest') }, 'application/toml': { schema: { type: 'string' } } } },
        responses: { '200': ok('the agent', agentView), ...errors(400, 403, 404) },
      },
      delete: { tag: 'agents', summary: 'kill it and its descendants', parameters: [AGENT], responses: { '200': ok('the killed agents', { type: 'array', items: agentView }), ...errors(403, 404) } },
    },
    '/api/agents/{agent}/suspend': { post: { tag: 'agents', summary: 'suspend the agent', parameters: [AGENT], responses: { '200': ok('the agent', agentView), ...errors(404) } } },
    '/api/agents/{agent}/resume': { post: { tag: 'agents', summary: 'resume the agent', parameters: [AGENT], responses: { '200': ok('the agent', agentView), ...errors(404) } } },
    '/api/agents/{agent}/messages': {
      post: {
        tag: 'agents',
        summary: 'send a message; the reply as JSON, or the run as SSE with `Accept: text/event-stream`',
        description: 'JSON: `{ text, usage: { input_tokens, output_tokens }, iterations, cost_usd, model }`. SSE: one event per agent event (`run-start`, `text-delta`, `tool-call`, `tool-result`, `phase`, `run-finish`, `error`). A client that disconnects does not cancel the turn.',
        parameters: [AGENT, IDEMPOTENCY_KEY],
        requestBody: body(schemaOf('MessageBody', MessageBodySchema)),
        responses: { '200': { description: 'the reply', content: { 'application/json': { schema: ref('Reply') }, 'text/event-stream': { schema: { type: 'string' } } } }, ...errors(400, 403, 404, 409, 429, 502, 504) },
      },
    },
    '/api/agents/{agent}/turn': {
      get: {
        tag: 'agents',
        summary: 'the running turn `{ run_id, message, received_at, state }` on the caller\'s session (or the one chosen); with `Accept: text/event-stream` its events so far, each with an `id:`, then the rest; with `Last-Event-ID` only those after that one, across a restart too (decision 0059)',
        parameters: [AGENT, ...SESSION_CHOICE, query('last_event_id', 'the id of the last event the client got, for a client that cannot send the `Last-Event-ID` header (the header wins)'), LAST_EVENT_ID],
        responses: { '200': ok('the running turn'), ...errors(400, 404, 409) },
      },
    },
    '/api/agents/{agent}/turn/cancel': { post: { tag: 'agents', summary: 'cancel the running turn on the caller\'s session (or the one chosen), answering once it is committed: `{ agent, run_id, status }`', parameters: [AGENT, ...SESSION_CHOICE], responses: { '200': ok('the cancelled turn'), ...errors(403, 404, 409) } } },
    '/api/agents/{agent}/session': {
      get: { tag: 'agents', summary: 'the session history (`messages`) and the turn not yet in it (`running`)', parameters: [AGENT, ...SESSION_CHOICE], responses: { '200': ok('the session'), ...errors(404) } },
      delete: { tag: 'agents', summary: 'empty the session history', parameters: [AGENT, ...SESSION_CHOICE], responses: { '204': { description: 'emptied' }, ...errors(403, 404) } },
    },
    '/api/agents/{agent}/sessions': { get: { tag: 'agents', summary: 'the agent\'s sessions the caller holds: every one for the owner, its own and its threads\' for any other key', parameters: [AGENT], responses: { '200': ok('the sessions', { type: 'array', items: { type: 'object' } }), ...errors(404) } } },
    '/api/agents/{agent}/runs': {
      get: { tag: 'agents', summary: 'the agent\'s scheduled wake-ups, newest due first: `{ id, trigger, due_at, started_at, finished_at, outcome, reason, caught_up, count }` (decision 0046)', parameters: [AGENT, query('limit', '1–1000 (100 when left out)')], responses: { '200': ok('the runs', { type: 'array', items: { type: 'object' } }), ...errors(403, 404) } },
      post: { tag: 'agents', summary: 'force a wake-up of a continuous or periodic agent now (as `loom agent run`), answering with its run once it has ended', parameters: [AGENT], responses: { '200': ok('the run'), ...errors(403, 404, 409) } },
    },
    '/api/agents/{agent}/workflow': { get: { tag: 'agents', summary: 'a workflow agent\'s plan, each task\'s status and attempts', parameters: [AGENT], responses: { '200': ok('the workflow'), ...errors(404) } } },
    '/api/agents/{agent}/workflow/{action}': {
      post: {
        tag: 'agents',
        summary: 'steer a workflow: approve, cancel, pause or resume (the checks of a message apply)',
        parameters: [AGENT, { ...path('action', 'what to do'), schema: { type: 'string', enum: ['approve', 'cancel', 'pause', 'resume'] } }],
        responses: { '200': ok('the workflow\'s answer'), ...errors(403, 404, 409) },
      },
    },
    '/api/usage': { get: { tag: 'usage', summary: 'tokens and cost by agent and model', parameters: [query('agent', 'one agent'), query('since', 'from this time (ISO 8601 or epoch ms)')], responses: { '200': ok('the totals') } } },
    '/api/usage/today': {
      get: {
        tag: 'usage',
        summary: "today's spend as the daily budgets count it, midnight to midnight in `[scheduler].timezone`: `{ timezone, since, until, tokens, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd }`",
        parameters: [query('agent', 'one agent')],
        responses: { '200': ok("today's totals") },
      },
    },
    '/api/usage/series': {
      get: {
        tag: 'usage',
        summary: 'tokens and cost per time bucket, agent and model: `{ since, until, step_ms, buckets }`',
        parameters: [query('range', 'a preset span (24h by default)', { type: 'string', enum: ['1h', '24h', '7d', '30d'] }), query('agent', 'one agent'), query('since', 'start (epoch ms)'), query('until', 'end (epoch ms)'), query('step', 'bucket size (ms)')],
        responses: { '200': ok('the buckets'), ...errors(400) },
      },
    },
    '/api/events': { get: { tag: 'events', summary: 'SSE of the kernel\'s events (spawn, kill, suspend, resume, approvals, package runs, turns, tool calls, refusals)', responses: { '200': sse('the events, as they happen') } } },
    '/api/audit': {
      get: {
        tag: 'events',
        summary: 'the audit log',
        parameters: [
          query('agent', 'one agent'),
          query('type', 'event types, comma-separated'),
          query('kind', 'turn, tool, refusal, approval, model-error, agent, forge, package, channel, schedule or reasoning'),
          query('outcome', 'ok, refused, failed or cancelled'),
          query('order', '`desc` lists newest first', { type: 'string', enum: ['asc', 'desc'] }),
          query('before', 'rows before this `seq` (paging back)'),
          query('after', 'rows after this `seq`'),
          query('limit', 'how many rows'),
        ],
        responses: { '200': ok('the rows'), ...errors(400) },
      },
    },
    '/api/approvals': { get: { tag: 'approvals', summary: 'pending approvals (or all, by status)', parameters: [query('status', 'which', { type: 'string', enum: [...APPROVAL_STATUS_FILTERS] })], responses: { '200': ok('the approvals', { type: 'array', items: { type: 'object' } }) } } },
    '/api/approvals/{id}/approve': { post: { tag: 'approvals', summary: 'approve a tool call, or answer a question with `answer` (owner)', parameters: [path('id', 'the approval\'s id')], requestBody: body(schemaOf('ApprovalDecision', ApprovalDecisionBodySchema), false), responses: { '200': ok('the decided approval'), ...errors(400, 403, 404, 409) } } },
    '/api/approvals/{id}/deny': { post: { tag: 'approvals', summary: 'deny a tool call (owner)', parameters: [path('id', 'the approval\'s id')], requestBody: body(schemaOf('ApprovalDecision', ApprovalDecisionBodySchema), false), responses: { '200': ok('the decided approval'), ...errors(400, 403, 404, 409) } } },
    '/api/tools/forged': {
      get: { tag: 'forged tools', summary: 'forged tools', parameters: [query('agent', 'one agent\'s')], responses: { '200': ok('the tools', { type: 'array', items: { type: 'object' } }) } },
      post: { tag: 'forged tools', summary: 'forge a tool as an agent (owner); a refused forge is 422 `FORGE_REFUSED`', requestBody: body(schemaOf('ForgeBody', ForgeBodySchema)), responses: { '201': ok('the registered tool'), ...errors(400, 403, 422) } },
    },
    '/api/tools/forged/import': { post: { tag: 'forged tools', summary: 'import an exported tool into an agent: tested and judged again (owner)', requestBody: body(schemaOf('ImportBody', ImportBodySchema)), responses: { '201': ok('the registered tool'), ...errors(400, 403, 422) } } },
    '/api/tools/forged/{id}': { get: { tag: 'forged tools', summary: 'one forged tool', parameters: [path('id', 'the tool\'s id, or a unique start of it')], responses: { '200': ok('the tool'), ...errors(404) } } },
    '/api/tools/forged/{id}/export': { get: { tag: 'forged tools', summary: 'the tool as `agentos.emergent-tool.v1` YAML', parameters: [path('id', 'the tool\'s id')], responses: { '200': { description: 'the YAML document', content: { 'application/yaml': { schema: { type: 'string' } } } }, ...errors(404) } } },
    '/api/tools/forged/{id}/promote': { post: { tag: 'forged tools', summary: 'promote the tool one tier (owner)', parameters: [path('id', 'the tool\'s id')], responses: { '200': ok('the tool'), ...errors(403, 404) } } },
    '/api/tools/forged/{id}/demote': { post: { tag: 'forged tools', summary: 'demote the tool one tier (owner)', parameters: [path('id', 'the tool\'s id')], requestBody: body({ type: 'object', properties: { reason: { type: 'string' } } }, false), responses: { '200': ok('the tool'), ...errors(403, 404) } } },
    '/api/packages': {
      get: { tag: 'packages', summary: 'installed packages', responses: { '200': ok('the packages', { type: 'array', items: { type: 'object' } }) } },
      post: { tag: 'packages', summary: 'install a package (owner)', requestBody: body(schemaOf('InstallBody', InstallBodySchema)), responses: { '201': ok('the installed package'), ...errors(400, 403, 409) } },
    },
    '/api/packages/check': { post: { tag: 'packages', summary: 'the plan an install would carry out, with its `digest` (owner)', requestBody: body(schemaOf('InstallBody', InstallBodySchema)), responses: { '200': ok('the plan'), ...errors(400, 403) } } },
    '/api/packages/skills': { post: { tag: 'packages', summary: 'install a skill by its install code, with the skills it depends on (owner)', requestBody: body(schemaOf('SkillInstallBody', SkillInstallBodySchema)), responses: { '201': ok('the skills installed, dependencies first', { type: 'array', items: { type: 'object' } }), ...errors(400, 403) } } },
    '/api/packages/runs': { get: { tag: 'packages', summary: 'recent runs, newest first', parameters: [query('package', 'one package'), query('limit', '1–1000')], responses: { '200': ok('the runs') } } },
    '/api/packages/{slug}': {
      get: { tag: 'packages', summary: 'one package: bindings, next fire times, capabilities', parameters: [path('slug', 'the package')], responses: { '200': ok('the package'), ...errors(404) } },
      delete: { tag: 'packages', summary: 'uninstall it (owner)', parameters: [path('slug', 'the package')], responses: { '200': ok('the uninstalled package'), ...errors(403, 404) } },
    },
    '/api/packages/{slug}/runs': { get: { tag: 'packages', summary: 'the package\'s runs', parameters: [path('slug', 'the package'), query('limit', '1–1000')], responses: { '200': ok('the runs'), ...errors(404) } } },
    '/api/packages/{slug}/bindings/{binding}/run': {
      post: { tag: 'packages', summary: 'run a binding now', parameters: [path('slug', 'the package'), path('binding', 'the binding')], requestBody: body(schemaOf('RunBody', RunBodySchema), false), responses: { '200': ok('the run'), ...errors(400, 403, 404) } },
    },
    '/api/channels': { get: { tag: 'channels', summary: 'channels and their pairings (owner)', responses: { '200': ok('the channels'), ...errors(403) } } },
    '/api/channels/pairings/{code}/approve': { post: { tag: 'channels', summary: 'approve a pairing code (owner)', parameters: [path('code', 'the code the person was given')], responses: { '200': ok('the pairing'), ...errors(403, 404) } } },
    '/hooks/{channel}': { post: { tag: 'channels', summary: 'an inbound message of a signed webhook or Slack\'s Events API (no key: the platform\'s signature authenticates)', public: true, parameters: [path('channel', 'the channel\'s name')], requestBody: body({ type: 'object' }), responses: { '200': ok('accepted'), ...errors(401, 404) } } },
    '/api/mcp/servers': { get: { tag: 'mcp', summary: 'the MCP servers, their state, tools and negotiated protocol', responses: { '200': ok('the servers', { type: 'array', items: { type: 'object' } }), ...errors(403) } } },
    '/api/mcp/servers/{name}/reconnect': { post: { tag: 'mcp', summary: 'connect that MCP server again now (owner; 204)', parameters: [path('name', 'the server\'s name')], responses: { '204': { description: 'reconnecting' }, ...errors(403, 404, 409) } } },
    '/mcp': {
      post: { tag: 'mcp', summary: 'MCP over Streamable HTTP: the agents as tools, their sessions and last turns as resources', requestBody: body({ type: 'object', description: 'a JSON-RPC message' }), responses: { '200': ok('a JSON-RPC answer, or an SSE stream') } },
      get: { tag: 'mcp', summary: 'the session\'s stream (2025 revisions)', responses: { '200': sse('server messages') } },
      delete: { tag: 'mcp', summary: 'end the session (2025 revisions)', responses: { '200': { description: 'ended' } } },
    },
    '/mcp/sse': { get: { tag: 'mcp', summary: 'MCP over HTTP+SSE (2024-11-05): the stream', responses: { '200': sse('server messages') } } },
    '/mcp/messages': { post: { tag: 'mcp', summary: 'MCP over HTTP+SSE (2024-11-05): a client message', parameters: [query('sessionId', 'the stream\'s session')], requestBody: body({ type: 'object' }), responses: { '202': { description: 'accepted' } } } },
    '/api/a2a/external': { get: { tag: 'a2a', summary: 'the external A2A agents and their cards', responses: { '200': ok('the agents', { type: 'array', items: { type: 'object' } }), ...errors(403) } } },
    '/.well-known/agent-card.json': { get: { tag: 'a2a', summary: 'the default agent\'s A2A card (`[a2a].default_agent`, else the first agent)', public: true, responses: { '200': ok('the card'), ...errors(404) } } },
    '/.well-known/agent.json': { get: { tag: 'a2a', summary: 'the default agent\'s card at its older address', public: true, responses: { '200': ok('the card'), ...errors(404) } } },
    '/a2a/agents': { get: { tag: 'a2a', summary: 'the cards the caller may see', public: true, responses: { '200': ok('the cards', { type: 'array', items: { type: 'object' } }) } } },
    '/a2a/{agent}/.well-known/agent-card.json': { get: { tag: 'a2a', summary: 'an agent\'s card (1.0 with `A2A-Version: 1.0`, 0.3 with `0.3`, both read by both without it)', public: true, parameters: [AGENT], responses: { '200': ok('the card'), ...errors(404) } } },
    '/a2a/{agent}': { post: { tag: 'a2a', summary: 'A2A JSON-RPC: 1.0 with `A2A-Version: 1.0` (`SendMessage`, …), else 0.3 (`message/send`, …)', parameters: [AGENT], requestBody: body({ type: 'object', description: 'a JSON-RPC request' }), responses: { '200': ok('a JSON-RPC answer, or an SSE stream'), ...errors(404) } } },
    '/a2a/{agent}/rest/message:send': { post: { tag: 'a2a', summary: 'A2A 1.0 HTTP+JSON: send a message', parameters: [AGENT], requestBody: { required: true, content: { 'application/a2a+json': { schema: { type: 'object' } }, 'application/json': { schema: { type: 'object' } } } }, responses: { '200': ok('the task or message'), ...errors(404, 415) } } },
    '/a2a/{agent}/rest/tasks': { get: { tag: 'a2a', summary: 'A2A 1.0 HTTP+JSON: the caller\'s tasks', parameters: [AGENT], responses: { '200': ok('the tasks'), ...errors(404) } } },
    '/a2a/{agent}/v1/message:send': { post: { tag: 'a2a', summary: 'A2A 0.3 HTTP+JSON: send a message', parameters: [AGENT], requestBody: body({ type: 'object' }), responses: { '200': ok('the task or message'), ...errors(404, 415) } } },
    '/a2a/tasks/send': { post: { tag: 'a2a', summary: 'the older task endpoint: send a task to the default agent', requestBody: body({ type: 'object' }), responses: { '200': ok('the task') } } },
    '/a2a/tasks/{id}': { get: { tag: 'a2a', summary: 'the older task endpoint: a task', parameters: [path('id', 'the task\'s id')], responses: { '200': ok('the task'), ...errors(404) } } },
    '/a2a/tasks/{id}/cancel': { post: { tag: 'a2a', summary: 'the older task endpoint: cancel a task', parameters: [path('id', 'the task\'s id')], responses: { '200': ok('the task'), ...errors(404) } } },
    '/v1/models': { get: { tag: 'openai', summary: 'OpenAI-compatible: the agents as models', responses: { '200': ok('the models') } } },
    '/v1/chat/completions': {
      post: { tag: 'openai', summary: 'OpenAI-compatible: `model` names an agent; `stream: true` streams chunks', parameters: [IDEMPOTENCY_KEY], requestBody: body(schemaOf('ChatCompletionRequest', ChatCompletionRequestSchema)), responses: { '200': { description: 'a chat completion, or chunks as SSE', content: { 'application/json': { schema: { type: 'object' } }, 'text/event-stream': { schema: { type: 'string' } } } } } },
    },
  };
}

const STATUS_TEXT: Record<number, string> = {
  400: 'bad input: the message names the field',
  401: 'a missing or wrong key',
  403: 'refused: role, capability, or a non-loopback client',
  404: 'an unknown agent, resource or route',
  409: 'a conflict: a name taken, an agent suspended, no turn running',
  415: 'a body of a type the route does not read',
  422: 'refused after checking (a forge\'s stage)',
  429: 'quota or rate limit; `Retry-After` says when',
  502: 'every model failed, or a code agent\'s module failed',
  504: 'over `[daemon].request_timeout_seconds`',
};

/**
 * Where a daemon serves a route the document lists: A2A's under `[a2a].listen_path` (`a2aPath`;
 * `/` puts them at the root), none of them when A2A is off (`null`), as listed when not given.
 */
function servedPath(path: string, a2aPath: string | null | undefined): string | undefined {
  const isA2a = path === A2A_PATH || path.startsWith(`${A2A_PATH}/`);
  if (a2aPath === null && (isA2a || path.startsWith('/.well-known/agent'))) return undefined;
  if (a2aPath === undefined || a2aPath === null || !isA2a) return path;
  return `${a2aPath === '/' ? '' : a2aPath}${path.slice(A2A_PATH.length)}` || '/';
}

/** Where the document lists A2A's routes: `[a2a].listen_path`'s default. */
const A2A_PATH = '/a2a';

/**
 * Loom's HTTP API as an OpenAPI 3.1 document: every route the daemon answers, with request
 * bodies from the routes' own zod schemas and the manifest's from the manifest schema. Served
 * at `GET /api/openapi.json` and written to docs/reference/openapi.json. `a2aPath` is the
 * daemon's `[a2a].listen_path`, or null when `[a2a].enabled = false`: the served document lists
 * A2A's routes where that daemon answers them (docs/reference's, under `/a2a`).
 */
export function openApiDocument(options: { version: string; a2aPath?: string | null }): OpenApiDocument {
  const schemas: Record<string, JsonObject> = {};
  const schemaOf = (name: string, schema: z.ZodType): JsonObject => (schemas[name] === undefined ? registerSchema(schemas, name, schema) : ref(name));
  schemaOf('Manifest', ManifestSchema);
  const paths: OpenApiDocument['paths'] = {};
  for (const [listed, methods] of Object.entries(operations(schemaOf))) {
    const route = servedPath(listed, options.a2aPath);
    if (route === undefined) continue;
    paths[route] = {};
    for (const [method, { tag, public: isPublic, ...operation }] of Object.entries(methods)) {
      paths[route][method] = { tags: [tag], ...(operation as JsonObject), ...(isPublic === true ? { security: [] } : {}) };
    }
  }
  const errorResponses = Object.fromEntries(Object.entries(STATUS_TEXT).map(([status, text]) => [`Error${status}`, ok(text, ref('Error'))]));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Loom',
      version: options.version,
      description: 'The HTTP API of a Loom daemon (`loom start`, by default at http://127.0.0.1:4200). With no API key configured, only clients on this machine are served, as the owner; with keys, every route but the public ones needs one, as `Authorization: Bearer <key>` or `X-API-Key: <key>`. Errors are `{ "error": { "code", "message" } }`. Guide: docs/http-api.md.',
    },
    servers: [{ url: 'http://127.0.0.1:4200' }],
    // A key by either header; or none, when the daemon has no keys configured (loopback clients only).
    security: [{ bearer: [] }, { apiKey: [] }, {}],
    tags: ['system', 'agents', 'usage', 'events', 'approvals', 'forged tools', 'packages', 'channels', 'mcp', 'a2a', 'openai'].map((name) => ({ name, description: TAG_TEXT[name] ?? name })),
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'an API key: `LOOM_API_KEY`, or a `[[auth.keys]]` entry\'s secret' },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'the same key in another header' },
      },
      schemas: {
        ...schemas,
        Agent: {
          type: 'object',
          description: 'An agent as `loom agent show --json` prints it.',
          properties: {
            id: { type: 'string' },
            name: { type: 'string' },
            version: { type: 'string' },
            description: { type: 'string' },
            state: { type: 'string' },
            parent: { type: ['string', 'null'] },
            children: { type: 'array', items: { type: 'string' } },
            session_id: { type: 'string' },
            module: { type: 'string' },
            schedule: { type: 'string' },
            model: { type: ['string', 'null'], description: 'what the manifest\'s `[model]` names; null on the daemon\'s default model' },
            runs_on: { type: ['string', 'null'], description: 'its primary model: its own, else the daemon\'s default; null when it has neither' },
            tags: { type: 'array', items: { type: 'string' } },
            capabilities: { type: 'array', items: { type: 'object' } },
            created_at: { type: 'string' },
            updated_at: { type: 'string' },
            skills: {
              type: 'object',
              description: 'one agent\'s view (spawn, update, show): what its manifest\'s `skills` offer it of the installed skills, in its prompt\'s order, and why a skill it names is not offered',
              properties: {
                skills: {
                  type: 'array',
                  items: { type: 'object', properties: { skill: { type: 'string', description: '`@org/skills/name@version`' }, name: { type: 'string' }, description: { type: 'string' }, in_prompt: { type: 'boolean', description: 'false: past the budget, listed by name and description only' } } },
                },
                problems: { type: 'array', items: { type: 'string' } },
                budget_bytes: { type: 'integer' },
              },
            },
          },
        },
        Reply: {
          type: 'object',
          properties: {
            text: { type: 'string' },
            usage: { type: 'object', properties: { input_tokens: { type: 'integer' }, output_tokens: { type: 'integer' } } },
            iterations: { type: 'integer' },
            cost_usd: { type: 'number' },
            model: { type: 'string' },
          },
        },
        Error: {
          type: 'object',
          properties: { error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object' } } } },
          required: ['error'],
        },
      },
      responses: errorResponses,
    },
  };
}

const TAG_TEXT: Record<string, string> = {
  system: 'health, this document, the cluster',
  agents: 'spawn, inspect, steer and talk to agents',
  usage: 'tokens and cost',
  events: 'the live event stream and the audit log',
  approvals: 'tool calls and questions waiting for a person',
  'forged tools': 'tools agents built at run time',
  packages: 'agent packages and their runs',
  channels: 'chat platforms and webhooks',
  mcp: 'MCP servers Loom uses, and Loom as an MCP server',
  a2a: 'Loom\'s agents over A2A, and agents elsewhere',
  openai: 'the OpenAI-compatible endpoint',
};

/**
 * `GET /api/openapi.json` (mount under `/api`): the document above. Any caller the API serves may
 * read it (owner, user or viewer key; the local user without keys): it describes routes, not data.
 */
export function createOpenApiRoutes(options: { version: string; a2aPath: string | null }): Hono<HttpEnv> {
  const routes = new Hono<HttpEnv>();
  let document: OpenApiDocument | undefined;
  routes.get('/openapi.json', (c) => c.json((document ??= openApiDocument(options))));
  return routes;
}
