// A server of the http-turn benchmark, in a process of its own so that each server's figures are
// its own (run in the bench's process, whichever server ran second found the code it shares with
// the first compiled, and gained 10-20 %). `node bench/http-serve.ts loom|bare` prints its URL as
// one JSON line, then answers lines on standard input: `measure` starts counting its CPU time and
// event-loop delay (and says so), `report` prints them as one JSON line, `exit` closes it.
import { createInterface } from 'node:readline';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { streamText } from 'ai';
import { createSystemClock } from '../src/clock/index.ts';
import { ConfigSchema } from '../src/config/index.ts';
import { createHttpApp, startHttpServer } from '../src/http/index.ts';
import { createSilentLogger } from '../src/logging/index.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';

/** What a server reports of the chats it served since `measure`. */
export interface ServeReport {
  cpu_ms: number;
  loop_p50_ms: number;
  loop_p99_ms: number;
  loop_max_ms: number;
}

const [kind, agentsText] = process.argv.slice(2);
const agents = Number(agentsText);
if ((kind !== 'loom' && kind !== 'bare') || !Number.isInteger(agents)) {
  console.error('usage: node bench/http-serve.ts loom|bare <agents>');
  process.exit(2);
}

/** Loom: the kernel and its HTTP app on an in-process model, one agent per load slot (`chat-<slot>`). */
async function loomServer(): Promise<{ url: string; close(): Promise<void> }> {
  const bench = await openInstantBenchKernel(createInstantModel());
  const config = ConfigSchema.parse({ rate_limit: { per_minute: 10_000_000 } });
  const server = await startHttpServer(createHttpApp({ kernel: bench.kernel, config, env: {}, clock: createSystemClock(), logger: createSilentLogger() }), {
    host: '127.0.0.1',
    port: 0,
  });
  for (let index = 0; index < agents; index += 1) {
    await bench.kernel.spawn(parseManifest(`name = "chat-${index}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n`, { source: 'bench.toml' }).manifest);
  }
  return {
    url: server.url,
    close: async () => {
      await server.close();
      await bench.dispose();
    },
  };
}

/**
 * The floor under a streamed chat: the same libraries and nothing of Loom (Hono's SSE helper, the
 * AI SDK's `streamText` on the instant model, the same event names).
 */
async function bareServer(): Promise<{ url: string; close(): Promise<void> }> {
  const model = createInstantModel();
  const app = new Hono();
  app.post('/api/agents/:agent/messages', async (c) => {
    const { message } = await c.req.json<{ message: string }>();
    return streamSSE(c, async (stream) => {
      await stream.writeSSE({ event: 'run-start', data: JSON.stringify({ type: 'run-start', agentName: c.req.param('agent') }) });
      const result = streamText({ model, messages: [{ role: 'user', content: message }], maxRetries: 0 });
      for await (const part of result.fullStream) {
        if (part.type === 'text-delta') await stream.writeSSE({ event: 'text-delta', data: JSON.stringify({ type: 'text-delta', text: part.text }) });
      }
      await stream.writeSSE({ event: 'run-finish', data: JSON.stringify({ type: 'run-finish', result: { text: await result.text } }) });
    });
  });
  return startHttpServer(app, { host: '127.0.0.1', port: 0 });
}

const server = kind === 'loom' ? await loomServer() : await bareServer();
const loop = monitorEventLoopDelay({ resolution: 1 });
let cpuFrom = process.cpuUsage();
console.log(JSON.stringify({ url: server.url }));
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'measure') {
    loop.reset();
    loop.enable();
    cpuFrom = process.cpuUsage();
    console.log(JSON.stringify({ measuring: true }));
  } else if (line === 'report') {
    const cpu = process.cpuUsage(cpuFrom);
    loop.disable();
    const report: ServeReport = {
      cpu_ms: (cpu.user + cpu.system) / 1000,
      loop_p50_ms: loop.percentile(50) / 1e6,
      loop_p99_ms: loop.percentile(99) / 1e6,
      loop_max_ms: loop.max / 1e6,
    };
    console.log(JSON.stringify(report));
  } else if (line === 'exit') {
    break;
  }
}
await server.close();
