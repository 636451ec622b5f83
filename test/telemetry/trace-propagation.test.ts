import { SpanKind } from '@opentelemetry/api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { discoverAgent, sendA2aMessage } from '../../src/a2a/index.ts';
import { startTracing, type Tracing, withSpan } from '../../src/telemetry/index.ts';
import { type Api, agentToml, startApi } from '../http/api-harness.ts';
import { callTool, makeManager, toolNamed, waitForStatus } from '../mcp/client-helpers.ts';
import { connectClient, firstText } from '../mcp/server-harness.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../support/otlp-receiver.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';

/** OTLP's span kinds. */
const SERVER = 2;
const CLIENT = 3;

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;
let receiver: OtlpReceiver;
let tracing: Tracing;
const closers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  dir = await makeTempDir('loom-traceparent-');
  receiver = await startOtlpReceiver();
  tracing = startTracing({ endpoint: receiver.url });
  api = await startApi(dir.path, { config: { a2a: { enabled: true } } });
  const spawned = await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('helper', model.url) });
  expect(spawned.status).toBe(201);
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await tracing.shutdown();
  await api.close();
  await receiver.close();
  await dir.remove();
});

/** The spans once exported, when one named `last` has arrived. */
async function exported(last: string): Promise<ReceivedSpan[]> {
  await tracing.forceFlush();
  await waitFor(`the receiver to get the span "${last}"`, () => receiver.spans.some((span) => span.name === last));
  return receiver.spans;
}

/** The span named `name`, failing when there is none. */
function named(spans: readonly ReceivedSpan[], name: string, kind?: number): ReceivedSpan {
  const found = spans.find((span) => span.name === name && (kind === undefined || span.kind === kind));
  if (found === undefined) throw new Error(`no span "${name}"; have ${spans.map((span) => span.name).join(', ')}`);
  return found;
}

/** A W3C `traceparent` as a caller outside Loom would send it. */
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const TRACEPARENT = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;

describe("W3C trace context across Loom's doors", () => {
  it('makes a turn asked for over the API a child of the traceparent the request carries', async () => {
    model.script([{ text: 'Hello.' }]);
    const response = await api.request('/api/agents/helper/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: TRACEPARENT },
      body: JSON.stringify({ message: 'Hi' }),
    });
    expect(response.status).toBe(200);
    const spans = await exported('chat gpt-4o');
    const turn = named(spans, 'invoke_agent helper');
    expect(turn.traceId).toBe(CALLER_TRACE);
    expect(turn.parentSpanId).toBe(CALLER_SPAN);
    expect(named(spans, 'chat gpt-4o').parentSpanId).toBe(turn.spanId);
  });

  it('serves an MCP tools/call as a server span under the traceparent of its _meta, the turn under it', async () => {
    model.script([{ text: 'From MCP.' }]);
    const client = await connectClient(api.url, 'modern');
    closers.push(() => client.close());
    const result = await client.callTool({ name: 'loom_agent_helper', arguments: { message: 'Hi' }, _meta: { traceparent: TRACEPARENT } });
    expect(firstText(result)).toBe('From MCP.');
    const spans = await exported('invoke_agent helper');
    const served = named(spans, 'tools/call loom_agent_helper', SERVER);
    expect(served).toMatchObject({ traceId: CALLER_TRACE, parentSpanId: CALLER_SPAN });
    expect(served.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'loom_agent_helper', 'network.transport': 'tcp' });
    expect(named(spans, 'invoke_agent helper').parentSpanId).toBe(served.spanId);
  });

  it("carries an MCP client call's trace to the server it calls: client span, server span and the served turn in one trace", async () => {
    model.script([{ text: 'Served.' }]);
    const { manager } = makeManager([
      { name: 'self', timeout_secs: 30, env: [], allow_private_network: true, transport: { type: 'http', url: `${api.url}/mcp`, headers: {} } },
    ]);
    closers.push(() => manager.stop());
    manager.start();
    await waitForStatus(manager, 'self', 'connected');
    const tool = toolNamed(manager, 'mcp_self_loom_agent_helper');
    const result = await withSpan('caller', SpanKind.INTERNAL, {}, () => callTool(tool, { message: 'Hi' }));
    expect(result.text).toBe('Served.');
    const spans = await exported('invoke_agent helper');
    const caller = named(spans, 'caller');
    const client = named(spans, 'tools/call loom_agent_helper', CLIENT);
    const served = named(spans, 'tools/call loom_agent_helper', SERVER);
    const turn = named(spans, 'invoke_agent helper');
    expect(client).toMatchObject({ traceId: caller.traceId, parentSpanId: caller.spanId });
    expect(client.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'loom.mcp.server': 'self', 'network.transport': 'tcp' });
    expect(served).toMatchObject({ traceId: caller.traceId, parentSpanId: client.spanId });
    expect(turn).toMatchObject({ traceId: caller.traceId, parentSpanId: served.spanId });
  });

  it("sends the caller's traceparent with an A2A message, so the peer's turn joins its trace", async () => {
    model.script([{ text: 'Over A2A.' }]);
    const card = await discoverAgent(`${api.url}/a2a/helper`);
    const result = await withSpan('caller', SpanKind.INTERNAL, {}, () => sendA2aMessage(card, 'Hi'));
    expect(result.text).toBe('Over A2A.');
    const spans = await exported('invoke_agent helper');
    const caller = named(spans, 'caller');
    const turn = named(spans, 'invoke_agent helper');
    expect(turn.traceId).toBe(caller.traceId);
  });
});
