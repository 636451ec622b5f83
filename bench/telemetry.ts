import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { parseManifest } from '../src/manifest/index.ts';
import { createCostCatalog } from '../src/models/index.ts';
import { createLoomMetrics, startTracing, type Tracing, withTurnSpan } from '../src/telemetry/index.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { round, summarize } from './stats.ts';

const WARMUP = 200;
const TURNS = 1000;

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

/** Kernel turns with one tool call each (two model calls, an instant in-process model), as `mode` observes them. */
async function measure(mode: 'off' | 'metrics' | 'exporter'): Promise<{ durations: number[]; spans: number }> {
  const bench = await openInstantBenchKernel(createInstantModel({ toolName: 'agent_list' }));
  const receiver = mode === 'exporter' ? await startReceiver() : undefined;
  let tracing: Tracing | undefined;
  const metrics = mode === 'metrics' ? createLoomMetrics({ kernel: bench.kernel, costs: createCostCatalog() }) : undefined;
  try {
    if (receiver !== undefined) tracing = startTracing({ endpoint: receiver.url });
    const agent = await bench.kernel.spawn(parseManifest('name = "traced"\n[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n[capabilities]\ntools = ["agent_list"]\n', { source: 'bench.toml' }).manifest);
    // The message flow's turn, inside its span as it is to be wired (with tracing off, a direct call).
    const turn = (index: number) => withTurnSpan({ agentId: agent.id, agentName: 'traced', conversationId: agent.session_id }, () => bench.kernel.send('traced', `turn ${index}`));
    for (let index = 0; index < WARMUP; index++) await turn(index);
    const durations: number[] = [];
    for (let index = 0; index < TURNS; index++) {
      const started = performance.now();
      await turn(index);
      durations.push(performance.now() - started);
    }
    await tracing?.forceFlush();
    if (metrics !== undefined) await metrics.text();
    return { durations, spans: receiver === undefined ? 0 : await receiver.spans() };
  } finally {
    await tracing?.shutdown();
    metrics?.dispose();
    await receiver?.close();
    await bench.dispose();
  }
}

/**
 * `npm run bench -- turn-telemetry`: kernel turn p50 (a tool call, two model calls) with
 * telemetry off, with the Prometheus metrics listening, and with traces exported over OTLP/HTTP
 * to a local receiver (target: at most 10 % slower than off).
 */
export async function turnTelemetryBench(): Promise<Record<string, unknown>> {
  const off = await measure('off');
  const metrics = await measure('metrics');
  const exporter = await measure('exporter');
  const offAgain = await measure('off');
  const p50 = (durations: number[]): number => summarize(durations).p50_ms;
  const baseline = Math.min(p50(off.durations), p50(offAgain.durations));
  return {
    bench: 'turn-telemetry',
    turns: TURNS,
    off: summarize(off.durations),
    off_again: summarize(offAgain.durations),
    metrics: summarize(metrics.durations),
    exporter: { ...summarize(exporter.durations), spans_received: exporter.spans },
    metrics_p50_ratio: round(p50(metrics.durations) / baseline),
    exporter_p50_ratio: round(p50(exporter.durations) / baseline),
  };
}
