import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Capability, JsonValue, KernelHandle, Logger, ToolContext } from '../../src/contracts/index.ts';

/** A KernelHandle for tools that must not touch the kernel: every method throws. */
export const unusedKernel: KernelHandle = {
  spawnAgent: () => Promise.reject(new Error('not used')),
  messageAgent: () => Promise.reject(new Error('not used')),
  killAgent: () => Promise.reject(new Error('not used')),
  listAgents: () => {
    throw new Error('not used');
  },
  memoryPut: () => Promise.reject(new Error('not used')),
  generateText: () => {
    throw new Error('generateText is not used here');
  },
  memoryFind: () => Promise.reject(new Error('not used')),
};

const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};

/** Options for a hand-built ToolContext. */
export interface WebToolContextOptions {
  capabilities?: readonly Capability[];
  settings?: Record<string, JsonValue>;
  env?: Record<string, string | undefined>;
  signal?: AbortSignal;
}

/** A ToolContext for the web tools, built by hand: an agent with the given grants, no kernel. */
export function webToolContext(options: WebToolContextOptions = {}): ToolContext {
  return {
    signal: options.signal ?? new AbortController().signal,
    agent: {
      id: 'agent-1',
      name: 'tester',
      workspace: '/tmp/loom-web-tests',
      capabilities: options.capabilities ?? [],
      execPolicy: { allow_shell: false, allow_network: true, allow_file_write: false },
      depth: 0,
      chain: [],
    },
    kernel: unusedKernel,
    logger: silentLogger,
    settings: options.settings ?? {},
    env: options.env ?? {},
  };
}

/** A request the test server received, with its body read. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A real HTTP server on 127.0.0.1, port 0, answering with `handler`. */
export interface TestServer {
  port: number;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  received: ReceivedRequest[];
  close(): Promise<void>;
}

/** Starts a TestServer; `handler` gets each request with its body already read. */
export async function startTestServer(handler: (request: ReceivedRequest, response: ServerResponse) => void): Promise<TestServer> {
  const received: ReceivedRequest[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const entry = { method: request.method ?? '', url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(entry);
      handler(entry, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The explicit grant that lets the web tools reach a test server on loopback. */
export function grantLoopback(server: TestServer): Capability[] {
  return [{ kind: 'net_connect', pattern: `127.0.0.1:${server.port}` }];
}
