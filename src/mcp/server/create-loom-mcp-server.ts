import { type CallToolResult, ProtocolError, ProtocolErrorCode, Server, type ServerContext, type Tool } from '@modelcontextprotocol/server';
import { withMcpServerSpan } from '../mcp-spans.ts';
import { agentResources, agentResourceTemplates, readAgentResource } from './agent-resources.ts';
import { type AgentDirectory, type AgentSummary, agentToolName } from './agent-tools.ts';
import { type McpRequestOrigin, originOfAuthInfo } from './mcp-principal.ts';

/** The name Loom's MCP server reports to clients. */
export const LOOM_MCP_SERVER_NAME = 'loom';

/** What one MCP server instance serves: agents from `directory`, to the caller of `McpRequestOrigin`. */
export interface LoomMcpServerOptions extends McpRequestOrigin {
  directory: AgentDirectory;
  /**
   * The conversation of the client session this instance serves (`mcp:<session id>`, see
   * `mcpThread`); undefined for a stateless request, whose turns go into the principal's own session.
   */
  thread?: string | undefined;
  /** Reported as the server's version. */
  version: string;
  /**
   * Runs each request's handler, whatever its method (the MCP endpoints count the requests under
   * way, which the daemon's stop lets finish); as it is when omitted.
   */
  handling?: RequestHandling;
}

/** Runs a request's handler (`LoomMcpServerOptions.handling`). */
export type RequestHandling = <T>(handler: () => Promise<T>) => Promise<T>;

function toolOf(agent: AgentSummary): Tool {
  const about = agent.description.trim() === '' ? `the Loom agent "${agent.name}"` : agent.description.trim();
  return {
    name: agentToolName(agent.name),
    title: `Loom agent ${agent.name}`,
    description: `Sends a message to ${about} (Loom agent "${agent.name}") and returns its reply.`,
    inputSchema: {
      type: 'object',
      properties: { message: { type: 'string', description: `The message for the agent "${agent.name}".` } },
      required: ['message'],
    },
  };
}

const toolError = (message: string): CallToolResult => ({ content: [{ type: 'text', text: message }], isError: true });

/** A call naming no tool this caller is served: the protocol error (-32602) of the spec's examples, not a tool error. */
const unknownTool = (name: string): ProtocolError =>
  new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `Unknown tool: ${name} (no Loom agent or tool is served under that name to this caller; list the tools again to see the live ones)`,
  );

/**
 * Builds one MCP server (the SDK's low-level `Server`) serving each agent of `directory` as a
 * tool `loom_agent_{name}` with one `message` parameter, and as two read-only resources,
 * `loom://agents/{name}/session` and `loom://agents/{name}/turns/last` (JSON). Tools and
 * resources are read from the directory on every list, for the caller's principal, so they are
 * always current; call `sendToolListChanged()` and `sendResourceListChanged()` on the server to
 * tell a connected client when agents came or went. A call naming no tool served to the caller is
 * a JSON-RPC error (-32602); a failed call (refused, failed turn, out of rate) is a tool error
 * (`isError`) carrying the reason. A read of a resource the caller may not reach is answered as
 * one that does not exist.
 *
 * Low-level handlers rather than `McpServer.registerResource`: what is listed depends on who
 * asks, and the tools are served the same way; the SDK's `UriTemplate` matches the URIs and its
 * `ResourceNotFoundError` is the answer to a miss.
 */
export function createLoomMcpServer(options: LoomMcpServerOptions): Server {
  const { directory, principal, thread } = options;
  const handled: RequestHandling = options.handling ?? ((handler) => handler());
  const server = new Server(
    { name: LOOM_MCP_SERVER_NAME, version: options.version },
    {
      capabilities: { tools: { listChanged: true }, resources: { listChanged: true } },
      instructions:
        "Each tool loom_agent_<name> sends its `message` to that Loom agent and returns the agent's reply. " +
        "Each agent's session and last turn are read-only resources: loom://agents/<name>/session and loom://agents/<name>/turns/last (JSON).",
    },
  );

  // Two agents whose names differ only in case or punctuation map to one tool: the earlier one keeps it.
  server.setRequestHandler('tools/list', () =>
    handled(async () => {
      const seen = new Set<string>();
      const tools = (await directory.list(principal)).map(toolOf).filter((tool) => !seen.has(tool.name) && seen.add(tool.name) !== undefined);
      const more = (await directory.tools?.(principal)) ?? [];
      return {
        tools: [...tools, ...more.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema as Tool['inputSchema'] }))],
      };
    }),
  );

  const callTool = async (name: string, args: Record<string, unknown> | undefined, ctx: ServerContext): Promise<CallToolResult> => {
    if (!name.startsWith('loom_agent_') && directory.callTool !== undefined) {
      let result: Awaited<ReturnType<NonNullable<AgentDirectory['callTool']>>>;
      try {
        result = await directory.callTool(name, args ?? {}, principal, ctx.mcpReq.signal);
      } catch (error) {
        // A call that failed (cancelled at the daemon's stop) is a tool error, as an agent's is.
        return toolError(error instanceof Error ? error.message : String(error));
      }
      if (result === undefined) throw unknownTool(name);
      return { content: [{ type: 'text', text: result.text }], ...(result.isError ? { isError: true } : {}) };
    }
    const agent = (await directory.list(principal)).find((candidate) => agentToolName(candidate.name) === name);
    if (agent === undefined) throw unknownTool(name);
    const message = args?.['message'];
    if (typeof message !== 'string' || message === '') return toolError(`the tool "${name}" needs a non-empty string "message"`);
    try {
      // The request's own origin when it carries one (a session's server serves many requests), else the instance's.
      (originOfAuthInfo(ctx.http?.authInfo) ?? options).chargeTurn?.();
      const reply = await directory.send(agent.name, message, principal, ctx.mcpReq.signal, thread);
      return { content: [{ type: 'text', text: reply }] };
    } catch (error) {
      return toolError(error instanceof Error ? error.message : String(error));
    }
  };

  // Each call is a server span, in the caller's trace when its `_meta` (or HTTP request) carries a `traceparent`.
  server.setRequestHandler('tools/call', (request, ctx) =>
    handled(() =>
      withMcpServerSpan({ tool: request.params.name, transport: ctx.http === undefined ? 'pipe' : 'tcp' }, request.params._meta, () =>
        callTool(request.params.name, request.params.arguments, ctx),
      ),
    ),
  );

  server.setRequestHandler('resources/list', () => handled(async () => ({ resources: agentResources(await directory.list(principal)) })));

  server.setRequestHandler('resources/templates/list', () => handled(() => Promise.resolve({ resourceTemplates: agentResourceTemplates() })));

  server.setRequestHandler('resources/read', (request, ctx) =>
    handled(() => readAgentResource(directory, principal, request.params.uri, ctx.mcpReq.signal, thread)),
  );

  return server;
}
