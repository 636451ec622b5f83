import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import type { Server } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { Principal } from '../../access/index.ts';
import { MAX_MCP_MESSAGE_BYTES } from '../client/security.ts';
import { type AgentDirectory, mcpThread } from './agent-tools.ts';
import { createLoomMcpServer } from './create-loom-mcp-server.ts';
import { FramedStdioServerTransport } from './framed-stdio-server-transport.ts';

/** What {@link serveMcpStdio} serves, and over which streams. */
export interface McpStdioOptions {
  directory: AgentDirectory;
  principal: Principal;
  version: string;
  stdin: Readable;
  stdout: Writable;
  /** The largest message accepted, in bytes; MAX_MCP_MESSAGE_BYTES (spec/05's 10 MB) unless a test sets another. */
  maxMessageBytes?: number;
  onerror?: (error: Error) => void;
}

/** A running stdio MCP server. */
export interface McpStdioServer {
  /** Resolves when the client closes standard input, standard output fails, or {@link close} is called. */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves Loom's agents as MCP tools and resources over stdio, in whichever era the client opens
 * with (the SDK's `serveStdio`: 2026-07-28 via `server/discover`, or a 2025-era `initialize`).
 * Spawned and killed agents are announced with `notifications/tools/list_changed` and
 * `notifications/resources/list_changed`. Only MCP messages are written to `stdout`.
 *
 * Messages are read in either framing (a JSON line, or `Content-Length` headers and a body, per
 * message) and answered in the framing of the last one received. One over the limit is read past
 * and answered with a JSON-RPC error naming the limit and its size; the connection carries on.
 */
export function serveMcpStdio(options: McpStdioOptions): McpStdioServer {
  const instances = new Set<Server>();
  // One stdio connection is one client session: its turns go into a conversation of their own.
  const thread = mcpThread(randomUUID());
  const report = (error: unknown): void => options.onerror?.(error instanceof Error ? error : new Error(String(error)));
  const transport = new FramedStdioServerTransport({
    stdin: options.stdin,
    stdout: options.stdout,
    maxMessageBytes: options.maxMessageBytes ?? MAX_MCP_MESSAGE_BYTES,
  });
  const handle = serveStdio(
    () => {
      const server = createLoomMcpServer({ directory: options.directory, principal: options.principal, thread, version: options.version });
      instances.add(server);
      server.onclose = () => instances.delete(server);
      return server;
    },
    { transport, ...(options.onerror === undefined ? {} : { onerror: options.onerror }) },
  );
  const unsubscribe = options.directory.subscribe(() => {
    for (const server of instances) {
      void server.sendToolListChanged().catch(report);
      void server.sendResourceListChanged().catch(report);
    }
  });
  let finish: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => {
    finish = resolve;
  });
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      unsubscribe();
      await handle.close().catch(report);
      finish();
    })();
    return closing;
  };
  // The transport closes on the end of standard input and on a failed write to standard output;
  // either way the server is done (an unresolved `closed` left `loom mcp` hanging on nothing).
  void transport.closed.then(() => close());
  return { closed, close };
}
