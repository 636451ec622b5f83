import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { parseManifest } from '../src/manifest/index.ts';
import { createCostCatalog } from '../src/models/index.ts';
import { SpanKind } from '@opentelemetry/api';
import { createLoomMetrics, startTracing, type Tracing, withToolSpan, withTurnSpan } from '../src/telemetry/index.ts';
import { loomTracer } from '../src/telemetry/spans.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { round, summarize } from './stats.ts';

const WARMUP = 200;
const TURNS = 1000;
/** Rounds of each mode, interleaved: TURNS / ROUNDS turns each. */
const ROUNDS = 10;
/** Conversations per mode and round: each takes TURNS / ROUNDS / SESSIONS turns. */
const SESSIONS = 10;
/** Turns of spans alone, for {@link spanCost}. */
const SPAN_TURNS = 20_000;

/** What the receiver process runs: an OTLP/HTTP endpoint that counts the spans it is sent, and says how many on GET /count. */
const RECEIVER = `
const { createServer } = require('node:http');
let spans = 0;
const server = createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    if (request.method === 'GET') return response.end(String(spans));
    spans += (Buffer.concat(chunks).toString('utf8').match(/"spanId"/g) || []).length;
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

/** A local OTLP/HTTP receiver in a process of its own, as a collector would be, so its work is not the daemon's. */
async function startReceiver(): Promise<{ url: string; spans: () => Promise<number>; close(): Promise<void> }> {
  const child = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8').trim()));
    child.once('error', reject);
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    spans: async () => Number(await (await fetch(`${url}/count`)).text()),
    close: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill();
      await exited;
    },
  };
}

/** `off_again` is off once more: how far two runs of the same thing differ on this machine. */
type Mode = 'off' | 'off_again' | 'metrics' | 'exporter';

/** What one mode measured over every round: each turn's wall time, and the process's CPU time over its rounds (exports included). */
interface Measured {
  durations: number[];
  cpuMs: number;
  turns: number;
}

/**
 * Kernel turns with one tool call each (two model calls, an instant in-process model), on short
 * conversations so that each mode does the same work, in rounds
 * that take the modes in turn, so that a machine busy with other work slows each mode alike; the
 * exporter's rounds end with a flush, so what exporting costs is counted in their CPU time.
 */
async function measure(rounds: number, turnsPerRound: number): Promise<{ modes: Record<Mode, Measured>; spans: number }> {
  const bench = await openInstantBenchKernel(createInstantModel({ toolName: 'agent_list' }));
  const receiver = await startReceiver();
  const modes: Record<Mode, Measured> = {
    off: { durations: [], cpuMs: 0, turns: 0 },
    off_again: { durations: [], cpuMs: 0, turns: 0 },
    metrics: { durations: [], cpuMs: 0, turns: 0 },
    exporter: { durations: [], cpuMs: 0, turns: 0 },
  };
  try {
    await bench.kernel.spawn(
      parseManifest('name = "traced"\n[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n[capabilities]\ntools = ["agent_list"]\n', {
        source: 'bench.toml',
      }).manifest,
    );
    // The message flow's turn on conversation `conversation`: the flow makes its `invoke_agent`
    // span itself (four spans a turn, as in the daemon; wrapping it here again made a fifth). Each mode's round has conversations of its own, ten turns long at most (the
    // `turn` bench's sessions are as short): on one session every turn would read a longer
    // history than the last, and whichever mode ran later would look slower.
    const turn = (index: number, conversation: string) => bench.kernel.send('traced', `turn ${index}`, { conversation });
    for (let index = 0; index < WARMUP; index++) await turn(index, `warmup-${index % SESSIONS}`);
    const order: Mode[] = ['off', 'metrics', 'off_again', 'exporter'];
    let index = 0;
    for (let round = 0; round < rounds; round++) {
      // Each round starts with another mode, so none always runs first.
      for (let step = 0; step < order.length; step++) {
        const mode = order[(round + step) % order.length] as Mode;
        const metrics = mode === 'metrics' ? createLoomMetrics({ kernel: bench.kernel, costs: createCostCatalog() }) : undefined;
        const tracing: Tracing | undefined = mode === 'exporter' ? startTracing({ endpoint: receiver.url }) : undefined;
        const cpu = process.cpuUsage();
        for (let count = 0; count < turnsPerRound; count++) {
          const started = performance.now();
          await turn(index++, `${mode}-${round}-${count % SESSIONS}`);
          modes[mode].durations.push(performance.now() - started);
        }
        await tracing?.shutdown();
        if (metrics !== undefined) await metrics.text();
        const used = process.cpuUsage(cpu);
        modes[mode].cpuMs += (used.user + used.system) / 1000;
        modes[mode].turns += turnsPerRound;
        metrics?.dispose();
      }
    }
    return { modes, spans: await receiver.spans() };
  } finally {
    await receiver.close();
    await bench.dispose();
  }
}

/**
 * The CPU time of a turn's spans alone, without the turn (whose own cost swamps them on a busy
 * machine): an `invoke_agent` span holding an `execute_tool` span and two `chat` spans with the
 * attributes the daemon gives them, exported to the receiver; in microseconds per turn.
 */
async function spanCost(receiverUrl: string): Promise<number> {
  const tracing = startTracing({ endpoint: receiverUrl });
  const attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': 'anthropic',
    'gen_ai.request.model': 'claude-sonnet-4-5',
    'gen_ai.usage.input_tokens': 300,
    'gen_ai.usage.output_tokens': 20,
    'gen_ai.usage.cache_read.input_tokens': 0,
    'gen_ai.usage.cache_creation.input_tokens': 0,
    'loom.cost_usd': 0.0012,
    'loom.model_call.outcome': 'ok',
    'gen_ai.agent.id': 'id',
    'gen_ai.agent.name': 'traced',
  };
  const chat = (): void =>
    loomTracer()
      .startSpan('chat claude-sonnet-4-5', { kind: SpanKind.CLIENT, startTime: performance.timeOrigin + performance.now(), attributes })
      .end();
  const turn = () =>
    withTurnSpan({ agentId: 'id', agentName: 'traced', conversationId: 'session' }, async () => {
      chat();
      await withToolSpan(
        { toolName: 'agent_list', toolCallId: 'call', agentName: 'traced', input: {} },
        () => Promise.resolve({ text: '[]' }),
        (result) => ({ isError: false, text: result.text }),
      );
      chat();
      return { text: 'done' };
    });
  try {
    for (let index = 0; index < SPAN_TURNS / 5; index++) await turn();
    const cpu = process.cpuUsage();
    for (let index = 0; index < SPAN_TURNS; index++) await turn();
    await tracing.forceFlush();
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / SPAN_TURNS;
  } finally {
    await tracing.shutdown();
  }
}

/**
 * `npm run bench -- turn-telemetry`: kernel turn p50 (a tool call, two model calls) with
 * telemetry off, with the Prometheus metrics listening, and with traces exported over OTLP/HTTP
 * to a local receiver in a process of its own (target: at most 10 % slower than off), in
 * interleaved rounds; also the CPU time per turn of each mode, exports included, and that of a
 * turn's spans alone.
 */
export async function turnTelemetryBench(): Promise<Record<string, unknown>> {
  const { modes, spans } = await measure(ROUNDS, TURNS / ROUNDS);
  const receiver = await startReceiver();
  const spanCpuUs = await spanCost(receiver.url).finally(() => receiver.close());
  const p50 = (mode: Mode): number => summarize(modes[mode].durations).p50_ms;
  const cpuPerTurn = (mode: Mode): number => modes[mode].cpuMs / modes[mode].turns;
  return {
    bench: 'turn-telemetry',
    turns: TURNS,
    rounds: ROUNDS,
    off: { ...summarize(modes.off.durations), cpu_ms_per_turn: round(cpuPerTurn('off')) },
    off_again: { ...summarize(modes.off_again.durations), cpu_ms_per_turn: round(cpuPerTurn('off_again')) },
    metrics: { ...summarize(modes.metrics.durations), cpu_ms_per_turn: round(cpuPerTurn('metrics')) },
    exporter: { ...summarize(modes.exporter.durations), cpu_ms_per_turn: round(cpuPerTurn('exporter')), spans_received: spans },
    off_again_p50_ratio: round(p50('off_again') / p50('off')),
    metrics_p50_ratio: round(p50('metrics') / p50('off')),
    exporter_p50_ratio: round(p50('exporter') / p50('off')),
    exporter_cpu_ratio: round(cpuPerTurn('exporter') / cpuPerTurn('off')),
    span_cpu_us_per_turn: round(spanCpuUs),
    span_cpu_share_of_turn: round(spanCpuUs / 1000 / cpuPerTurn('off')),
  };
}
