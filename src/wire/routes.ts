/**
 * Loom's HTTP API, described once: every route the daemon answers, by name. The OpenAPI document
 * (src/http/openapi-routes.ts) is generated from this table, the routes validate their bodies
 * with its schemas, and `apiClient` (api-client.ts) calls a route typed by it. A route the daemon
 * registers without an entry here fails test/http/openapi.test.ts.
 */
import type { AgentDetailView, AgentView, ScheduleRunView, UsageRow, UsageSeriesView, UsageToday } from './agents.ts';
import type { ChannelView, PairingView } from './channels.ts';
import type { ManifestValidation } from './manifests.ts';
import type { PackageRunView, PackageView } from './packages.ts';
import * as schemas from './requests.ts';
import { type ApiRoute, arrayOf, bodyOf, json, other, type Param, queryOf, ref, type RequestBody } from './route-spec.ts';
import type { ApprovalView, ForgedToolView, McpServerView, PromotionView } from './tools.ts';
import type { CancelledTurnView, ChatSessionView, RunningTurnView, SessionSummary, TurnView } from './turns.ts';

const AGENT: Param = { description: "the agent's name or id" };
const APPROVAL: Param = { description: "the approval's id" };
const TOOL: Param = { description: "the tool's id" };
const PACKAGE: Param = { description: 'the package' };
/** `?session=` and `?thread=`, as the session routes take them. */
const SESSION_CHOICE = {
  session: 'a session the caller holds; its own when left out',
  thread: "a conversation of the caller's own, by name (`mcp:<id>`: a `loom mcp` client session); not with session",
};
const SESSION_QUERY = queryOf(schemas.SessionQuerySchema, SESSION_CHOICE);
const MANIFEST: RequestBody = { name: 'Manifest', required: true, media: 'manifest' };
const OBJECT: RequestBody = { json: { type: 'object' }, required: true };
const JSON_RPC: RequestBody = { json: { type: 'object', description: 'a JSON-RPC request' }, required: true };
const AGENT_VIEW = ref('Agent');

/** An agent as spawned or updated: its detail, with the manifest's warnings and why it cannot run here. */
export type SpawnedAgent = AgentDetailView & { warnings: string[] };

/** Every route, by name, in the document's order. */
export const API = {
  health: { method: 'get', path: '/api/health', tag: 'system', summary: 'whether the daemon answers: `{ status, version, agents }`', public: true, answer: json<{ status: 'ok'; version: string; agents: number }>('the daemon answers', { type: 'object', properties: { status: { const: 'ok' }, version: { type: 'string' }, agents: { type: 'integer' } } }) },
  openApi: { method: 'get', path: '/api/openapi.json', tag: 'system', summary: 'this document', description: 'Any key (owner, user or viewer); the local user without keys.', answer: json('the OpenAPI document') },
  metrics: { method: 'get', path: '/metrics', tag: 'system', summary: "the daemon's metrics in Prometheus text format (docs/observability.md lists them)", description: "An owner's key, or any client with `[telemetry].metrics_public = true`.", answer: other<string>('text', 'the metrics, `text/plain; version=0.0.4`'), errors: [403] },
  cluster: { method: 'get', path: '/api/cluster', tag: 'system', summary: 'the daemons sharing the store, the leader and the work queue (owner and viewer keys)', answer: json('the nodes'), errors: [403] },
  listAgents: { method: 'get', path: '/api/agents', tag: 'agents', summary: 'the agents (the objects of `loom agent list --json`)', answer: json<AgentView[]>('the agents', arrayOf(AGENT_VIEW)) },
  spawnAgent: {
    method: 'post',
    path: '/api/agents',
    tag: 'agents',
    summary: 'spawn an agent from a manifest',
    description: "The body is a manifest, `application/toml` or `application/json`. Answers 201 with the agent and `warnings` (the manifest's, and why the agent cannot run here).",
    query: queryOf(schemas.SpawnQuerySchema, { parent: 'spawn as a child of this agent' }),
    body: MANIFEST,
    answer: json<SpawnedAgent>('the spawned agent, with warnings', AGENT_VIEW, 201),
    errors: [400, 403, 409],
  },
  validateManifest: { method: 'post', path: '/api/manifests/validate', tag: 'agents', summary: 'check a manifest without spawning: `{ valid, format, errors, warnings }`', body: MANIFEST, answer: json<ManifestValidation>('the errors, each at its line, and the warnings') },
  getAgent: { method: 'get', path: '/api/agents/{agent}', tag: 'agents', summary: 'one agent, with its manifest', params: { agent: AGENT }, answer: json<AgentDetailView>('the agent', AGENT_VIEW), errors: [404] },
  updateAgent: { method: 'put', path: '/api/agents/{agent}', tag: 'agents', summary: 'replace its manifest (same name), keeping its id, session and memory (owner)', params: { agent: AGENT }, body: MANIFEST, answer: json<SpawnedAgent>('the agent', AGENT_VIEW), errors: [400, 403, 404] },
  killAgent: { method: 'delete', path: '/api/agents/{agent}', tag: 'agents', summary: 'kill it and its descendants', params: { agent: AGENT }, answer: json<AgentView[]>('the killed agents', arrayOf(AGENT_VIEW)), errors: [403, 404] },
  suspendAgent: { method: 'post', path: '/api/agents/{agent}/suspend', tag: 'agents', summary: 'suspend the agent', params: { agent: AGENT }, answer: json<AgentView>('the agent', AGENT_VIEW), errors: [404] },
  resumeAgent: { method: 'post', path: '/api/agents/{agent}/resume', tag: 'agents', summary: 'resume the agent', params: { agent: AGENT }, answer: json<AgentView>('the agent', AGENT_VIEW), errors: [404] },
  sendMessage: {
    method: 'post',
    path: '/api/agents/{agent}/messages',
    tag: 'agents',
    summary: 'send a message; the reply as JSON, or the run as SSE with `Accept: text/event-stream`',
    description: 'JSON: `{ text, usage: { input_tokens, output_tokens }, iterations, cost_usd, model }`. SSE: one event per agent event (`run-start`, `text-delta`, `tool-call`, `tool-result`, `phase`, `run-finish`, `error`). A client that disconnects does not cancel the turn.',
    params: { agent: AGENT },
    headers: ['Idempotency-Key'],
    body: bodyOf('MessageBody', schemas.MessageBodySchema),
    answer: { ...json<TurnView>('the reply', ref('Reply')), content: 'json-or-sse' },
    errors: [400, 403, 404, 409, 429, 502, 504],
  },
  runningTurn: {
    method: 'get',
    path: '/api/agents/{agent}/turn',
    tag: 'agents',
    summary: "the running turn `{ run_id, message, received_at, state }` on the caller's session (or the one chosen); with `Accept: text/event-stream` its events so far, each with an `id:`, then the rest; with `Last-Event-ID` only those after that one, across a restart too (decision 0059)",
    params: { agent: AGENT },
    query: queryOf(schemas.TurnQuerySchema, { ...SESSION_CHOICE, last_event_id: 'the id of the last event the client got, for a client that cannot send the `Last-Event-ID` header (the header wins)' }),
    headers: ['Last-Event-ID'],
    answer: json<RunningTurnView>('the running turn'),
    errors: [400, 404, 409],
  },
  cancelTurn: { method: 'post', path: '/api/agents/{agent}/turn/cancel', tag: 'agents', summary: "cancel the running turn on the caller's session (or the one chosen), answering once it is committed: `{ agent, run_id, status }`", params: { agent: AGENT }, query: SESSION_QUERY, answer: json<CancelledTurnView>('the cancelled turn'), errors: [403, 404, 409] },
  session: { method: 'get', path: '/api/agents/{agent}/session', tag: 'agents', summary: 'the session history (`messages`) and the turn not yet in it (`running`)', params: { agent: AGENT }, query: SESSION_QUERY, answer: json<ChatSessionView>('the session'), errors: [404] },
  resetSession: { method: 'delete', path: '/api/agents/{agent}/session', tag: 'agents', summary: 'empty the session history', params: { agent: AGENT }, query: SESSION_QUERY, answer: other<undefined>('none', 'emptied', 204), errors: [403, 404] },
  sessions: { method: 'get', path: '/api/agents/{agent}/sessions', tag: 'agents', summary: "the agent's sessions the caller holds: every one for the owner, its own and its threads' for any other key", params: { agent: AGENT }, answer: json<SessionSummary[]>('the sessions', arrayOf()), errors: [404] },
  scheduleRuns: { method: 'get', path: '/api/agents/{agent}/runs', tag: 'agents', summary: "the agent's scheduled wake-ups, newest due first: `{ id, trigger, due_at, started_at, finished_at, outcome, reason, caught_up, count }` (decision 0046)", params: { agent: AGENT }, query: queryOf(schemas.ScheduleRunsQuerySchema, { limit: '1–1000 (100 when left out)' }), answer: json<ScheduleRunView[]>('the runs', arrayOf()), errors: [403, 404] },
  wakeAgent: { method: 'post', path: '/api/agents/{agent}/runs', tag: 'agents', summary: 'force a wake-up of a continuous or periodic agent now (as `loom agent run`), answering with its run once it has ended', params: { agent: AGENT }, answer: json<ScheduleRunView>('the run'), errors: [403, 404, 409] },
  workflow: { method: 'get', path: '/api/agents/{agent}/workflow', tag: 'agents', summary: "a workflow agent's plan, each task's status and attempts", params: { agent: AGENT }, answer: json('the workflow'), errors: [404] },
  steerWorkflow: {
    method: 'post',
    path: '/api/agents/{agent}/workflow/{action}',
    tag: 'agents',
    summary: 'steer a workflow: approve, cancel, pause or resume (the checks of a message apply)',
    params: { agent: AGENT, action: { description: 'what to do', schema: { type: 'string', enum: ['approve', 'cancel', 'pause', 'resume'] } } },
    answer: json("the workflow's answer"),
    errors: [403, 404, 409],
  },
  usage: { method: 'get', path: '/api/usage', tag: 'usage', summary: 'tokens and cost by agent and model', query: queryOf(schemas.UsageQuerySchema, { agent: 'one agent', since: 'from this time (epoch ms)' }), answer: json<UsageRow[]>('the totals') },
  usageToday: {
    method: 'get',
    path: '/api/usage/today',
    tag: 'usage',
    summary: "today's spend as the daily budgets count it, midnight to midnight in `[scheduler].timezone`: `{ timezone, since, until, tokens, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd }`",
    query: queryOf(schemas.UsageTodayQuerySchema, { agent: 'one agent' }),
    answer: json<UsageToday>("today's totals"),
  },
  usageSeries: {
    method: 'get',
    path: '/api/usage/series',
    tag: 'usage',
    summary: 'tokens and cost per time bucket, agent and model: `{ since, until, step_ms, buckets }`',
    query: queryOf(schemas.UsageSeriesQuerySchema, { range: 'a preset span (24h by default)', agent: 'one agent', since: 'start (epoch ms)', until: 'end (epoch ms)', step: 'bucket size (ms)' }),
    answer: json<UsageSeriesView>('the buckets'),
    errors: [400],
  },
  events: { method: 'get', path: '/api/events', tag: 'events', summary: "SSE of the kernel's events (spawn, kill, suspend, resume, approvals, package runs, turns, tool calls, refusals)", answer: other('sse', 'the events, as they happen') },
  audit: {
    method: 'get',
    path: '/api/audit',
    tag: 'events',
    summary: 'the audit log',
    // Validated by src/http/system-routes.ts's own schema (it takes the audit kinds from the kernel).
    query: {
      params: {
        agent: { description: 'one agent' },
        type: { description: 'event types, comma-separated' },
        kind: { description: 'turn, tool, refusal, approval, model-error, agent, forge, package, channel, schedule or reasoning' },
        outcome: { description: 'ok, refused, failed or cancelled' },
        order: { description: '`desc` lists newest first', schema: { type: 'string', enum: ['asc', 'desc'] } },
        before: { description: 'rows before this `seq` (paging back)' },
        after: { description: 'rows after this `seq`' },
        limit: { description: 'how many rows' },
      },
    },
    answer: json('the rows'),
    errors: [400],
  },
  approvals: { method: 'get', path: '/api/approvals', tag: 'approvals', summary: 'pending approvals (or all, by status)', query: queryOf(schemas.ApprovalsQuerySchema, { status: 'which' }), answer: json<ApprovalView[]>('the approvals', arrayOf()) },
  approve: { method: 'post', path: '/api/approvals/{id}/approve', tag: 'approvals', summary: 'approve a tool call, or answer a question with `answer` (owner)', params: { id: APPROVAL }, body: bodyOf('ApprovalDecision', schemas.ApprovalDecisionBodySchema, false), answer: json<ApprovalView>('the decided approval'), errors: [400, 403, 404, 409] },
  deny: { method: 'post', path: '/api/approvals/{id}/deny', tag: 'approvals', summary: 'deny a tool call (owner)', params: { id: APPROVAL }, body: bodyOf('ApprovalDecision', schemas.ApprovalDecisionBodySchema, false), answer: json<ApprovalView>('the decided approval'), errors: [400, 403, 404, 409] },
  forgedTools: { method: 'get', path: '/api/tools/forged', tag: 'forged tools', summary: 'forged tools', query: queryOf(schemas.ForgedToolsQuerySchema, { agent: "one agent's" }), answer: json<ForgedToolView[]>('the tools', arrayOf()) },
  forgeTool: { method: 'post', path: '/api/tools/forged', tag: 'forged tools', summary: 'forge a tool as an agent (owner); a refused forge is 422 `FORGE_REFUSED`', body: bodyOf('ForgeBody', schemas.ForgeBodySchema), answer: json<ForgedToolView>('the registered tool', undefined, 201), errors: [400, 403, 422] },
  importTool: { method: 'post', path: '/api/tools/forged/import', tag: 'forged tools', summary: 'import an exported tool into an agent: tested and judged again (owner)', body: bodyOf('ImportBody', schemas.ImportBodySchema), answer: json<ForgedToolView>('the registered tool', undefined, 201), errors: [400, 403, 422] },
  forgedTool: { method: 'get', path: '/api/tools/forged/{id}', tag: 'forged tools', summary: 'one forged tool', params: { id: { description: "the tool's id, or a unique start of it" } }, answer: json<ForgedToolView>('the tool'), errors: [404] },
  exportTool: { method: 'get', path: '/api/tools/forged/{id}/export', tag: 'forged tools', summary: 'the tool as `agentos.emergent-tool.v1` YAML', params: { id: TOOL }, answer: other<string>('yaml', 'the YAML document'), errors: [404] },
  promoteTool: { method: 'post', path: '/api/tools/forged/{id}/promote', tag: 'forged tools', summary: 'promote the tool one tier (owner)', params: { id: TOOL }, answer: json<PromotionView>('the tool'), errors: [403, 404] },
  demoteTool: { method: 'post', path: '/api/tools/forged/{id}/demote', tag: 'forged tools', summary: 'demote the tool one tier (owner)', params: { id: TOOL }, body: bodyOf('DemoteBody', schemas.DemoteBodySchema, false), answer: json<ForgedToolView>('the tool'), errors: [403, 404] },
  packages: { method: 'get', path: '/api/packages', tag: 'packages', summary: 'installed packages', answer: json<PackageView[]>('the packages', arrayOf()) },
  installPackage: { method: 'post', path: '/api/packages', tag: 'packages', summary: 'install a package (owner)', body: bodyOf('InstallBody', schemas.InstallBodySchema), answer: json<PackageView>('the installed package', undefined, 201), errors: [400, 403, 409] },
  checkPackage: { method: 'post', path: '/api/packages/check', tag: 'packages', summary: 'the plan an install would carry out, with its `digest` (owner)', body: bodyOf('InstallBody', schemas.InstallBodySchema), answer: json('the plan'), errors: [400, 403] },
  installSkill: { method: 'post', path: '/api/packages/skills', tag: 'packages', summary: 'install a skill by its install code, with the skills it depends on (owner)', body: bodyOf('SkillInstallBody', schemas.SkillInstallBodySchema), answer: json('the skills installed, dependencies first', arrayOf(), 201), errors: [400, 403] },
  packageRuns: { method: 'get', path: '/api/packages/runs', tag: 'packages', summary: 'recent runs, newest first', query: queryOf(schemas.PackageRunsQuerySchema, { package: 'one package', limit: '1–1000' }), answer: json<PackageRunView[]>('the runs') },
  package: { method: 'get', path: '/api/packages/{slug}', tag: 'packages', summary: 'one package: bindings, next fire times, capabilities', params: { slug: PACKAGE }, answer: json<PackageView>('the package'), errors: [404] },
  uninstallPackage: { method: 'delete', path: '/api/packages/{slug}', tag: 'packages', summary: 'uninstall it (owner)', params: { slug: PACKAGE }, answer: json<{ slug: string; agent_id: string }>('the uninstalled package'), errors: [403, 404] },
  runsOfPackage: { method: 'get', path: '/api/packages/{slug}/runs', tag: 'packages', summary: "the package's runs", params: { slug: PACKAGE }, query: queryOf(schemas.RunsOfPackageQuerySchema, { limit: '1–1000' }), answer: json<PackageRunView[]>('the runs'), errors: [404] },
  runBinding: { method: 'post', path: '/api/packages/{slug}/bindings/{binding}/run', tag: 'packages', summary: 'run a binding now', params: { slug: PACKAGE, binding: { description: 'the binding' } }, body: bodyOf('RunBody', schemas.RunBodySchema, false), answer: json<PackageRunView>('the run'), errors: [400, 403, 404] },
  channels: { method: 'get', path: '/api/channels', tag: 'channels', summary: 'channels and their pairings (owner)', answer: json<ChannelView[]>('the channels'), errors: [403] },
  approvePairing: { method: 'post', path: '/api/channels/pairings/{code}/approve', tag: 'channels', summary: 'approve a pairing code (owner)', params: { code: { description: 'the code the person was given' } }, answer: json<PairingView>('the pairing'), errors: [403, 404] },
  hook: { method: 'post', path: '/hooks/{channel}', tag: 'channels', summary: "an inbound message of a signed webhook or Slack's Events API (no key: the platform's signature authenticates)", public: true, params: { channel: { description: "the channel's name" } }, body: OBJECT, answer: json('accepted'), errors: [401, 404] },
  mcpServers: { method: 'get', path: '/api/mcp/servers', tag: 'mcp', summary: 'the MCP servers, their state, tools and negotiated protocol', answer: json<{ configured: McpServerView[]; connected: McpServerView[]; total_configured: number; total_connected: number }>('the servers: `{ configured, connected, total_configured, total_connected }`', { type: 'object', properties: { configured: arrayOf(), connected: arrayOf(), total_configured: { type: 'integer' }, total_connected: { type: 'integer' } } }), errors: [403] },
  reconnectMcpServer: { method: 'post', path: '/api/mcp/servers/{name}/reconnect', tag: 'mcp', summary: 'connect that MCP server again now (owner; 204)', params: { name: { description: "the server's name" } }, answer: other<undefined>('none', 'reconnecting', 204), errors: [403, 404, 409] },
  mcp: { method: 'post', path: '/mcp', tag: 'mcp', summary: 'MCP over Streamable HTTP: the agents as tools, their sessions and last turns as resources', body: { json: { type: 'object', description: 'a JSON-RPC message' }, required: true }, answer: json('a JSON-RPC answer, or an SSE stream') },
  mcpStream: { method: 'get', path: '/mcp', tag: 'mcp', summary: "the session's stream (2025 revisions)", answer: other('sse', 'server messages') },
  mcpEnd: { method: 'delete', path: '/mcp', tag: 'mcp', summary: 'end the session (2025 revisions)', answer: other('none', 'ended') },
  mcpSse: { method: 'get', path: '/mcp/sse', tag: 'mcp', summary: 'MCP over HTTP+SSE (2024-11-05): the stream', answer: other('sse', 'server messages') },
  mcpMessages: { method: 'post', path: '/mcp/messages', tag: 'mcp', summary: 'MCP over HTTP+SSE (2024-11-05): a client message', query: { params: { sessionId: { description: "the stream's session" } } }, body: OBJECT, answer: other('none', 'accepted', 202) },
  externalAgents: { method: 'get', path: '/api/a2a/external', tag: 'a2a', summary: 'the external A2A agents and their cards', answer: json('the agents: `{ agents, total }`', { type: 'object', properties: { agents: arrayOf(), total: { type: 'integer' } } }), errors: [403] },
  agentCard: { method: 'get', path: '/.well-known/agent-card.json', tag: 'a2a', summary: "the default agent's A2A card (`[a2a].default_agent`, else the first agent)", public: true, answer: json('the card'), errors: [404] },
  agentCardOld: { method: 'get', path: '/.well-known/agent.json', tag: 'a2a', summary: "the default agent's card at its older address", public: true, answer: json('the card'), errors: [404] },
  a2aCards: { method: 'get', path: '/a2a/agents', tag: 'a2a', summary: 'the cards the caller may see', public: true, answer: json('the cards', arrayOf()) },
  a2aCard: { method: 'get', path: '/a2a/{agent}/.well-known/agent-card.json', tag: 'a2a', summary: "an agent's card (1.0 with `A2A-Version: 1.0`, 0.3 with `0.3`, both read by both without it)", public: true, params: { agent: AGENT }, answer: json('the card'), errors: [404] },
  a2aRpc: { method: 'post', path: '/a2a/{agent}', tag: 'a2a', summary: 'A2A JSON-RPC: 1.0 with `A2A-Version: 1.0` (`SendMessage`, …), else 0.3 (`message/send`, …)', params: { agent: AGENT }, body: JSON_RPC, answer: json('a JSON-RPC answer, or an SSE stream'), errors: [404] },
  a2aRestSend: { method: 'post', path: '/a2a/{agent}/rest/message:send', tag: 'a2a', summary: 'A2A 1.0 HTTP+JSON: send a message', params: { agent: AGENT }, body: { json: { type: 'object' }, required: true, media: 'a2a' }, answer: json('the task or message'), errors: [404, 415] },
  a2aRestTasks: { method: 'get', path: '/a2a/{agent}/rest/tasks', tag: 'a2a', summary: "A2A 1.0 HTTP+JSON: the caller's tasks", params: { agent: AGENT }, answer: json('the tasks'), errors: [404] },
  a2aV1Send: { method: 'post', path: '/a2a/{agent}/v1/message:send', tag: 'a2a', summary: 'A2A 0.3 HTTP+JSON: send a message', params: { agent: AGENT }, body: OBJECT, answer: json('the task or message'), errors: [404, 415] },
  a2aTaskSend: { method: 'post', path: '/a2a/tasks/send', tag: 'a2a', summary: 'the older task endpoint: send a task to the default agent', body: OBJECT, answer: json('the task') },
  a2aTask: { method: 'get', path: '/a2a/tasks/{id}', tag: 'a2a', summary: 'the older task endpoint: a task', params: { id: { description: "the task's id" } }, answer: json('the task'), errors: [404] },
  a2aTaskCancel: { method: 'post', path: '/a2a/tasks/{id}/cancel', tag: 'a2a', summary: 'the older task endpoint: cancel a task', params: { id: { description: "the task's id" } }, answer: json('the task'), errors: [404] },
  openAiModels: { method: 'get', path: '/v1/models', tag: 'openai', summary: 'OpenAI-compatible: the agents as models', answer: json('the models') },
  chatCompletions: { method: 'post', path: '/v1/chat/completions', tag: 'openai', summary: 'OpenAI-compatible: `model` names an agent; `stream: true` streams chunks', headers: ['Idempotency-Key'], body: { name: 'ChatCompletionRequest', required: true }, answer: other('json-or-sse', 'a chat completion, or chunks as SSE') },
} satisfies Record<string, ApiRoute>;

/** The name of a route of {@link API}. */
export type RouteName = keyof typeof API;
