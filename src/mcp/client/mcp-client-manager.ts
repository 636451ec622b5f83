/**
 * Connects Loom to the MCP servers of `[[mcp_servers]]` (spec/05, Part 1) and offers their tools
 * to agents as `mcp_{server}_{tool}`. Every server lives on its own: it connects in the
 * background, and when it fails to start, crashes or times out it is retried with exponential
 * backoff on the injected clock (1 s doubling to 60 s) without touching the others. An sse/http
 * server's host is resolved and checked at every connection attempt, and the connection is
 * pinned to the addresses that passed (see pinned-fetch.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { pathToFileURL } from 'node:url';
import {
  Client,
  type ClientCapabilities,
  type OAuthClientProvider,
  SdkError,
  SdkErrorCode,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type Tool as McpTool,
  type Transport,
} from '@modelcontextprotocol/client';
import { z } from 'zod';
import type { Clock, JsonObject, Logger, Tool, ToolContext, ToolResult } from '../../contracts/index.ts';
import { messageOf } from '../../errors/index.ts';
import { boundedSchemaValidator, measureJsonSchema, SchemaRefusedError } from '../../validation/index.ts';
import type { HostResolver } from '../../tools/index.ts';
import { ClearedEnvStdioTransport } from './cleared-env-stdio-transport.ts';
import { McpServerRefusedError } from './mcp-server-refused-error.ts';
import { McpLoginRequiredError, mcpOAuthProvider } from './mcp-oauth.ts';
import { createPinnedFetch, withCheckedOtherHosts } from './pinned-fetch.ts';
import {
  checkStdioCommand,
  expandHeaders,
  MAX_MCP_MESSAGE_BYTES,
  type McpFetch,
  type McpServerEntry,
  sizeLimitedFetch,
  stdioEnvironment,
  type VetMcpUrlOptions,
  vetMcpUrl,
} from './security.ts';
import { formatMcpToolName } from '../../tools/index.ts';
import { tracedFetch, withMcpClientSpan } from '../mcp-spans.ts';

/** The first retry delay after a failure, in milliseconds; it doubles up to {@link MCP_RETRY_MAX_MS}. */
export const MCP_RETRY_BASE_MS = 1_000;
/** The longest wait between two connection attempts, in milliseconds. */
export const MCP_RETRY_MAX_MS = 60_000;
/**
 * How long the first `server/discover` probe of a connection waits for its answer, in
 * milliseconds. A probe that times out is sent again (on a new connection) with twice the wait,
 * after a short backoff, until the entry's `timeout_secs` is spent: silence is no evidence of an
 * older server, so it never selects the 2025 handshake.
 */
export const MCP_PROBE_FIRST_TIMEOUT_MS = 5_000;
/** The first wait before a probe is sent again after a timeout, in milliseconds; it doubles. */
export const MCP_PROBE_RETRY_BASE_MS = 250;

/**
 * The protocol era of a connection: `modern` is the 2026-07-28 revision and later (negotiated
 * with `server/discover`), `legacy` the 2025 revisions' `initialize` handshake.
 */
export type McpProtocolEra = 'modern' | 'legacy';

/** What a person must do before a server can connect: log in (`loom mcp login <server>`). */
export interface McpPendingAction {
  kind: 'login';
  /** The exact command that does it. */
  command: string;
  /** Why the server needs it. */
  reason: string;
}

/** What the manager is built from. */
export interface McpClientManagerOptions {
  servers: readonly McpServerEntry[];
  /** The daemon's environment: PATH and the listed variables for stdio servers, `${NAME}` in headers. */
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
  /** Times the retry backoff. */
  clock: Clock;
  /**
   * Resolves the host names of sse/http servers (the system resolver by default). Each connection
   * attempt resolves once and connects only to the addresses that passed the check.
   */
  resolve?: HostResolver | undefined;
  /** Where the OAuth sessions of `oauth` servers are kept (`LOOM_HOME/mcp-oauth`); without it such servers fail to connect. */
  oauthDir?: string | undefined;
}

/** One server as `GET /api/mcp/servers` and `loom mcp servers` show it. */
export interface McpServerStatus {
  name: string;
  transport: McpServerEntry['transport']['type'];
  status: 'connecting' | 'connected' | 'failed';
  /** Why the last attempt failed (or the connection was lost); absent while connected. */
  error?: string;
  /** The server's tools, namespaced (`mcp_{server}_{tool}`); empty unless connected. */
  tools: { name: string; description: string }[];
  /**
   * The server's tools left out of agents' tools, namespaced, each with why: a schema whose
   * checks Loom cannot bound (`inputSchema at "/…": …`). Absent when none, or not connected.
   */
  refusedTools?: { name: string; reason: string }[];
  /** The era of the connection, or of the last one that worked while reconnecting; absent before any. */
  era?: McpProtocolEra;
  /** The protocol revision negotiated with it (e.g. `2026-07-28`, `2025-11-25`), as `era`. */
  protocolVersion?: string;
  /** Why the legacy era was chosen (the server's answer that showed an older server); absent in the modern era. */
  eraReason?: string;
  /** What a person must do before the server can connect; absent when nothing. */
  action?: McpPendingAction;
}

/** The MCP servers Loom is a client of. */
export interface McpClientManager {
  /** Connects every server in the background; returns at once and never throws. Idempotent. */
  start(): void;
  /** Closes every connection, kills stdio children and stops retries. */
  stop(): Promise<void>;
  /** The tools of every connected server, as agent tools. */
  tools(): Tool<never>[];
  /** Every configured server with its state and tools. */
  servers(): McpServerStatus[];
  /**
   * Connects `server` again now (after `loom mcp login`, say): a server waiting to retry tries at
   * once, a connected one is closed and connected again. False for a name that is not configured.
   */
  reconnect(server: string): boolean;
}

interface ServerState {
  entry: McpServerEntry;
  /** The calls in flight on this server: what a request from the server (elicitation, roots, sampling) is asked for. */
  calls: Set<ToolContext>;
  status: McpServerStatus['status'];
  error?: string;
  client?: Client;
  tools: Tool<never>[];
  /** The listed tools left out, and why (see McpServerStatus.refusedTools). */
  refusedTools: { name: string; reason: string }[];
  /** The era and revision of the last connection that worked (kept while reconnecting). */
  era?: McpProtocolEra;
  protocolVersion?: string;
  eraReason?: string;
  /**
   * Set when the last attempt gave evidence of a 2025-era server that the SDK could not act on in
   * place (a stdio child that exited on the probe): the next attempt runs the 2025 handshake.
   * Cleared once used, so every reconnection probes for the newer era again.
   */
  legacyEvidence?: string;
  action?: McpPendingAction;
  /** Aborts the wait before the next attempt (`reconnect()`). */
  wake?: AbortController;
  /** Closes the connection being made now (`reconnect()`). */
  closeAttempt?: () => void;
  /** Set once the server's loop has ended for good (the server was refused): nothing reconnects it. */
  ended?: boolean;
  /** Set by `reconnect()` on a connection it closed: the next attempt starts without the backoff. */
  reconnectNow?: boolean;
}

/** What types an MCP tool's input; its JSON Schema, passed on unchanged, is what checks it. */
const ANY_OBJECT = z.record(z.string(), z.unknown());

/** An MCP tool's JSON Schema as the server wrote it (`$defs`, `$ref`, `anyOf`… kept). */
function jsonSchemaOf(tool: McpTool): JsonObject {
  return tool.inputSchema as unknown as JsonObject;
}

/** Why Loom will not check values against one of `tool`'s schemas (`inputSchema at "/…": …`), or undefined. */
function schemaRefusal(tool: McpTool): string | undefined {
  for (const [field, schema] of [
    ['inputSchema', tool.inputSchema],
    ['outputSchema', tool.outputSchema],
  ] as const) {
    if (schema === undefined) continue;
    try {
      measureJsonSchema(schema, { dialect: '2020-12' });
    } catch (error) {
      if (error instanceof SchemaRefusedError) return `${field} ${error.message}`;
      throw error;
    }
  }
  return undefined;
}

/** The error and its causes, outermost first. */
function causesOf(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let cause = error; cause !== undefined && chain.length < 8; cause = cause instanceof Error ? cause.cause : undefined) chain.push(cause);
  return chain;
}

/** Whether the SDK gave up waiting for an answer: no evidence of anything about the server's era. */
function isTimeout(error: unknown): boolean {
  return causesOf(error).some((cause) => cause instanceof SdkError && cause.code === SdkErrorCode.RequestTimeout);
}

/** Whether era negotiation failed without a verdict (the SDK's typed connect error). */
function isEraNegotiationFailure(error: unknown): boolean {
  return causesOf(error).some((cause) => cause instanceof SdkError && cause.code === SdkErrorCode.EraNegotiationFailed);
}

/** A `server/discover` probe that got no answer in its time: no evidence of the server's era. */
class ProbeTimeoutError extends Error {
  /** How long the attempt took, in milliseconds. */
  readonly tookMs: number;

  constructor(tookMs: number, cause: unknown) {
    super(messageOf(cause), { cause });
    this.name = 'ProbeTimeoutError';
    this.tookMs = tookMs;
  }
}

/** The pending action of a connection or a call that failed because a person must log in first, if that is why. */
function loginActionOf(error: unknown): McpPendingAction | undefined {
  const login = causesOf(error).find((cause): cause is McpLoginRequiredError => cause instanceof McpLoginRequiredError);
  return login === undefined ? undefined : { kind: 'login', command: login.command, reason: login.reason };
}

/** The text of a result's content: text parts joined, other parts named. */
function textOf(content: readonly { type: string; text?: unknown; uri?: unknown; mimeType?: unknown; resource?: unknown }[]): string {
  return content
    .map((part) => {
      if (part.type === 'text' && typeof part.text === 'string') return part.text;
      if (part.type === 'resource_link' && typeof part.uri === 'string') return `[resource ${part.uri}]`;
      if (part.type === 'resource') {
        const resource = part.resource as { uri?: unknown; text?: unknown } | undefined;
        if (typeof resource?.text === 'string') return resource.text;
        return `[resource ${String(resource?.uri)}]`;
      }
      return `[${part.type}${typeof part.mimeType === 'string' ? ` ${part.mimeType}` : ''}]`;
    })
    .join('\n');
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An accepted form's fields, each one left out filled with the schema's `default` where it has one (SEP-1034). */
function withDefaults(schema: JsonObject, content: JsonObject): JsonObject {
  const properties = schema['properties'];
  if (!isJsonObject(properties)) return content;
  const filled: JsonObject = { ...content };
  for (const [key, property] of Object.entries(properties)) {
    if (filled[key] !== undefined || !isJsonObject(property)) continue;
    const fallback = property['default'];
    if (fallback !== undefined) filled[key] = fallback;
  }
  return filled;
}

/** What Loom offers a server: form elicitation and roots always, sampling where the entry allows it. */
function capabilitiesOf(entry: McpServerEntry): ClientCapabilities {
  return { elicitation: { form: {} }, roots: {}, ...(entry.sampling === true ? { sampling: {} } : {}) };
}

/** Builds the manager; nothing connects before `start()`. */
export function createMcpClientManager(options: McpClientManagerOptions): McpClientManager {
  const { clock, env } = options;
  const logger = options.logger.child({ component: 'mcp-client' });
  const states = options.servers.map((entry): ServerState => ({ entry, calls: new Set(), status: 'connecting', tools: [], refusedTools: [] }));
  // The call a server's request belongs to: carried through the SDK's own work for the call (a
  // 2026-07-28 input_required round, a 2025-era request on the call's HTTP stream). A stdio
  // server's request arrives on its own stream: then it is the server's one call in flight.
  const currentCall = new AsyncLocalStorage<ToolContext>();
  const callOf = (state: ServerState): ToolContext | undefined => currentCall.getStore() ?? (state.calls.size === 1 ? [...state.calls][0] : undefined);
  const stopping = new AbortController();
  const loops: Promise<void>[] = [];
  let started = false;

  function toolOf(state: ServerState, client: Client, tool: McpTool): Tool<never> {
    const server = state.entry.name;
    const name = formatMcpToolName(server, tool.name);
    const timeout = state.entry.timeout_secs * 1000;
    const mcpTool: Tool<Record<string, unknown>> = {
      name,
      description: `[MCP:${server}] ${tool.description ?? tool.title ?? tool.name}`,
      mcpServer: server,
      // Run again on a resumed turn only when its server says that is safe (decision 0045).
      idempotent: tool.annotations?.idempotentHint === true || tool.annotations?.readOnlyHint === true,
      inputSchema: ANY_OBJECT,
      jsonSchema: jsonSchemaOf(tool),
      requires: () => [],
      async execute(input, context): Promise<ToolResult> {
        if (state.client !== client) {
          return {
            text: `MCP server "${server}" is not connected (${state.status}${state.error === undefined ? '' : `: ${state.error}`}); try again later`,
            isError: true,
          };
        }
        state.calls.add(context);
        try {
          const result = await currentCall.run(context, () =>
            withMcpClientSpan({ tool: tool.name, server, transport: state.entry.transport.type === 'stdio' ? 'pipe' : 'tcp' }, (_meta) =>
              client.callTool(
                { name: tool.name, arguments: input, ...(_meta === undefined ? {} : { _meta }) },
                {
                  signal: context.signal,
                  timeout,
                  onprogress: (progress) => {
                    logger.debug({ server, tool: tool.name, progress: progress.progress, total: progress.total }, 'MCP tool progress');
                  },
                },
              ),
            ),
          );
          const content = Array.isArray(result.content) ? (result.content as Parameters<typeof textOf>[0]) : [];
          const text = textOf(content);
          const structured = result.structuredContent;
          return {
            text: text === '' && structured !== undefined ? JSON.stringify(structured) : text,
            ...(isJsonObject(structured) ? { structured } : {}),
            ...(result.isError === true ? { isError: true } : {}),
          };
        } catch (error) {
          if (context.signal.aborted) return { text: `MCP tool "${name}" was cancelled`, isError: true };
          // A call refused for want of a login (a step-up to a wider scope) leaves the connection up
          // for what its tokens allow, and shows the login to run until the next connection.
          const action = loginActionOf(error);
          if (action !== undefined) {
            state.action = action;
            logger.warn({ server, tool: tool.name, action: action.command, reason: action.reason }, 'MCP tool call needs a login');
          }
          return { text: `MCP tool "${name}" failed: ${messageOf(error)}`, isError: true };
        } finally {
          state.calls.delete(context);
        }
      },
    };
    return mcpTool as unknown as Tool<never>;
  }

  /**
   * Offers the server's listed tools, but those with a schema Loom refuses (`measureJsonSchema`):
   * its `inputSchema` checks every call's input, its `outputSchema` every structured result (in
   * the SDK, through `boundedSchemaValidator`), and a schema whose checks cannot be bounded would
   * stall the daemon. Each is logged and shown in the server's status; the others work.
   */
  function setTools(state: ServerState, client: Client, tools: readonly McpTool[]): void {
    const offered: Tool<never>[] = [];
    const refused: { name: string; reason: string }[] = [];
    for (const tool of tools) {
      const reason = schemaRefusal(tool);
      if (reason === undefined) {
        offered.push(toolOf(state, client, tool));
        continue;
      }
      refused.push({ name: formatMcpToolName(state.entry.name, tool.name), reason });
      logger.warn({ server: state.entry.name, tool: tool.name, reason }, 'MCP tool left out: Loom refuses its schema');
    }
    state.tools = offered;
    state.refusedTools = refused;
  }

  /**
   * What Loom answers when the server asks during a call: a form elicitation becomes a question to
   * a person through the approvals (declined where nobody can be asked, or the call cannot be
   * told); roots are the calling agent's workspace; sampling, only where `sampling = true`, runs
   * on the calling agent's model under its quota.
   */
  function answerServerRequests(state: ServerState, created: Client): void {
    const from = formatMcpToolName(state.entry.name, 'elicitation');
    created.setRequestHandler('elicitation/create', async (request, context) => {
      const call = callOf(state);
      const params = request.params as { mode?: string; message: string; requestedSchema?: unknown };
      if (params.mode === 'url' || params.requestedSchema === undefined) {
        logger.info({ server: state.entry.name }, 'declined a URL elicitation: Loom asks people only for form fields');
        return { action: 'decline' as const };
      }
      if (call?.askPerson === undefined) {
        logger.warn({ server: state.entry.name, calls: state.calls.size }, 'declined an elicitation: no single call of an agent to ask it for');
        return { action: 'decline' as const };
      }
      const schema = params.requestedSchema as JsonObject;
      // The server may take its question back (a cancellation, its own time limit): the question closes then.
      const answer = await call.askPerson({ from, message: params.message, schema, signal: context.mcpReq.signal });
      if (answer.action !== 'accept') return { action: answer.action };
      return { action: 'accept' as const, content: withDefaults(schema, answer.content) as Record<string, string | number | boolean | string[]> };
    });
    created.setRequestHandler('roots/list', () => {
      const call = callOf(state);
      return Promise.resolve({ roots: call === undefined ? [] : [{ uri: pathToFileURL(call.agent.workspace).href, name: `${call.agent.name}'s workspace` }] });
    });
    if (state.entry.sampling !== true) return;
    created.setRequestHandler('sampling/createMessage', async (request) => {
      const call = callOf(state);
      if (call === undefined) throw new Error("Loom cannot tell which agent's call this sampling request serves; it runs only during one call");
      const { messages, systemPrompt } = request.params;
      const lines = messages.map((message) => {
        const parts = Array.isArray(message.content) ? message.content : [message.content];
        return `${message.role}: ${parts.map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join(' ')}`;
      });
      const prompt = [...(systemPrompt === undefined ? [] : [systemPrompt]), ...lines].join('\n\n');
      const text = await call.kernel.generateText(call.agent, prompt, { signal: call.signal });
      return { role: 'assistant' as const, content: { type: 'text' as const, text }, model: 'loom-agent-model' };
    });
  }

  /**
   * A remote server's URL, checked, and the fetch its transport uses: pinned to the addresses that
   * passed, other hosts (an OAuth authorization server) checked the same way, messages size-limited.
   */
  async function remoteFetch(
    entry: McpServerEntry,
    text: string,
    vet: VetMcpUrlOptions,
    unreachable: (error: Error) => void,
  ): Promise<{ url: URL; fetch: McpFetch; release: () => void }> {
    const vetted = await vetMcpUrl(entry.name, text, entry.allow_private_network, vet);
    const pinned = createPinnedFetch(entry.name, vetted, { onUnreachable: unreachable });
    const fetch = tracedFetch(
      sizeLimitedFetch(MAX_MCP_MESSAGE_BYTES, withCheckedOtherHosts(entry.name, pinned.fetch, vetted.url, entry.allow_private_network, vet)),
    );
    return { url: vetted.url, fetch, release: pinned.close };
  }

  /** The OAuth provider of an `oauth` server (its session kept in `oauthDir`). */
  function authOf(entry: McpServerEntry): { authProvider?: OAuthClientProvider } {
    if (entry.oauth === undefined) return {};
    if (options.oauthDir === undefined) throw new McpServerRefusedError(`MCP server "${entry.name}" uses OAuth, but this process keeps no OAuth sessions`);
    const provider = mcpOAuthProvider(entry, { dir: options.oauthDir, env });
    return provider === undefined ? {} : { authProvider: provider };
  }

  /**
   * The transport of one connection attempt, and what to release when it ends (an HTTP connection
   * pool). `unreachable` is called when an sse/http server stops answering at the checked address.
   */
  async function transportFor(entry: McpServerEntry, unreachable: (error: Error) => void): Promise<{ transport: Transport; release: () => void }> {
    const { transport } = entry;
    const vet = { resolve: options.resolve, signal: stopping.signal };
    switch (transport.type) {
      case 'stdio':
        checkStdioCommand(entry.name, transport.command);
        return {
          transport: new ClearedEnvStdioTransport({
            command: transport.command,
            args: transport.args,
            env: stdioEnvironment(entry, env),
            maxMessageBytes: MAX_MCP_MESSAGE_BYTES,
          }),
          release: () => undefined,
        };
      case 'sse': {
        const { url, fetch, release } = await remoteFetch(entry, transport.url, vet, unreachable);
        return { transport: new SSEClientTransport(url, { fetch, ...authOf(entry) }), release };
      }
      case 'http': {
        const headers = expandHeaders(entry.name, transport.headers, env);
        const { url, fetch, release } = await remoteFetch(entry, transport.url, vet, unreachable);
        return { transport: new StreamableHTTPClientTransport(url, { fetch, requestInit: { headers }, ...authOf(entry) }), release };
      }
    }
  }

  /**
   * One connection: resolves when it is lost (or the manager stops); throws when it cannot be made.
   * The era is negotiated by the SDK (`server/discover` first, the 2025 `initialize` where the
   * server's answer shows an older server), with the probe waiting `probeTimeoutMs`; a server
   * whose last attempt gave evidence the SDK could not act on gets the 2025 handshake directly.
   */
  async function connectOnce(state: ServerState, probeTimeoutMs: number): Promise<void> {
    const { entry } = state;
    const timeout = entry.timeout_secs * 1000;
    // Legacy SSE is a 2024-11-05 transport: there is no newer era to probe for on it.
    const legacyReason = entry.transport.type === 'sse' ? 'the legacy SSE transport speaks only the 2025 revisions' : state.legacyEvidence;
    delete state.legacyEvidence;
    let lost!: () => void;
    const closed = new Promise<void>((resolve) => {
      lost = resolve;
    });
    let client: Client | undefined;
    const created = new Client(
      { name: 'loom', version: '0.1.0' },
      {
        capabilities: capabilitiesOf(entry),
        // The SDK checks structured results against their outputSchema through Loom's one compile point.
        jsonSchemaValidator: boundedSchemaValidator,
        ...(legacyReason !== undefined ? {} : { versionNegotiation: { mode: 'auto' as const, probe: { timeoutMs: probeTimeoutMs } } }),
        listChanged: {
          tools: {
            onChanged: (error, tools) => {
              if (client === undefined || state.client !== client) return;
              if (error !== null) {
                logger.warn({ server: entry.name, error: messageOf(error) }, 'MCP tool list refresh failed');
              } else if (tools !== null) {
                setTools(state, client, tools);
                logger.info({ server: entry.name, tools: tools.length }, 'MCP tool list changed');
              }
            },
          },
        },
      },
    );
    answerServerRequests(state, created);
    created.onclose = () => lost();
    created.onerror = (error) => logger.debug({ server: entry.name, error: messageOf(error) }, 'MCP transport error');
    // The connection is pinned to the addresses checked now; once made, one that stops answering
    // there is dropped, so the next attempt resolves the host and checks it again. (A connect that
    // fails reports its own error.)
    const { transport, release } = await transportFor(entry, (error) => {
      if (state.client !== created) return;
      logger.warn({ server: entry.name, error: messageOf(error) }, 'MCP server unreachable at its checked address; reconnecting');
      void created.close().catch(() => undefined);
    });
    // Whether the stdio child went away before the connection was made, unless Loom closed it: during
    // the probe, that is how a server built on an SDK that exits on any request before `initialize` answers it.
    let endedWhileConnecting = false;
    let closedByLoom = false;
    transport.onclose = () => {
      if (client === undefined && !closedByLoom) endedWhileConnecting = true;
    };
    // The request the connection waits on: a timeout of `server/discover` is the probe's own.
    let awaiting: string | undefined;
    const send = transport.send.bind(transport);
    transport.send = (message, sendOptions) => {
      if ('method' in message && 'id' in message) awaiting = message.method;
      return send(message, sendOptions);
    };
    // Closing the transport, not only the client, ends the probe too: the SDK's probe waits on the
    // raw transport before the client holds it, and would otherwise hold a stop for its whole wait.
    const closeAttempt = (): void => {
      closedByLoom = true;
      void created.close().catch(() => undefined);
      void transport.close().catch(() => undefined);
    };
    stopping.signal.addEventListener('abort', closeAttempt, { once: true });
    state.closeAttempt = closeAttempt;
    const startedAt = performance.now();
    try {
      await created.connect(transport, { timeout, signal: stopping.signal });
      const { tools } = await created.listTools(undefined, { timeout, signal: stopping.signal });
      client = created;
      state.client = created;
      setTools(state, created, tools);
      const era = created.getProtocolEra() ?? 'legacy';
      const protocolVersion = created.getNegotiatedProtocolVersion();
      if (state.era === 'modern' && era === 'legacy')
        logger.warn({ server: entry.name, protocolVersion }, 'MCP server answered as a 2025-era server, where its last connection was in the 2026-07-28 era');
      state.era = era;
      if (protocolVersion === undefined) delete state.protocolVersion;
      else state.protocolVersion = protocolVersion;
      if (era === 'modern') delete state.eraReason;
      else state.eraReason = legacyReason ?? 'the server answered the 2026-07-28 probe (server/discover) as a 2025-era server';
      state.status = 'connected';
      delete state.error;
      delete state.action;
      logger.info(
        { server: entry.name, transport: entry.transport.type, era, protocolVersion, tools: tools.length },
        `MCP server "${entry.name}" connected (${tools.length} tool${tools.length === 1 ? '' : 's'})`,
      );
      await closed;
    } catch (error) {
      await created.close().catch(() => undefined);
      if (legacyReason === undefined && entry.transport.type === 'stdio' && endedWhileConnecting && isEraNegotiationFailure(error)) {
        state.legacyEvidence = 'the server exited on the 2026-07-28 probe (server/discover), as servers on SDKs that take nothing before initialize do';
      }
      if (client === undefined && awaiting === 'server/discover' && isTimeout(error)) throw new ProbeTimeoutError(performance.now() - startedAt, error);
      throw error;
    } finally {
      stopping.signal.removeEventListener('abort', closeAttempt);
      if (state.closeAttempt === closeAttempt) delete state.closeAttempt;
      release();
      if (state.client === created) {
        delete state.client;
        state.tools = [];
        state.refusedTools = [];
      }
    }
  }

  /**
   * Makes one connection within the entry's `timeout_secs`: a probe that times out is no evidence
   * of an older server, so it is sent again in the same era, on a new connection, waiting twice as
   * long after a short backoff on the clock, until the time is spent. The time counted is what the
   * attempts took and the backoffs, whatever the clock. Any other failure (a 2025 handshake or a
   * tool list that timed out) is the attempt's. Resolves when the connection is lost.
   */
  async function connectWithinTimeout(state: ServerState): Promise<void> {
    const { entry } = state;
    const budget = entry.timeout_secs * 1000;
    let spent = 0;
    for (let round = 0; ; round += 1) {
      const probeTimeout = Math.max(1, Math.min(MCP_PROBE_FIRST_TIMEOUT_MS * 2 ** round, budget - spent));
      try {
        await connectOnce(state, probeTimeout);
        return;
      } catch (error) {
        if (stopping.signal.aborted || !(error instanceof ProbeTimeoutError)) throw error;
        spent += error.tookMs;
        const pause = MCP_PROBE_RETRY_BASE_MS * 2 ** round;
        if (spent + pause >= budget)
          throw new Error(`MCP server "${entry.name}" did not answer within its timeout_secs (${entry.timeout_secs} s): ${messageOf(error)}`, { cause: error });
        state.error = `no answer within ${Math.round(probeTimeout / 100) / 10} s; asking again`;
        logger.warn({ server: entry.name, waitedMs: probeTimeout, retryInMs: pause }, 'MCP server did not answer in time; asking again in the same era');
        spent += pause;
        await clock.sleep(pause, { signal: stopping.signal });
      }
    }
  }

  /** Waits `ms` on the clock before the next attempt, unless `reconnect()` asked for one now (or ends the wait early). */
  async function pauseBeforeRetry(state: ServerState, ms: number): Promise<'stopped' | 'woken' | 'elapsed'> {
    if (state.reconnectNow === true) {
      delete state.reconnectNow;
      return 'woken';
    }
    const wake = new AbortController();
    state.wake = wake;
    try {
      await clock.sleep(ms, { signal: AbortSignal.any([stopping.signal, wake.signal]) });
    } catch {
      // woken by reconnect(), or stopped
    } finally {
      if (state.wake === wake) delete state.wake;
    }
    return stopping.signal.aborted ? 'stopped' : wake.signal.aborted ? 'woken' : 'elapsed';
  }

  async function run(state: ServerState): Promise<void> {
    let failures = 0;
    while (!stopping.signal.aborted) {
      state.status = 'connecting';
      let wasConnected = false;
      try {
        await connectWithinTimeout(state);
        wasConnected = true;
        if (stopping.signal.aborted) return;
        state.status = 'failed';
        state.error = 'the connection was lost';
        logger.warn({ server: state.entry.name }, `MCP server "${state.entry.name}" disconnected: the connection was lost; reconnecting`);
      } catch (error) {
        if (stopping.signal.aborted) return;
        state.status = 'failed';
        state.error = messageOf(error);
        if (error instanceof McpServerRefusedError) {
          logger.error({ server: state.entry.name, error: state.error }, 'MCP server refused; not retrying');
          state.ended = true;
          return;
        }
        const action = loginActionOf(error);
        if (action === undefined) delete state.action;
        else state.action = action;
        // Evidence of a 2025-era server the SDK could not act on in place: its handshake next, at once.
        if (state.legacyEvidence !== undefined) {
          logger.warn(
            { server: state.entry.name, evidence: state.legacyEvidence },
            'MCP server cannot take the 2026-07-28 probe; connecting with the 2025 handshake',
          );
          continue;
        }
        logger.warn(
          { server: state.entry.name, error: state.error, ...(state.action === undefined ? {} : { action: state.action.command }) },
          'MCP server failed to connect',
        );
      }
      failures = wasConnected ? 1 : failures + 1;
      const delay = Math.min(MCP_RETRY_BASE_MS * 2 ** (failures - 1), MCP_RETRY_MAX_MS);
      const paused = await pauseBeforeRetry(state, delay);
      if (paused === 'stopped') return;
      if (paused === 'woken') failures = 0;
    }
  }

  return {
    start() {
      if (started || stopping.signal.aborted) return;
      started = true;
      for (const state of states) {
        loops.push(
          run(state).catch((error: unknown) => {
            state.status = 'failed';
            state.error = messageOf(error);
            logger.error({ server: state.entry.name, error: state.error }, 'MCP server loop ended');
          }),
        );
      }
    },

    async stop() {
      stopping.abort(new Error('the MCP client manager stopped'));
      for (const state of states)
        if (state.status === 'connected') logger.info({ server: state.entry.name }, `MCP server "${state.entry.name}" disconnected: Loom stops`);
      await Promise.all(states.map(async (state) => state.client?.close().catch(() => undefined)));
      await Promise.all(loops);
    },

    tools() {
      return states.flatMap((state) => (state.status === 'connected' ? state.tools : []));
    },

    servers() {
      return states.map((state) => ({
        name: state.entry.name,
        transport: state.entry.transport.type,
        status: state.status,
        ...(state.error === undefined || state.status === 'connected' ? {} : { error: state.error }),
        tools: state.status === 'connected' ? state.tools.map((tool) => ({ name: tool.name, description: tool.description })) : [],
        ...(state.status === 'connected' && state.refusedTools.length > 0 ? { refusedTools: state.refusedTools } : {}),
        ...(state.era === undefined ? {} : { era: state.era }),
        ...(state.protocolVersion === undefined ? {} : { protocolVersion: state.protocolVersion }),
        ...(state.eraReason === undefined ? {} : { eraReason: state.eraReason }),
        ...(state.action === undefined ? {} : { action: state.action }),
      }));
    },

    reconnect(server) {
      const state = states.find((candidate) => candidate.entry.name === server);
      if (state === undefined || state.ended === true) return false;
      logger.info({ server }, 'MCP server reconnecting on request');
      if (state.wake !== undefined) {
        state.wake.abort();
      } else {
        state.reconnectNow = true;
        if (state.client !== undefined) void state.client.close().catch(() => undefined);
        else state.closeAttempt?.();
      }
      return true;
    },
  };
}
