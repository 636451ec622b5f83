/**
 * A stdio client transport whose child gets exactly the environment it is given. The SDK's
 * `StdioClientTransport` always adds HOME, LOGNAME, SHELL, TERM and USER from the daemon's
 * environment, which spec/05's cleared environment forbids, so Loom spawns the child itself. It
 * sends newline-delimited JSON-RPC (the SDK's `serializeMessage`) and reads with Loom's bounded
 * reader, which takes `Content-Length` framing too and refuses one message over the limit alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { parseJSONRPCMessage, serializeMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import { JsonRpcMessageReader, type JsonRpcReadPart, refusalResponse } from '../jsonrpc-message-reader.ts';
import { McpMessageTooLargeError } from '../mcp-message-too-large-error.ts';

/** What the child is started from. */
export interface ClearedEnvStdioOptions {
  command: string;
  args: readonly string[];
  /** The child's whole environment. */
  env: Record<string, string>;
  /**
   * The largest message accepted from the child, in bytes. A larger reply fails the request it
   * answers (a JSON-RPC error with McpMessageTooLargeError's message, delivered in its place);
   * the connection stays up.
   */
  maxMessageBytes: number;
}

/** Waits for `promise` at most `ms` milliseconds (a real timer: process teardown, not logic). */
async function within(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms).unref()))]);
  clearTimeout(timer);
}

/**
 * A child process spoken to over stdin/stdout, with a cleared environment.
 *
 * It has `pid` but deliberately no `stderr` accessor: the MCP SDK tells a stdio transport by both
 * (`detectProbeTransportKind`), and on one it takes a `server/discover` probe that times out for
 * a 2025-era server. A slow 2026 server would then be connected in the 2025 era; as it is, a
 * timeout comes back as a timeout, which the client manager asks again in the same era
 * (decision 0034; test/mcp/client-era.test.ts holds it with a slow stdio server).
 */
export class ClearedEnvStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  readonly #options: ClearedEnvStdioOptions;
  readonly #reader: JsonRpcMessageReader<JSONRPCMessage>;
  #child: ChildProcess | undefined;
  #closed = false;

  constructor(options: ClearedEnvStdioOptions) {
    this.#options = options;
    this.#reader = new JsonRpcMessageReader({ maxMessageBytes: options.maxMessageBytes, parse: parseJSONRPCMessage });
  }

  /** The child's process id, once started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  start(): Promise<void> {
    if (this.#child !== undefined) throw new Error('the stdio transport is already started');
    return new Promise((resolve, reject) => {
      const child = spawn(this.#options.command, [...this.#options.args], {
        env: this.#options.env,
        stdio: ['pipe', 'pipe', 'ignore'],
        shell: false,
        windowsHide: true,
      });
      this.#child = child;
      child.once('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.once('spawn', () => resolve());
      child.once('close', () => this.#finish());
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('data', (chunk: Buffer) => {
        for (const part of this.#reader.push(chunk)) this.#receive(part);
      });
    });
  }

  /**
   * One part read from the child. A refused reply (over the limit, or no JSON-RPC) whose id is
   * known is handed on as the error response to that id, so the SDK fails exactly that request;
   * a refused request from the server is answered with the error; anything else is reported.
   */
  #receive(part: JsonRpcReadPart<JSONRPCMessage>): void {
    if (part.type === 'message') {
      this.onmessage?.(part.message);
      return;
    }
    this.onerror?.(part.error);
    if (part.id === null) return;
    const response = refusalResponse(part) as JSONRPCMessage;
    if (part.kind === 'request') void this.send(response).catch((error: unknown) => this.onerror?.(error instanceof Error ? error : new Error(String(error))));
    // An oversized message of no known kind is taken for a reply (what a client mostly receives);
    // a stray JSON line that merely has an "id" (a server logging to stdout) fails no request.
    else if (part.kind === 'response' || part.error instanceof McpMessageTooLargeError) this.onmessage?.(response);
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.#child?.stdin;
      if (stdin === undefined || stdin === null || this.#closed) {
        reject(new Error('not connected'));
        return;
      }
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /** Ends stdin, then SIGTERM after 2 s, then SIGKILL after 2 s more. */
  async close(): Promise<void> {
    const child = this.#child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
      this.#finish();
      return;
    }
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
    try {
      child.stdin?.end();
    } catch {
      // already closed
    }
    await within(exited, 2_000);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await within(exited, 2_000);
    }
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    this.#finish();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#reader.clear();
    this.onclose?.();
  }
}
