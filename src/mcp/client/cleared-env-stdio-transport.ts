/**
 * A stdio client transport whose child gets exactly the environment it is given. The SDK's
 * `StdioClientTransport` always adds HOME, LOGNAME, SHELL, TERM and USER from the daemon's
 * environment, which spec/05's cleared environment forbids, so Loom spawns the child itself and
 * uses the SDK's own framing (`ReadBuffer`, `serializeMessage`) for the newline-delimited JSON-RPC.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { ReadBuffer, serializeMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';

/** What the child is started from. */
export interface ClearedEnvStdioOptions {
  command: string;
  args: readonly string[];
  /** The child's whole environment. */
  env: Record<string, string>;
  /** The largest message accepted from the child, in bytes; a larger one closes the transport. */
  maxMessageBytes: number;
}

/** Waits for `promise` at most `ms` milliseconds (a real timer: process teardown, not logic). */
async function within(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms).unref()))]);
  clearTimeout(timer);
}

/** A child process spoken to over stdin/stdout, with a cleared environment. */
export class ClearedEnvStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  readonly #options: ClearedEnvStdioOptions;
  readonly #buffer: ReadBuffer;
  #child: ChildProcess | undefined;
  #closed = false;

  constructor(options: ClearedEnvStdioOptions) {
    this.#options = options;
    this.#buffer = new ReadBuffer({ maxBufferSize: options.maxMessageBytes });
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
        try {
          this.#buffer.append(chunk);
        } catch (error) {
          // A message over the size limit: refuse it and drop the connection.
          this.onerror?.(error instanceof Error ? error : new Error(String(error)));
          void this.close();
          return;
        }
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.#buffer.readMessage();
          } catch (error) {
            this.onerror?.(error instanceof Error ? error : new Error(String(error)));
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
    });
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
    this.#buffer.clear();
    this.onclose?.();
  }
}
