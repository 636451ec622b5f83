/**
 * Loom's MCP client as the official conformance suite's client under test:
 * `node test/mcp/conformance-client.ts <server-url>`, with the scenario in
 * `MCP_CONFORMANCE_SCENARIO` (set by `conformance client --command …`, which appends the URL).
 *
 * It does what an agent's use of an `[[mcp_servers]]` entry does, through Loom's own code and
 * nothing else: `createMcpClientManager` connects (era negotiated as the daemon does), the tools
 * become agent tools, and each one is called the way the tool runner calls it (arguments checked
 * against the server's JSON Schema as written, then `execute`). Arguments are made from each
 * tool's schema (defaults, constants, enums, then a value of the type), as a model would fill
 * them; in `json-schema-2020-12-preservation` the echo tool is given, as the scenario asks, the
 * schema Loom would offer the model for the other tool. A server's question during a call
 * (elicitation) is answered by a stand-in person who accepts the form without changing a field.
 * In `auth/*` scenarios the entry gets `[mcp_servers.oauth]` (authorization code; the scenario's
 * pre-registered client where it gives one) and `loginMcpServer` runs first, as `loom mcp login`
 * does (through the same address guard, the entry allowing private addresses since the suite's
 * servers are on localhost), with the person's browser played by a fetch that follows the
 * authorization server's redirect to Loom's loopback listener. When the daemon's side then
 * reports that a person must log in (`McpLoginRequiredError`: a step-up to a wider scope, a new
 * authorization server), the person does what the message says: runs the login again, once, and
 * the calls are made again on a fresh manager.
 * Exits 0 when every step worked, 1 otherwise; logs go to stderr.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSystemClock } from '../../src/clock/index.ts';
import type { JsonObject, PersonAnswer, PersonQuestion, Tool, ToolContext, ToolResult } from '../../src/contracts/index.ts';
import { createLogger } from '../../src/logging/index.ts';
import { createMcpClientManager, loginMcpServer, type McpServerEntry } from '../../src/mcp/client/index.ts';
import { checkToolInput } from '../../src/runtime/index.ts';
import { formatMcpToolName } from '../../src/tools/index.ts';
import { waitFor } from '../support/wait-for.ts';

/** How long the client waits for the connection (the manager retries a failed attempt, in the same era, with backoff). */
const CONNECT_TIMEOUT_MS = 25_000;
/** How long one tool call may take. */
const CALL_TIMEOUT_SECS = 10;
const SERVER_NAME = 'conformance';
/** How many times the stand-in person logs in again when the daemon's side says a login is needed. */
const MAX_LOGINS_AGAIN = 1;
/** What an `McpLoginRequiredError` says, as a connection's error or a call's failure. */
const LOGIN_REQUIRED = /needs a login: .*run "loom mcp login /;

const log = (message: string, details: Record<string, unknown> = {}): void => {
  process.stderr.write(`${JSON.stringify({ message, ...details })}\n`);
};

/** A value for `schema`, as a model filling the tool's arguments would give: the schema's own hints first. */
export function exampleValue(schema: unknown, depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null || depth > 8) return 'conformance';
  const node = schema as Record<string, unknown>;
  if ('default' in node) return node['default'];
  if ('const' in node) return node['const'];
  if (Array.isArray(node['enum']) && node['enum'].length > 0) return node['enum'][0];
  if (Array.isArray(node['examples']) && node['examples'].length > 0) return node['examples'][0];
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const options = node[key];
    if (Array.isArray(options) && options.length > 0) return exampleValue(options[0], depth + 1);
  }
  const type = Array.isArray(node['type']) ? (node['type'] as unknown[])[0] : node['type'];
  switch (type) {
    case 'number':
    case 'integer':
      return typeof node['minimum'] === 'number' ? node['minimum'] : 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'null':
      return null;
    case 'object':
      return exampleObject(node, depth + 1);
    default:
      return node['properties'] !== undefined ? exampleObject(node, depth + 1) : 'conformance';
  }
}

function exampleObject(schema: Record<string, unknown>, depth: number): JsonObject {
  const properties = (schema['properties'] ?? {}) as Record<string, unknown>;
  const required = Array.isArray(schema['required']) ? (schema['required'] as string[]) : Object.keys(properties);
  const result: Record<string, unknown> = {};
  for (const name of required) result[name] = exampleValue(properties[name], depth);
  return result as JsonObject;
}

/** A stand-in person: accepts the form as shown, touching no field (so defaults are the client's to apply). */
function askPerson(question: PersonQuestion): Promise<PersonAnswer> {
  log('answering an elicitation: accepted with no field changed', { from: question.from, schema: question.schema });
  return Promise.resolve({ action: 'accept', content: {} });
}

async function callTool(tool: Tool<never>, input: unknown): Promise<ToolResult> {
  const checked = checkToolInput(tool, input);
  if (!checked.ok) throw new Error(`the arguments made for "${tool.name}" fail its schema: ${checked.problems}`);
  const context = {
    signal: AbortSignal.timeout(CALL_TIMEOUT_SECS * 1000),
    agent: { name: 'conformance-agent', workspace: process.cwd() },
    askPerson,
  } as unknown as ToolContext;
  return tool.execute(checked.input as never, context);
}

/** The arguments a model would be asked to fill for `tool`: made from the schema Loom offers it. */
function argumentsFor(tool: Tool<never>, tools: readonly Tool<never>[], scenario: string): unknown {
  // The scenario asks the client to hand back, verbatim, the schema it holds for its focal tool.
  if (scenario === 'json-schema-2020-12-preservation' && tool.name.endsWith('_json_schema_echo')) {
    const focal = tools.find((candidate) => candidate.name.endsWith('_json_schema_2020_12_tool'));
    return { schema: focal?.jsonSchema ?? {} };
  }
  return tool.jsonSchema === undefined ? {} : exampleValue({ type: 'object', ...tool.jsonSchema });
}

/** What the scenario tells the client (`MCP_CONFORMANCE_CONTEXT`): calls to make, credentials of a registered client. */
function scenarioContext(): Record<string, unknown> {
  const raw = process.env['MCP_CONFORMANCE_CONTEXT'];
  if (raw === undefined) return {};
  try {
    const context: unknown = JSON.parse(raw);
    return typeof context === 'object' && context !== null ? (context as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The calls the scenario asks for, if it names any. */
function scenarioToolCalls(): { name: string; arguments: unknown }[] | undefined {
  const calls = scenarioContext()['toolCalls'] as { name: string; arguments?: unknown }[] | undefined;
  return calls?.map((call) => ({ name: call.name, arguments: call.arguments ?? {} }));
}

/** Waits for the connection; gives up at once on a refusal for want of credentials (Loom is given none here). */
async function connected(manager: ReturnType<typeof createMcpClientManager>): Promise<{ ok: boolean; error?: string | undefined }> {
  const settled = (): { ok: boolean; error?: string | undefined } | undefined => {
    const status = manager.servers()[0];
    if (status?.status === 'connected') return { ok: true };
    if (status?.status === 'failed' && /\b401\b|unauthori[sz]ed|login/i.test(status.error ?? '')) return { ok: false, error: status.error };
    return undefined;
  };
  return waitFor('the connection', settled, { ms: CONNECT_TIMEOUT_MS }).catch(() => {
    const status = manager.servers()[0];
    return { ok: false, error: status?.error ?? `still ${status?.status}` };
  });
}

async function main(): Promise<number> {
  const url = process.argv[2];
  const scenario = process.env['MCP_CONFORMANCE_SCENARIO'] ?? '(none)';
  if (url === undefined) {
    log('usage: node test/mcp/conformance-client.ts <server-url>');
    return 2;
  }
  const entry: McpServerEntry = {
    name: SERVER_NAME,
    timeout_secs: CALL_TIMEOUT_SECS,
    env: [],
    allow_private_network: true,
    transport: { type: 'http', url, headers: {} },
  };
  const oauthDir = scenario.startsWith('auth/') ? await mkdtemp(join(tmpdir(), 'loom-conformance-oauth-')) : undefined;
  try {
    return await run(scenario, entry, oauthDir);
  } finally {
    if (oauthDir !== undefined) await rm(oauthDir, { recursive: true, force: true });
  }
}

/** `loom mcp login`, with the person's browser played here: the suite's authorization server answers the authorization address at once with a redirect to Loom's loopback listener. */
async function logIn(scenario: string, entry: McpServerEntry, oauthDir: string, env: Record<string, string>): Promise<boolean> {
  const login = loginMcpServer(entry, {
    dir: oauthDir,
    env,
    showAuthorizationUrl: (authorization) => {
      void (async () => {
        const answer = await fetch(authorization, { redirect: 'manual' });
        const location = answer.headers.get('location');
        if (location !== null) await fetch(new URL(location, authorization));
      })().catch((error: unknown) => log('the stand-in browser failed', { error: String(error) }));
    },
    timeoutMs: CONNECT_TIMEOUT_MS,
  });
  const refused = await login.then(
    () => undefined,
    (error: unknown) => (error instanceof Error ? error.message : String(error)),
  );
  if (refused !== undefined) log('the login failed', { scenario, error: refused });
  return refused === undefined;
}

/** Logs in where the scenario is about OAuth, connects, and makes the calls; logs in again when the daemon's side asks a person to. */
async function run(scenario: string, entry: McpServerEntry, oauthDir: string | undefined): Promise<number> {
  const env: Record<string, string> = {};
  if (oauthDir !== undefined) {
    // A pre-registered client, where the scenario gives one; otherwise Loom registers itself.
    const registered = scenarioContext();
    entry.oauth = { grant: 'authorization_code', ...(typeof registered['client_id'] === 'string' ? { client_id: registered['client_id'] } : {}) };
    if (typeof registered['client_secret'] === 'string') {
      env['CONFORMANCE_CLIENT_SECRET'] = registered['client_secret'];
      entry.oauth.client_secret_env = 'CONFORMANCE_CLIENT_SECRET';
    }
    if (!(await logIn(scenario, entry, oauthDir, env))) return 1;
  }
  for (let again = 0; ; again += 1) {
    const outcome = await connectAndCall(scenario, entry, env, oauthDir);
    if (outcome.loginNeeded === undefined || oauthDir === undefined || again >= MAX_LOGINS_AGAIN) return outcome.code;
    log("the daemon's side asks for a login; the person runs it", { scenario, reason: outcome.loginNeeded });
    if (!(await logIn(scenario, entry, oauthDir, env))) return 1;
  }
}

/** One manager's life: connects and makes the calls. `loginNeeded` is set when it stopped for want of a login. */
async function connectAndCall(
  scenario: string,
  entry: McpServerEntry,
  env: Record<string, string>,
  oauthDir: string | undefined,
): Promise<{ code: number; loginNeeded?: string }> {
  const manager = createMcpClientManager({
    servers: [entry],
    env,
    logger: createLogger({ level: process.env['LOOM_CONFORMANCE_LOG'] === 'debug' ? 'debug' : 'warn', fd: 2, format: 'json' }),
    clock: createSystemClock(),
    oauthDir,
  });
  manager.start();
  try {
    const connection = await connected(manager);
    if (!connection.ok) {
      log('could not connect', { scenario, error: connection.error });
      return LOGIN_REQUIRED.test(connection.error ?? '') ? { code: 1, loginNeeded: connection.error ?? '' } : { code: 1 };
    }
    const tools = manager.tools();
    log('connected', { scenario, tools: tools.map((tool) => ({ name: tool.name, schema: tool.jsonSchema })) });
    // A scenario may say which calls to make (as a model would choose them); otherwise every tool is called once.
    const asked = scenarioToolCalls();
    const calls =
      asked === undefined
        ? tools.map((tool) => ({ tool, input: argumentsFor(tool, tools, scenario) }))
        : asked.map((call) => ({ tool: tools.find((candidate) => candidate.name === formatMcpToolName(SERVER_NAME, call.name)), input: call.arguments }));
    let failed = false;
    for (const { tool, input } of calls) {
      if (tool === undefined) {
        log('the scenario asks for a tool the server did not list');
        failed = true;
        continue;
      }
      const result = await callTool(tool, input).catch((error: unknown) => ({ text: error instanceof Error ? error.message : String(error), isError: true }));
      log('called', { tool: tool.name, isError: result.isError === true, text: result.text.slice(0, 500) });
      if (result.isError === true && LOGIN_REQUIRED.test(result.text)) return { code: 1, loginNeeded: result.text };
      // A tool error is the server's answer (some scenarios ask for one); a call that could not be made is ours.
      if (result.isError === true && /^MCP tool ".*" (failed|was cancelled)|fail its schema/.test(result.text)) failed = true;
    }
    return { code: failed ? 1 : 0 };
  } finally {
    await manager.stop();
  }
}

process.exitCode = await main();
