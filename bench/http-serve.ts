// A server of the http-turn benchmark, in a process of its own so that each server's figures are
// its own (run in the bench's process, whichever server ran second found the code it shares with
// the first compiled, and gained 10-20 %). `node bench/http-serve.ts loom|bare` prints its URL as
// one JSON line, then answers lines on standard input: `measure` starts counting its CPU time and
// event-loop delay (and says so), `report` prints them as one JSON line, `requests` prints what
// its model was asked in the first chats of `chat-0` (see `FirstRequests`), `exit` closes it.
import { createInterface } from 'node:readline';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { type ModelMessage, streamText } from 'ai';
import { createSystemClock } from '../src/clock/index.ts';
import { ConfigSchema } from '../src/config/index.ts';
import { createHttpApp, startHttpServer } from '../src/http/index.ts';
import { createSilentLogger } from '../src/logging/index.ts';
import { withoutMetadata } from '../src/kernel/turn-record.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { withStabilityGuidelines } from '../src/runtime/index.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';

/** What a server reports of the chats it served since `measure`. */
export interface ServeReport {
  cpu_ms: number;
  loop_p50_ms: number;
  loop_p99_ms: number;
  loop_max_ms: number;
}

/** How many of `chat-0`'s first model requests each server keeps for the bench to compare. */
const COMPARED_REQUESTS = 3;

/**
 * `chat-0`'s first model requests: the call's settings, then each message (role, parts and
 * provider options). The bench checks that the bare server asks the model what Loom asks it, so
 * that the floor differs from Loom by Loom alone. Not compared: the call's signal and the values of
 * its provider options (the prompt-cache key is the session's in Loom, the agent's name here), and
 * Loom's own options on its messages (under `loom`, the turn's record: no provider reads them, the
 * SDK carries them along, Loom's work counted as Loom's).
 */
const firstRequests: string[][] = [];

function noteRequest(options: LanguageModelV4CallOptions): void {
  const { prompt } = options;
  const system = prompt[0];
  if (firstRequests.length >= COMPARED_REQUESTS || system?.role !== 'system' || !system.content.startsWith('You are chat-0.')) return;
  const { prompt: _prompt, abortSignal: _signal, providerOptions, ...settings } = options;
  firstRequests.push([
    JSON.stringify({ ...settings, providerOptions: Object.entries(providerOptions ?? {}).map(([provider, values]) => [provider, Object.keys(values)]) }),
    // A prompt's messages have a model message's shape: Loom's own options come off as a code module's history has them off.
    ...withoutMetadata(prompt as unknown as ModelMessage[]).map((message) => JSON.stringify(message)),
  ]);
}

const [kind, agentsText] = process.argv.slice(2);
const agents = Number(agentsText);
if ((kind !== 'loom' && kind !== 'bare') || !Number.isInteger(agents)) {
  console.error('usage: node bench/http-serve.ts loom|bare <agents>');
  process.exit(2);
}

/** Loom: the kernel and its HTTP app on an in-process model, one agent per load slot (`chat-<slot>`). */
async function loomServer(): Promise<{ url: string; close(): Promise<void> }> {
  const bench = await openInstantBenchKernel(createInstantModel({ onCall: noteRequest }));
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
 * AI SDK's `streamText` on the instant model, the same event names), asking the model what Loom
 * asks it: each agent's conversation, kept in memory, after the system prompt Loom gives an agent
 * without one of its own. Nothing is checked or stored.
 */
async function bareServer(): Promise<{ url: string; close(): Promise<void> }> {
  const model = createInstantModel({ onCall: noteRequest });
  const conversations = new Map<string, ModelMessage[]>();
  const app = new Hono();
  app.post('/api/agents/:agent/messages', async (c) => {
    const agent = c.req.param('agent');
    const { message } = await c.req.json<{ message: string }>();
    // One load slot per agent, its chats one after another: a conversation is never sent to twice at once.
    const conversation = conversations.get(agent) ?? [];
    conversations.set(agent, conversation);
    conversation.push({ role: 'user', content: message });
    return streamSSE(c, async (stream) => {
      await stream.writeSSE({ event: 'run-start', data: JSON.stringify({ type: 'run-start', agentName: agent }) });
      // Loom's settings for an agent whose manifest sets none: its temperature and output limit,
      // the tools it holds (none), and a key for the provider to cache the prompt's prefix under.
      const result = streamText({
        model,
        system: withStabilityGuidelines(`You are ${agent}.`),
        messages: [...conversation],
        temperature: 0.7,
        maxOutputTokens: 4096,
        tools: {},
        providerOptions: { openai: { promptCacheKey: agent } },
        maxRetries: 0,
      });
      for await (const part of result.fullStream) {
        if (part.type === 'text-delta') await stream.writeSSE({ event: 'text-delta', data: JSON.stringify({ type: 'text-delta', text: part.text }) });
      }
      conversation.push(...(await result.response).messages);
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
  } else if (line === 'requests') {
    console.log(JSON.stringify(firstRequests));
  } else if (line === 'exit') {
    break;
  }
}
await server.close();
