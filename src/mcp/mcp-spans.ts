import { type Attributes, type Span, SpanKind, SpanStatusCode } from '@opentelemetry/api';
// The light half of the telemetry module: the SDK loads only when tracing starts.
import { traceContextFields, type TraceCarrier, withRemoteParent, withSpan } from '../telemetry/spans.ts';

/**
 * MCP spans with the OpenTelemetry MCP semantic conventions (`{mcp.method.name} {target}`, kind
 * client or server), and the W3C trace context carried across: in a request's `params._meta`
 * (`traceparent`, `tracestate`), on every transport, and as HTTP headers on the HTTP ones. With
 * tracing off, each calls straight through and nothing is added to a request.
 */

/** What a `tools/call` span says of its call. */
export interface McpToolCallSpan {
  /** The tool's name as the server knows it. */
  tool: string;
  /** Client side: the `[[mcp_servers]]` entry called. */
  server?: string | undefined;
  /** `pipe` (stdio) or `tcp` (HTTP). */
  transport: 'pipe' | 'tcp';
}

function attributesOf(call: McpToolCallSpan): Attributes {
  const attributes: Attributes = {
    'mcp.method.name': 'tools/call',
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': call.tool,
    'network.transport': call.transport,
  };
  if (call.server !== undefined) attributes['loom.mcp.server'] = call.server;
  return attributes;
}

/** A tool result's error flag as the span's status (`error.type` `tool_error`). */
function markToolError(span: Span, result: { isError?: unknown }): void {
  if (result.isError !== true) return;
  span.setAttribute('error.type', 'tool_error');
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/**
 * Calls an MCP server's tool inside a client span `tools/call {tool}`; `call` gets the `_meta`
 * to send with the request, which carries the span's trace context so the server's spans join
 * the trace.
 *
 * @example
 * const result = await withMcpClientSpan({ tool: 'search', server: 'docs', transport: 'tcp' }, (_meta) => client.callTool({ name: 'search', arguments: input, _meta }));
 */
export function withMcpClientSpan<T extends { isError?: unknown }>(
  call: McpToolCallSpan,
  run: (meta: Record<string, string> | undefined) => Promise<T>,
): Promise<T> {
  return withSpan(`tools/call ${call.tool}`, SpanKind.CLIENT, attributesOf(call), () => run(metaOf(traceContextFields())), markToolError);
}

function metaOf(fields: Record<string, string>): Record<string, string> | undefined {
  return Object.keys(fields).length === 0 ? undefined : fields;
}

/**
 * Serves an MCP tool call inside a server span `tools/call {tool}`, the child of the caller's span
 * named by the request's `_meta.traceparent`, else by the HTTP request's `traceparent` header
 * (already the active context there), so the turn the call runs joins the caller's trace.
 */
export function withMcpServerSpan<T extends { isError?: unknown }>(call: McpToolCallSpan, meta: TraceCarrier | undefined, run: () => Promise<T>): Promise<T> {
  return withRemoteParent(meta, () => withSpan(`tools/call ${call.tool}`, SpanKind.SERVER, attributesOf(call), run, markToolError));
}

/** `fetch` that sends the active span's `traceparent` (and `tracestate`) headers: an MCP HTTP transport's requests join its trace. */
export function tracedFetch(base: (url: string | URL, init?: RequestInit) => Promise<Response>): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return (url, init) => {
    const fields = traceContextFields();
    if (Object.keys(fields).length === 0) return base(url, init);
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(fields)) headers.set(name, value);
    return base(url, { ...init, headers });
  };
}
