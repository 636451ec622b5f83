import type { Readable, Writable } from 'node:stream';
import type { Server } from '@modelcontextprotocol/server';
import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import type { Principal } from '../../access/index.ts';
import type { AgentDirectory } from './agent-tools.ts';
import { createLoomMcpServer } from './create-loom-mcp-server.ts';

/** What {@link serveMcpStdio} serves, and over which streams. */
export interface McpStdioOptions {
  directory: AgentDirectory;
  principal: Principal;
  version: string;
  stdin: Readable;
  stdout: Writable;
  onerror?: (error: Error) => void;
}

/** A running stdio MCP server. */
export interface McpStdioServer {
  /** Resolves when the client closes standard input (or {@link close} is called). */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves Loom's agents as MCP tools and resources over stdio, in whichever era the client opens
 * with (the SDK's `serveStdio`: 2026-07-28 via `server/discover`, or a 2025-era `initialize`).
 * Spawned and killed agents are announced with `notifications/tools/list_changed` and
 * `notifications/resources/list_changed`. Only MCP messages are written to `stdout`.
 */
export function serveMcpStdio(options: McpStdioOptions): McpStdioServer {
  const instances = new Set<Server>();
  const report = (error: unknown): void => options.onerror?.(error instanceof Error ? error : new Error(String(error)));
  const handle = serveStdio(
    () => {
      const server = createLoomMcpServer({ directory: options.directory, principal: options.principal, version: options.version });
      instances.add(server);
      server.onclose = () => instances.delete(server);
      return server;
    },
    { transport: new StdioServerTransport(options.stdin, options.stdout), ...(options.onerror === undefined ? {} : { onerror: options.onerror }) },
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
  options.stdin.once('end', () => void close());
  options.stdin.once('close', () => void close());
  return { closed, close };
}
