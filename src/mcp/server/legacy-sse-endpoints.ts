import { randomUUID } from 'node:crypto';
import { type JSONRPCMessage, parseJSONRPCMessage, type Server, type Transport } from '@modelcontextprotocol/server';
import { type Principal, principalKey } from '../../access/index.ts';
import type { McpRequestOrigin } from './mcp-principal.ts';

/** Messages larger than this are refused (spec/05: 10 MB). */
export const MAX_MCP_MESSAGE_BYTES = 10 * 1024 * 1024;

/** How often an idle SSE stream gets a comment line, so proxies keep it open. */
const KEEPALIVE_MS = 15_000;

const encoder = new TextEncoder();

/**
 * The server side of one 2024-11-05 HTTP+SSE connection: messages to the client are `message`
 * events on the stream; messages from the client arrive through `POST {messagesPath}?sessionId=`.
 * Only the framing lives here — JSON-RPC is the SDK's (`Server` over this `Transport`).
 */
class SseConnectionTransport implements Transport {
  readonly sessionId: string;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined;
  private controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  private closed = false;

  constructor(sessionId: string) {
    this.sessionId = sessionId;
  }

  attach(controller: ReadableStreamDefaultController<Uint8Array>): void {
    this.controller = controller;
  }

  write(event: string | undefined, data: string): void {
    if (this.closed || this.controller === undefined) return;
    const lines = data
      .split('\n')
      .map((line) => `data: ${line}`)
      .join('\n');
    this.controller.enqueue(encoder.encode(`${event === undefined ? '' : `event: ${event}\n`}${lines}\n\n`));
  }

  comment(text: string): void {
    if (!this.closed) this.controller?.enqueue(encoder.encode(`: ${text}\n\n`));
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the SSE connection is closed'));
    this.write('message', JSON.stringify(message));
    return Promise.resolve();
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    try {
      this.controller?.close();
    } catch {
      // the client already went away
    }
    this.onclose?.();
    return Promise.resolve();
  }
}

/** The 2024-11-05 HTTP+SSE endpoints: one MCP server instance per open stream. */
export interface LegacySseEndpoints {
  /** `GET …/sse`: opens the stream; its first event names the message endpoint. */
  open(request: Request, origin: McpRequestOrigin): Promise<Response>;
  /** `POST …/messages?sessionId=…`: one JSON-RPC message for the stream's server; 202 once accepted. `body`: the request's body, when read already. */
  post(request: Request, principal: Principal, body?: string): Promise<Response>;
  /** Sends `notifications/tools/list_changed` and `notifications/resources/list_changed` on every open stream. */
  listsChanged(): void;
  /** Closes every open stream. */
  close(): Promise<void>;
}

export interface LegacySseOptions {
  /** A fresh server for a principal's new stream, whose session id is `sessionId`. */
  factory: (origin: McpRequestOrigin, sessionId: string) => Server;
  /** The path the `endpoint` event names (the session id is appended as a query parameter). */
  messagesPath: string;
  onerror?: (error: Error) => void;
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive' };

const plain = (status: number, text: string): Response => new Response(text, { status, headers: { 'content-type': 'text/plain; charset=utf-8' } });

/** Builds the legacy HTTP+SSE endpoints (MCP 2024-11-05), for clients that predate Streamable HTTP. */
export function createLegacySseEndpoints(options: LegacySseOptions): LegacySseEndpoints {
  // Each with the key of the principal that opened it (see `principalKey`).
  const connections = new Map<string, { transport: SseConnectionTransport; server: Server; owner: string }>();

  return {
    async open(request, origin) {
      // A HEAD gets the stream's headers alone: no session is opened for an answer whose body is dropped.
      if (request.method === 'HEAD') return new Response(null, { headers: SSE_HEADERS });
      const transport = new SseConnectionTransport(randomUUID());
      // A turn asked for on this stream is charged to whoever opened it (the same client).
      const server = options.factory(origin, transport.sessionId);
      const keepalive = setInterval(() => transport.comment('keepalive'), KEEPALIVE_MS);
      keepalive.unref();
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          transport.attach(controller);
        },
        cancel() {
          void transport.close();
        },
      });
      transport.onclose = () => {
        clearInterval(keepalive);
        connections.delete(transport.sessionId);
        void server.close().catch(() => undefined);
      };
      try {
        await server.connect(transport);
      } catch (error) {
        await transport.close();
        throw error;
      }
      connections.set(transport.sessionId, { transport, server, owner: principalKey(origin.principal) });
      request.signal.addEventListener('abort', () => void transport.close(), { once: true });
      transport.write('endpoint', `${options.messagesPath}?sessionId=${encodeURIComponent(transport.sessionId)}`);
      return new Response(stream, { headers: SSE_HEADERS });
    },

    async post(request, principal, body) {
      const sessionId = new URL(request.url).searchParams.get('sessionId');
      const connection = sessionId === null ? undefined : connections.get(sessionId);
      // Another principal's session (another name, role or agents) is answered as unknown: session ids are not capabilities.
      if (connection === undefined || connection.owner !== principalKey(principal)) return plain(404, 'no open MCP SSE session with this sessionId');
      const length = Number(request.headers.get('content-length') ?? '0');
      if (length > MAX_MCP_MESSAGE_BYTES) return plain(413, `MCP messages are limited to ${MAX_MCP_MESSAGE_BYTES} bytes`);
      const text = body ?? (await request.text());
      if (Buffer.byteLength(text, 'utf8') > MAX_MCP_MESSAGE_BYTES) return plain(413, `MCP messages are limited to ${MAX_MCP_MESSAGE_BYTES} bytes`);
      let message: JSONRPCMessage;
      try {
        message = parseJSONRPCMessage(JSON.parse(text));
      } catch (error) {
        options.onerror?.(error instanceof Error ? error : new Error(String(error)));
        return plain(400, 'the body is not a JSON-RPC message');
      }
      connection.transport.onmessage?.(message);
      return plain(202, 'Accepted');
    },

    listsChanged() {
      const report = (error: unknown): void => options.onerror?.(error instanceof Error ? error : new Error(String(error)));
      for (const { server } of connections.values()) {
        void server.sendToolListChanged().catch(report);
        void server.sendResourceListChanged().catch(report);
      }
    },

    async close() {
      await Promise.all([...connections.values()].map(({ transport }) => transport.close()));
    },
  };
}
