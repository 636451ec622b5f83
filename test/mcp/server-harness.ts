import { Client, type ClientOptions, SSEClientTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { ConfigSchema } from '../../src/config/index.ts';
import { createHttpApp, type HttpApp, type RunningHttpServer, startHttpServer } from '../../src/http/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { manifest } from '../support/test-kernel.ts';

/** The MCP revision of the modern (stateless) era. */
export const MODERN_REVISION = '2026-07-28';

/** A real kernel behind the daemon's HTTP app (its MCP endpoints and every check before them), on 127.0.0.1, port 0. */
export interface McpHttpServer {
  url: string;
  host: TestHost;
  /** The HTTP app the server serves (also to be asked in-process, with `app.request`). */
  app: HttpApp;
  server: RunningHttpServer;
  close(): Promise<void>;
}

/** Options for {@link startMcpHttpServer}. */
export interface McpHttpServerOptions {
  config?: Record<string, unknown>;
  env?: Record<string, string>;
  /** Pretend every client comes from this address. */
  clientAddress?: string;
  /** The daemon's stop, as the HTTP app hears it (`HttpAppOptions.closing`). */
  closing?: AbortSignal;
}

/** Opens a test host in `dir` and serves the daemon's HTTP app for it. */
export async function startMcpHttpServer(dir: string, options: McpHttpServerOptions = {}): Promise<McpHttpServer> {
  const host = await openTestHost(dir, options.config ?? {});
  const app = createHttpApp({
    kernel: host.kernel,
    config: ConfigSchema.parse(options.config ?? {}),
    env: options.env ?? {},
    clock: host.clock,
    logger: createSilentLogger(),
    version: '9.9.9-test',
    ...(options.clientAddress === undefined ? {} : { clientAddress: () => options.clientAddress ?? '' }),
    ...(options.closing === undefined ? {} : { closing: options.closing }),
  });
  const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  return {
    url: server.url,
    host,
    app,
    server,
    close: async () => {
      await server.close();
      await host.close();
    },
  };
}

/** A TOML manifest of an agent talking to the model server at `modelUrl`. */
export function agentManifest(name: string, modelUrl: string, description = '') {
  return manifest(`name = "${name}"\ndescription = "${description}"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${modelUrl}"\n`);
}

/** Which transport and protocol era a client uses. */
export type ClientKind = 'modern' | 'legacy-streamable' | 'legacy-sse';

/** Connects the official MCP client to `url` (the server's base URL) the way `kind` says. */
export async function connectClient(url: string, kind: ClientKind, options: { apiKey?: string; clientOptions?: ClientOptions } = {}): Promise<Client> {
  const authProvider = options.apiKey === undefined ? undefined : { token: () => Promise.resolve(options.apiKey) };
  const client = new Client(
    { name: 'loom-test-client', version: '1.0.0' },
    { ...(kind === 'modern' ? { versionNegotiation: { mode: { pin: MODERN_REVISION } } } : {}), ...options.clientOptions },
  );
  const transport =
    kind === 'legacy-sse'
      ? new SSEClientTransport(new URL(`${url}/mcp/sse`), authProvider === undefined ? {} : { authProvider })
      : new StreamableHTTPClientTransport(new URL(`${url}/mcp`), authProvider === undefined ? {} : { authProvider });
  await client.connect(transport);
  return client;
}

/** The text of a tool result's first content block. */
export function firstText(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  const first = content[0];
  return first?.type === 'text' ? (first.text ?? '') : '';
}

/** A promise that settles when `predicate` holds for a value pushed into the returned sink, or rejects after `timeoutMs`. */
export function waitFor<T>(predicate: (value: T) => boolean, timeoutMs = 5000): { push: (value: T) => void; done: Promise<T> } {
  let resolve: (value: T) => void = () => undefined;
  let reject: (error: Error) => void = () => undefined;
  const done = new Promise<T>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  const timer = setTimeout(() => reject(new Error(`nothing matched within ${timeoutMs} ms`)), timeoutMs);
  return {
    push: (value) => {
      if (predicate(value)) {
        clearTimeout(timer);
        resolve(value);
      }
    },
    done,
  };
}
