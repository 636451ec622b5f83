import { type Attributes, type Context, context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
// The ledger's call observer, not yet re-exported by the kernel's index.
import { type MeteredCall, observeModelCalls } from '../kernel/index.ts';
import { createSpanIdGenerator } from './span-ids.ts';
import { capturesContent, contentAttribute, errorType, loomTracer, sampledUnder, setSpans } from './spans.ts';

/** Options of {@link startTracing}. */
export interface TracingOptions {
  /** The OTLP/HTTP endpoint's base URL (`http://127.0.0.1:4318`); spans go to its `/v1/traces`. */
  endpoint: string;
  /** Put messages and tool inputs and outputs in the spans. */
  captureContent?: boolean;
  serviceName?: string;
  serviceVersion?: string;
}

/** Tracing while it runs. */
export interface Tracing {
  /** Sends the spans ended so far. */
  forceFlush(): Promise<void>;
  /** Sends what is left and stops tracing: spans are no longer made. */
  shutdown(): Promise<void>;
}

/**
 * Starts OpenTelemetry tracing with the official SDK: spans (`invoke_agent` per turn, `chat` per
 * model call the budget ledger meters, `execute_tool` per tool call) are batched and exported
 * over OTLP/HTTP (JSON) to `endpoint`. It sets the process's global tracer provider and an
 * AsyncLocalStorage context manager, so a turn's spans nest under it. One tracing per process.
 *
 * @example
 * const endpoint = tracingEndpoint(config.telemetry, env);
 * const tracing = endpoint === undefined ? undefined : startTracing({ endpoint, captureContent: config.telemetry.capture_content, serviceVersion: LOOM_VERSION });
 * // on stop: await tracing?.shutdown();
 */
export function startTracing(options: TracingOptions): Tracing {
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  const exporter = new OTLPTraceExporter({ url: `${options.endpoint.replace(/\/+$/, '')}/v1/traces` });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      'service.name': options.serviceName ?? 'loom',
      ...(options.serviceVersion === undefined ? {} : { 'service.version': options.serviceVersion }),
    }),
    // Sent each second, up to 8,192 spans held: a busy daemon's turns (four spans or more each) are not dropped between exports.
    idGenerator: createSpanIdGenerator(),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000, maxQueueSize: 8192, maxExportBatchSize: 1024 })],
  });
  trace.setGlobalTracerProvider(provider);
  // W3C `traceparent`: sent with MCP and A2A calls, read from incoming requests.
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  setSpans({ enabled: true, captureContent: options.captureContent === true });
  const chats = deferredChatSpans();
  const unobserve = observeModelCalls(chats.observe);
  return {
    forceFlush: () => {
      chats.drain();
      return provider.forceFlush();
    },
    async shutdown() {
      unobserve();
      chats.drain();
      setSpans({ enabled: false, captureContent: false });
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        propagation.disable();
        context.disable();
      }
    },
  };
}

/**
 * The `chat` spans of model calls, made after the call's turn has moved on: a call that ends
 * notes its parent context (the turn's span) and the span is built in the next `setImmediate`,
 * for every call that ended meanwhile at once, so the turn's own path (the model's answer to the
 * next step) does not wait for the SDK's span work. The span keeps the call's own start and end
 * times; `drain` builds the waiting ones now (before a flush or the end of tracing, so none is
 * lost). With `capture_content` a span is built at once: the prompt it copies is the call's.
 */
function deferredChatSpans(): { observe: (call: MeteredCall) => void; drain: () => void } {
  let waiting: { call: MeteredCall; parent: Context }[] = [];
  let scheduled = false;
  const drain = (): void => {
    scheduled = false;
    const calls = waiting;
    waiting = [];
    for (const { call, parent } of calls) recordChatSpan(call, parent);
  };
  return {
    observe(call) {
      const parent = context.active();
      // Under a caller's unsampled span the SDK would drop it: nothing is built.
      if (!sampledUnder(parent)) return;
      if (capturesContent()) return recordChatSpan(call, parent);
      waiting.push({ call, parent });
      if (!scheduled) {
        scheduled = true;
        setImmediate(drain);
      }
    },
    drain,
  };
}

/** A `chat {model}` span for a metered model call, as a child of `parent` (the context active where it ended: its turn's). */
function recordChatSpan(call: MeteredCall, parent: Context): void {
  const origin = globalThis.performance.timeOrigin;
  const { spent, target, request } = call;
  // Built by assignment, not spreads: this runs for every model call.
  const attributes: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': target.provider,
    'gen_ai.request.model': target.model,
    'gen_ai.usage.input_tokens': spent.inputTokens,
    'gen_ai.usage.output_tokens': spent.outputTokens,
    'gen_ai.usage.cache_read.input_tokens': spent.cacheReadTokens ?? 0,
    'gen_ai.usage.cache_creation.input_tokens': spent.cacheWriteTokens ?? 0,
    'loom.cost_usd': spent.costUsd,
    'loom.model_call.outcome': call.outcome,
  };
  if (call.agent !== undefined) {
    attributes['gen_ai.agent.id'] = call.agent.id;
    attributes['gen_ai.agent.name'] = call.agent.name;
  }
  if (request.maxOutputTokens !== undefined) attributes['gen_ai.request.max_tokens'] = request.maxOutputTokens;
  if (request.temperature !== undefined) attributes['gen_ai.request.temperature'] = request.temperature;
  if (capturesContent()) {
    attributes['gen_ai.input.messages'] = contentAttribute(request.prompt.filter((message) => message.role !== 'system'));
    attributes['gen_ai.system_instructions'] = contentAttribute(
      request.prompt.filter((message) => message.role === 'system').map((message) => message.content),
    );
  }
  // Set on the span, not given to startSpan: the SDK would check them twice more before setting them.
  const span = loomTracer()
    .startSpan(`chat ${target.model}`, { kind: SpanKind.CLIENT, startTime: origin + call.startedAt }, parent)
    .setAttributes(attributes);
  if (call.outcome === 'error' || call.outcome === 'refused') {
    span.setAttribute('error.type', call.error === undefined ? call.outcome : errorType(call.error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: call.error instanceof Error ? call.error.message : call.outcome });
  }
  span.end(origin + call.startedAt + call.durationMs);
}
