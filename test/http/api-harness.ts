import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigSchema } from '../../src/config/index.ts';
import type { Logger } from '../../src/contracts/index.ts';
import { createHttpApp, type RunningHttpServer, startHttpServer } from '../../src/http/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createCostCatalog } from '../../src/models/index.ts';
import { createLoomMetrics } from '../../src/telemetry/loom-metrics.ts';
import { afterEach, beforeEach } from 'vitest';
import { openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { openAiTextChunkFrame } from '../support/openai-chunk.ts';

/** A real kernel served over real HTTP on 127.0.0.1, port 0. */
export interface Api {
  url: string;
  host: TestHost;
  server: RunningHttpServer;
  /** fetch against the API; `path` starts with `/`. */
  request(path: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

/** Options for {@link startApi}. */
export interface ApiOptions {
  /** config.toml's shape, as an object. */
  config?: Record<string, unknown>;
  /** The environment the HTTP layer reads keys from. */
  env?: Record<string, string>;
  /** Pretend every client comes from this address. */
  clientAddress?: string;
  /** The host's logger (silent by default), e.g. a recording one to wait for a line. */
  logger?: Logger;
  /** Pretend the daemon binds this address (it still listens on 127.0.0.1 only). */
  bindHost?: string;
}

/** Two API keys: `admin-secret` (owner) and `helper-secret` (a user limited to agents `helper-*`). */
export const OWNER_AND_HELPER_KEYS = {
  config: {
    auth: {
      keys: [
        { name: 'admin', role: 'owner', key_env: 'ADMIN_KEY' },
        { name: 'helper-bot', role: 'user', key_env: 'HELPER_KEY', agents: ['helper-*'] },
      ],
    },
  },
  env: { ADMIN_KEY: 'admin-secret', HELPER_KEY: 'helper-secret' },
} satisfies ApiOptions;

/** Opens a test host in `dir` and serves its kernel. */
export async function startApi(dir: string, options: ApiOptions = {}): Promise<Api> {
  const host = await openTestHost(dir, options.config ?? {}, undefined, options.logger === undefined ? {} : { logger: options.logger });
  const config = ConfigSchema.parse(options.config ?? {});
  // As the daemon does: its metrics counted from the start, served at /metrics.
  const metrics = createLoomMetrics({ kernel: host.kernel, costs: createCostCatalog(config.prices) });
  const app = createHttpApp({
    kernel: host.kernel,
    config,
    metrics,
    // The daemon's one environment: the host's model keys (spawns warn without them) and the API keys.
    env: { ...TEST_KEYS, ...options.env },
    clock: host.clock,
    logger: createSilentLogger(),
    version: '9.9.9-test',
    packages: host.packages,
    cluster: host.cluster,
    skills: host.runtime.skills,
    ...(options.clientAddress === undefined ? {} : { clientAddress: () => options.clientAddress ?? '' }),
    ...(options.bindHost === undefined ? {} : { bindHost: options.bindHost }),
  });
  const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  return {
    url: server.url,
    host,
    server,
    request: (path, init) => fetch(`${server.url}${path}`, init),
    close: async () => {
      await server.close();
      metrics.dispose();
      await host.close();
    },
  };
}

/**
 * For each test of the file: the API on a fresh temporary folder with {@link OWNER_AND_HELPER_KEYS},
 * and the agent `helper-teller` on the model server at `modelUrl()`, spawned by the owner; closed
 * after the test. `api()` is the running one.
 */
export function useHelperTellerApi(prefix: string, modelUrl: () => string): { api(): Api } {
  let dir: Awaited<ReturnType<typeof makeTempDir>> | undefined;
  let api: Api | undefined;
  beforeEach(async () => {
    dir = await makeTempDir(prefix);
    api = await startApi(dir.path, OWNER_AND_HELPER_KEYS);
    const response = await api.request('/api/agents', {
      method: 'POST',
      headers: { 'content-type': 'application/toml', authorization: 'Bearer admin-secret' },
      body: agentToml('helper-teller', modelUrl()),
    });
    if (response.status !== 201) throw new Error(`spawning helper-teller answered ${response.status}: ${await response.text()}`);
  });
  afterEach(async () => {
    await api?.close();
    await dir?.remove();
  });
  return {
    api: () => {
      if (api === undefined) throw new Error('useHelperTellerApi: used outside a test');
      return api;
    },
  };
}

/** A TOML manifest of an agent talking to the model server at `modelUrl`. */
export function agentToml(name: string, modelUrl: string, extra = ''): string {
  return `name = "${name}"\n${extra}\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${modelUrl}"\n`;
}

/** One server-sent event as read off the wire. */
export interface SseEvent {
  event: string | undefined;
  data: string;
  /** Its `id:` line, when it has one (a turn's events: what `Last-Event-ID` takes). */
  id?: string;
  /** Comment lines (`: heartbeat`) arrive as events with `comment` set. */
  comment?: string;
}

/** Reads a `text/event-stream` body event by event (comments included) until it ends. */
export async function* readSse(response: Response): AsyncGenerator<SseEvent> {
  if (response.body === null) throw new Error('the response has no body');
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk as Uint8Array, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event: string | undefined;
      let id: string | undefined;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) yield { event: undefined, data: '', comment: line.slice(1).trim() };
        else if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('id:')) id = line.slice(3).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
      }
      if (event !== undefined || data.length > 0) yield { event, data: data.join('\n'), ...(id === undefined ? {} : { id }) };
    }
  }
}

/** Reads SSE events (comments skipped) until one named `name`, returning all read. @throws when the stream ends first. */
export async function readSseUntil(events: AsyncGenerator<SseEvent>, name: string): Promise<SseEvent[]> {
  const all: SseEvent[] = [];
  for (;;) {
    const next = await events.next();
    if (next.done === true) throw new Error(`the stream ended before "${name}"; got ${all.map((event) => event.event).join(', ')}`);
    if (next.value.comment !== undefined) continue;
    all.push(next.value);
    if (next.value.event === name) return all;
  }
}

/** The text of the `text-delta` events among `events`, joined. */
export function sseText(events: readonly SseEvent[]): string {
  return events
    .filter((event) => event.event === 'text-delta')
    .map((event) => (JSON.parse(event.data) as { text: string }).text)
    .join('');
}

/**
 * A model server (OpenAI chat completions) that answers its first request with one text chunk
 * (when streamed) and then never finishes, for tests of cancellation; later requests get a
 * plain (non-streamed) reply "recovered". `received` resolves when the first request arrives;
 * `closed` when the daemon gives up on it (closes the connection).
 */
export interface HangingModelServer {
  url: string;
  received: Promise<void>;
  closed: Promise<void>;
  close(): Promise<void>;
}

/** Starts a {@link HangingModelServer} on 127.0.0.1, port 0. */
export async function startHangingModelServer(): Promise<HangingModelServer> {
  let onReceived = (): void => undefined;
  let onClosed = (): void => undefined;
  const received = new Promise<void>((resolve) => (onReceived = resolve));
  const closed = new Promise<void>((resolve) => (onClosed = resolve));
  const open = new Set<ServerResponse>();
  let count = 0;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (++count > 1) {
        const reply = {
          id: 'c2',
          object: 'chat.completion',
          created: 0,
          model: 'gpt-4o',
          choices: [{ index: 0, message: { role: 'assistant', content: 'recovered' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
        };
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
        return;
      }
      open.add(response);
      response.on('close', () => {
        open.delete(response);
        onClosed();
      });
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { stream?: boolean };
      if (body.stream === true) {
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.write(openAiTextChunkFrame('partial'));
      }
      onReceived();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    received,
    closed,
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of open) response.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
