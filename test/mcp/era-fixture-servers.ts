/**
 * MCP servers for the era negotiation tests, on the official server SDK: a 2026-07-28-capable
 * Streamable HTTP server on 127.0.0.1 that records every method it receives and can hold its
 * answers back (a slow or silent server), and the command of a stdio server that exits on
 * anything before `initialize` (the shape of servers built on SDKs that take nothing else first).
 */
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';

/** One request as the server received it. */
export interface WireRequest {
  /** The JSON-RPC method, or `(none)` for a response or a body that is not JSON-RPC. */
  method: string;
  /** The `MCP-Protocol-Version` header, if sent. */
  protocolVersion: string | undefined;
}

/** A running fixture server. */
export interface EraFixtureServer {
  url: string;
  /** Every request received, in order. */
  requests: WireRequest[];
  /**
   * Decides how long the answer to the `index`-th request (0-based) is held back: a number of
   * milliseconds, or `'until released'` to hold it until {@link release}.
   */
  hold: (index: number) => number | 'until released';
  /** Answers every held request now, and holds nothing more. */
  release(): void;
  close(): Promise<void>;
}

function bodyOf(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.once('end', () => resolve(Buffer.concat(chunks)));
    request.once('error', reject);
  });
}

function methodOf(body: Buffer): string {
  try {
    const message = JSON.parse(body.toString('utf8')) as { method?: unknown };
    return typeof message.method === 'string' ? message.method : '(none)';
  } catch {
    return '(none)';
  }
}

/** A 2026-07-28-capable MCP server (it serves the 2025 revisions too) with one tool, `hello`. */
export async function startEraFixtureServer(): Promise<EraFixtureServer> {
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'loom-era-fixture', version: '1.0.0' });
    server.registerTool('hello', { description: 'Says hello', inputSchema: z.object({}) }, () => ({ content: [{ type: 'text' as const, text: 'hello' }] }));
    return server;
  });
  const requests: WireRequest[] = [];
  const held = new Set<() => void>();
  let releasedAll = false;
  const fixture: EraFixtureServer = {
    url: '',
    requests,
    hold: () => 0,
    release() {
      releasedAll = true;
      for (const answer of held) answer();
      held.clear();
    },
    async close() {
      fixture.release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: HttpServer = createServer((request, response) => {
    void (async () => {
      const body = await bodyOf(request);
      const index = requests.length;
      const header = request.headers['mcp-protocol-version'];
      requests.push({
        method: request.method === 'POST' ? methodOf(body) : `(${request.method ?? 'GET'})`,
        protocolVersion: Array.isArray(header) ? header[0] : header,
      });
      const hold = releasedAll ? 0 : fixture.hold(index);
      if (hold === 'until released') {
        await new Promise<void>((resolve) => held.add(resolve));
      } else if (hold > 0) {
        // The slow server's own delay (what is under test is the client waiting for it).
        await new Promise<void>((resolve) => {
          const answer = (): void => {
            clearTimeout(timer);
            held.delete(answer);
            resolve();
          };
          const timer = setTimeout(answer, hold);
          held.add(answer);
        });
      }
      if (response.destroyed) return;
      const headers = new Headers();
      for (const [name, value] of Object.entries(request.headers)) if (typeof value === 'string') headers.set(name, value);
      const answer = await handler.fetch(
        new Request(new URL(request.url ?? '/', fixture.url), { method: request.method ?? 'GET', headers, ...(request.method === 'POST' ? { body } : {}) }),
      );
      response.writeHead(answer.status, Object.fromEntries(answer.headers));
      if (answer.body === null) response.end();
      else Readable.fromWeb(answer.body as never).pipe(response);
    })().catch(() => {
      if (!response.headersSent) response.writeHead(500);
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fixture.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return fixture;
}

/** The stdio server that exits on a first message other than `initialize`; it appends each first method it reads to the file in its first argument. */
export const EXIT_ON_PROBE_SERVER = fileURLToPath(new URL('./exit-on-probe-server.ts', import.meta.url));

/** The stdio 2026-07-28 server whose first answer is held for the milliseconds of its first argument. */
export const SLOW_FIRST_ANSWER_SERVER = fileURLToPath(new URL('./slow-first-answer-server.ts', import.meta.url));
