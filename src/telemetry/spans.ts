import {
  type Attributes,
  type Context,
  context,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
  TraceFlags,
  type Tracer,
} from '@opentelemetry/api';

/**
 * OpenTelemetry spans with the GenAI semantic conventions, made only while tracing is on (see
 * `startTracing`): with it off, each wrapper calls straight through and no span object is made.
 * Kept apart from the exporter and the metrics so the runtime can load it at boot cheaply.
 */

let enabled = false;
let capture = false;

/** Turns span making on or off, and whether spans carry messages and tool inputs and outputs. Called by `startTracing`. */
export function setSpans(options: { enabled: boolean; captureContent: boolean }): void {
  enabled = options.enabled;
  capture = options.captureContent;
  tracer = undefined;
}

/** Whether spans are made now (tracing is on). */
export function spansEnabled(): boolean {
  return enabled;
}

/** Whether spans carry content (`[telemetry].capture_content`). */
export function capturesContent(): boolean {
  return enabled && capture;
}

let tracer: Tracer | undefined;

/** The tracer spans come from: the global provider's, which `startTracing` sets; looked up once per tracing, not per span. */
export function loomTracer(): Tracer {
  tracer ??= trace.getTracer('loom');
  return tracer;
}

/** A span ended with an error: its status, `error.type` and the exception. */
export function failSpan(span: Span, error: unknown): void {
  span.setAttribute('error.type', errorType(error));
  span.recordException(error instanceof Error ? error : new Error(String(error)));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/** The `error.type` of `error`: a Loom error's code, else its class name. */
export function errorType(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string') return error.code;
  return error instanceof Error ? error.name : 'unknown';
}

/** Content as a span attribute: JSON, cut at 64 KB so one large message cannot swell an export. */
export function contentAttribute(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return text.length > 65_536 ? `${text.slice(0, 65_536)}…` : text;
}

/** What an `invoke_agent` span says of its turn. */
export interface TurnSpanAttributes {
  agentId: string;
  agentName: string;
  /** The session the turn belongs to. */
  conversationId?: string | undefined;
  /** The user's message (recorded only with `capture_content`). */
  message?: string | undefined;
}

/**
 * Runs a turn inside an `invoke_agent {agent}` span (GenAI conventions: `gen_ai.operation.name`,
 * `gen_ai.agent.id`, `gen_ai.agent.name`, `gen_ai.conversation.id`), the parent of its `chat`
 * and `execute_tool` spans; a turn that throws ends it with the error. With tracing off, `run()`.
 *
 * @example
 * const result = await withTurnSpan({ agentId: entry.id, agentName: entry.name, conversationId: place.sessionId, message }, () => runChat(...));
 */
export function withTurnSpan<T>(attributes: TurnSpanAttributes, run: () => Promise<T>): Promise<T> {
  if (!enabled) return run();
  // Built only when the span is made (not under a caller's unsampled span).
  const spanAttributes = (): Attributes => {
    const built: Attributes = {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.id': attributes.agentId,
      'gen_ai.agent.name': attributes.agentName,
    };
    if (attributes.conversationId !== undefined) built['gen_ai.conversation.id'] = attributes.conversationId;
    if (capture && attributes.message !== undefined)
      built['gen_ai.input.messages'] = contentAttribute([{ role: 'user', parts: [{ type: 'text', content: attributes.message }] }]);
    return built;
  };
  return inSpan(`invoke_agent ${attributes.agentName}`, SpanKind.INTERNAL, spanAttributes, run, (span, result) => {
    if (capture && typeof result === 'object' && result !== null && 'text' in result && typeof result.text === 'string') {
      span.setAttribute('gen_ai.output.messages', contentAttribute([{ role: 'assistant', parts: [{ type: 'text', content: result.text }] }]));
    }
  });
}

/** What an `execute_tool` span says of its call. */
export interface ToolSpanAttributes {
  toolName: string;
  toolCallId: string;
  agentName: string;
  description?: string | undefined;
  /** The call's input (recorded only with `capture_content`). */
  input?: unknown;
}

/**
 * Runs a tool call inside an `execute_tool {tool}` span (`gen_ai.tool.name`,
 * `gen_ai.tool.call.id`, `gen_ai.tool.type`); `outcome` reads from the call's result whether it
 * failed (an error result sets the span's status, `error.type` its `failure`: refused, timeout,
 * threw, else `tool_error`) and its text (recorded only with `capture_content`). With tracing
 * off, `run()`.
 */
export function withToolSpan<T>(
  attributes: ToolSpanAttributes,
  run: () => Promise<T>,
  outcome: (result: T) => { isError: boolean; text: string; failure?: string | undefined },
): Promise<T> {
  if (!enabled) return run();
  const spanAttributes = (): Attributes => {
    const built: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': attributes.toolName,
      'gen_ai.tool.call.id': attributes.toolCallId,
      'gen_ai.tool.type': 'function',
      'gen_ai.agent.name': attributes.agentName,
    };
    if (attributes.description !== undefined) built['gen_ai.tool.description'] = attributes.description;
    if (capture && attributes.input !== undefined) built['gen_ai.tool.call.arguments'] = contentAttribute(attributes.input);
    return built;
  };
  return inSpan(`execute_tool ${attributes.toolName}`, SpanKind.INTERNAL, spanAttributes, run, (span, result) => {
    const { isError, text, failure } = outcome(result);
    if (capture) span.setAttribute('gen_ai.tool.call.result', contentAttribute(text));
    if (isError) {
      span.setAttribute('error.type', failure ?? 'tool_error');
      span.setStatus({ code: SpanStatusCode.ERROR, message: text.slice(0, 500) });
    }
  });
}

/**
 * Runs `run` inside an active span `name` (its children nest under it), ended when `run` settles:
 * `ended` sees the result first; a throw ends it with the error. With tracing off, `run()`.
 *
 * @example
 * await withSpan(`workflow ${agent.name}`, SpanKind.INTERNAL, { 'gen_ai.agent.name': agent.name }, () => runWorkflow(context, port));
 */
export function withSpan<T>(name: string, kind: SpanKind, attributes: Attributes, run: () => Promise<T>, ended?: (span: Span, result: T) => void): Promise<T> {
  if (!enabled) return run();
  return inSpan(name, kind, attributes, run, ended);
}

/**
 * Starts span `name` under the active one and runs `run` with it active, ending it when `run`
 * settles. Written without an async wrapper (`startActiveSpan` would add one, and a promise and a
 * closure per span, on the turn's own path); under a parent that is not sampled no span is made at
 * all, so `ended` and the attributes' content are not worked out for nothing.
 */
function inSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Attributes | (() => Attributes),
  run: () => Promise<T>,
  ended?: (span: Span, result: T) => void,
): Promise<T> {
  const parent = context.active();
  if (!sampledUnder(parent)) return run();
  // Set on the span, not given to startSpan, which would check them twice more before the span sets them.
  const span = loomTracer()
    .startSpan(name, { kind }, parent)
    .setAttributes(typeof attributes === 'function' ? attributes() : attributes);
  let running: Promise<T>;
  try {
    running = context.with(trace.setSpan(parent, span), run);
  } catch (error) {
    failSpan(span, error);
    span.end();
    throw error;
  }
  return running.then(
    (result) => {
      try {
        ended?.(span, result);
      } finally {
        span.end();
      }
      return result;
    },
    (error: unknown) => {
      failSpan(span, error);
      span.end();
      throw error;
    },
  );
}

/**
 * Whether a span made in `parent` would be sampled: true at a trace's root (every root is, by the
 * SDK's default sampler) and under a recording span; false under a caller's span that is not
 * sampled (a `traceparent` with flags 00), whose children the parent-based sampler drops anyway.
 */
export function sampledUnder(parent: Context): boolean {
  const span = trace.getSpan(parent);
  if (span === undefined) return true;
  return span.isRecording() || (span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;
}

/** Where a W3C trace context may be read from: request headers, or an MCP request's `_meta`. */
export type TraceCarrier = Headers | Readonly<Record<string, unknown>>;

/** Reads `traceparent` and `tracestate` from headers or a plain object, taking only strings (a peer's `_meta` is unchecked). */
const carrierGetter: TextMapGetter<TraceCarrier> = {
  keys: (carrier) => (carrier instanceof Headers ? [...carrier.keys()] : Object.keys(carrier)),
  get: (carrier, key) => {
    const value = carrier instanceof Headers ? carrier.get(key) : carrier[key];
    return typeof value === 'string' ? value : undefined;
  },
};

/**
 * The W3C trace context (`traceparent`, `tracestate`) of the span active now, to send with an
 * outgoing request (as headers, or in an MCP request's `_meta`); empty with tracing off or
 * outside any span.
 */
export function traceContextFields(): Record<string, string> {
  const fields: Record<string, string> = {};
  if (enabled) propagation.inject(context.active(), fields);
  return fields;
}

/**
 * Runs `run` with the trace context `carrier` brings (an incoming request's `traceparent`) as
 * the active one, so the spans made in it (a turn's `invoke_agent`) are the caller's span's
 * children, in its trace. With tracing off, or no valid `traceparent`, `run()`.
 */
export function withRemoteParent<T>(carrier: TraceCarrier | undefined, run: () => T): T {
  if (!enabled || carrier === undefined) return run();
  const remote = propagation.extract(context.active(), carrier, carrierGetter);
  if (trace.getSpanContext(remote) === undefined) return run();
  return context.with(remote, run);
}
