import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createSystemClock } from '../src/clock/index.ts';
import { ConfigSchema } from '../src/config/index.ts';
import type { KernelHandle, ToolAgent } from '../src/contracts/index.ts';
import { createHttpApp, startHttpServer } from '../src/http/index.ts';
import { createSilentLogger } from '../src/logging/index.ts';
import { parseManifest } from '../src/manifest/index.ts';
import { createMcpClientManager, type McpClientManager } from '../src/mcp/client/index.ts';
import { createToolRunner } from '../src/runtime/index.ts';
import { openInstantBenchKernel } from './bench-kernel.ts';
import { createInstantModel } from './instant-model.ts';
import { summarize } from './stats.ts';

const CLIENT_WARMUP = 50;
const CLIENT_CALLS = 1000;
const SERVER_WARMUP = 20;
const SERVER_CALLS = 500;
const CONNECT_TIMEOUT_MS = 20_000;
const EVERYTHING_BIN = fileURLToPath(new URL('../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url));

/** The echo tool never reaches the kernel; any use of it is a bug in the bench. */
const unusedKernel = new Proxy({} as KernelHandle, {
  get: () => () => {
    throw new Error('the kernel is not used by this benchmark');
  },
});

const benchAgent: ToolAgent = {
  id: 'bench-agent',
  name: 'bench',
  workspace: '/tmp/loom-bench-workspaces/bench',
  capabilities: [{ kind: 'tool_all' }],
  execPolicy: { allow_shell: true, allow_network: true, allow_file_write: true },
  depth: 0,
  chain: [],
};

/** Waits (bounded) until the manager's server `name` is connected. */
async function waitConnected(manager: McpClientManager, name: string): Promise<void> {
  const deadline = performance.now() + CONNECT_TIMEOUT_MS;
  for (;;) {
    const server = manager.servers().find((entry) => entry.name === name);
    if (server?.status === 'connected') return;
    if (performance.now() > deadline)
      throw new Error(`MCP server "${name}" did not connect within ${CONNECT_TIMEOUT_MS} ms: ${server?.status} (${server?.error})`);
    await delay(10);
  }
}

/** Agent tool runner → MCP client → server-everything over stdio → back: `echo`, one call at a time. */
async function measureClientCalls(): Promise<{ durations: number[]; errors: number }> {
  const manager = createMcpClientManager({
    servers: [
      {
        name: 'everything',
        timeout_secs: 30,
        env: [],
        allow_private_network: false,
        transport: { type: 'stdio', command: process.execPath, args: [EVERYTHING_BIN, 'stdio'] },
      },
    ],
    env: process.env,
    logger: createSilentLogger(),
    clock: createSystemClock(),
  });
  manager.start();
  try {
    await waitConnected(manager, 'everything');
    const runner = createToolRunner({
      tools: () => manager.tools(),
      kernel: unusedKernel,
      clock: createSystemClock(),
      logger: createSilentLogger(),
      env: {},
      audit: () => Promise.resolve(),
    });
    const signal = new AbortController().signal;
    const durations: number[] = [];
    let errors = 0;
    for (let index = 0; index < CLIENT_WARMUP + CLIENT_CALLS; index += 1) {
      const message = `hello ${index}`;
      const started = performance.now();
      try {
        const outcome = await runner.run(
          { toolCallId: `call-${index}`, toolName: 'mcp_everything_echo', input: { message } },
          { agent: benchAgent, filter: { allowlist: [], blocklist: [] }, settings: {}, signal },
        );
        if (outcome.result.isError === true || outcome.result.text !== `Echo: ${message}`) errors += 1;
      } catch {
        errors += 1;
      }
      if (index >= CLIENT_WARMUP) durations.push(performance.now() - started);
    }
    return { durations, errors };
  } finally {
    await manager.stop();
  }
}

/** Official MCP client → `POST /mcp` of an in-process daemon → an agent's turn (instant model) → back. */
async function measureServerCalls(): Promise<{ durations: number[]; errors: number; protocol: string }> {
  const model = createInstantModel();
  const bench = await openInstantBenchKernel(model);
  const config = ConfigSchema.parse({ rate_limit: { per_minute: 10_000_000 } });
  const server = await startHttpServer(createHttpApp({ kernel: bench.kernel, config, env: {}, clock: createSystemClock(), logger: createSilentLogger() }), {
    host: '127.0.0.1',
    port: 0,
  });
  let client: Client | undefined;
  try {
    await bench.kernel.spawn(parseManifest(`name = "mcp-bench"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\n`, { source: 'bench.toml' }).manifest);
    client = new Client({ name: 'loom-bench', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    const durations: number[] = [];
    let errors = 0;
    for (let index = 0; index < SERVER_WARMUP + SERVER_CALLS; index += 1) {
      const started = performance.now();
      try {
        const result = await client.callTool({ name: 'loom_agent_mcp_bench', arguments: { message: 'hello' } });
        const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
        if (result.isError === true || content[0]?.text !== 'ok') errors += 1;
      } catch {
        errors += 1;
      }
      if (index >= SERVER_WARMUP) durations.push(performance.now() - started);
    }
    return { durations, errors, protocol: client.getNegotiatedProtocolVersion() ?? 'unknown' };
  } finally {
    await client?.close().catch(() => undefined);
    await server.close();
    await bench.dispose();
  }
}

/**
 * `mcp-call`: the round trip of an MCP tool call from an agent's tool runner to a stdio server
 * (server-everything's `echo`) and back; and of a `tools/call` from the official MCP client to
 * the daemon's `/mcp` (an agent tool, answered by an in-process model).
 */
export async function mcpCallBench(): Promise<Record<string, unknown>> {
  const clientSide = await measureClientCalls();
  const serverSide = await measureServerCalls();
  const client = summarize(clientSide.durations);
  const served = summarize(serverSide.durations);
  return {
    bench: 'mcp-call',
    p50_ms: client.p50_ms,
    p99_ms: client.p99_ms,
    ops_per_s: client.ops_per_s,
    samples: client.samples,
    errors: clientSide.errors,
    server_p50_ms: served.p50_ms,
    server_p99_ms: served.p99_ms,
    server_ops_per_s: served.ops_per_s,
    server_samples: served.samples,
    server_errors: serverSide.errors,
    server_protocol: serverSide.protocol,
    includes:
      'client: tool runner checks, MCP client, stdio to server-everything echo and back; server: official client over Streamable HTTP to /mcp, auth, an agent turn with an instant model, reply',
  };
}
