/**
 * The stdio transport of `loom mcp`, in place of the SDK's `StdioServerTransport` (which takes
 * newline-delimited JSON only and closes the connection on a message over its buffer size).
 */
import type { Readable, Writable } from 'node:stream';
import { type JSONRPCMessage, parseJSONRPCMessage, type Transport } from '@modelcontextprotocol/server';
import { frameJsonRpcMessage, type JsonRpcFraming, JsonRpcMessageReader, type JsonRpcReadPart, refusalResponse } from '../jsonrpc-message-reader.ts';

/** What {@link FramedStdioServerTransport} reads from and writes to. */
export interface FramedStdioServerTransportOptions {
  stdin: Readable;
  stdout: Writable;
  /** The largest message accepted, in bytes (MAX_MCP_MESSAGE_BYTES). */
  maxMessageBytes: number;
}

const toError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/**
 * A server transport over a pair of streams that reads both framings, per message (a JSON line,
 * or spec/05's `Content-Length` headers and body), and answers in the framing of the last message
 * received. A message over `maxMessageBytes`, or one that is no JSON-RPC, is read past and
 * answered with a JSON-RPC error (-32600, or -32700 when it is no JSON at all) carrying its id
 * when it could be found (else `null`); a reply of the client's that is too large fails the
 * server's request it answers. The connection carries on either way.
 */
export class FramedStdioServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  /** Resolves once the transport has closed (standard input ended, standard output failed, or close). */
  readonly closed: Promise<void>;

  readonly #options: FramedStdioServerTransportOptions;
  readonly #reader: JsonRpcMessageReader<JSONRPCMessage>;
  #framing: JsonRpcFraming = 'line';
  #started = false;
  #closed = false;
  /** The wait for stdout to drain that the writes made while it is full share. */
  #drained: Promise<void> | undefined;
  #resolveClosed: () => void = () => undefined;

  constructor(options: FramedStdioServerTransportOptions) {
    this.#options = options;
    this.#reader = new JsonRpcMessageReader({ maxMessageBytes: options.maxMessageBytes, parse: parseJSONRPCMessage });
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
  }

  /** The framing replies are written in: that of the last message received (`line` before any). */
  get framing(): JsonRpcFraming {
    return this.#framing;
  }

  readonly #ondata = (chunk: Buffer | string): void => {
    for (const part of this.#reader.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk)) this.#receive(part);
  };
  readonly #onstdinerror = (error: Error): void => this.onerror?.(error);
  readonly #onend = (): void => void this.close();
  readonly #onstdouterror = (error: Error): void => {
    if (this.#closed) return;
    this.onerror?.(error);
    void this.close();
  };

  start(): Promise<void> {
    if (this.#started) return Promise.reject(new Error('the stdio transport is already started'));
    this.#started = true;
    const { stdin, stdout } = this.#options;
    if (stdin.readableEnded || stdin.destroyed) setImmediate(this.#onend);
    stdin.on('data', this.#ondata);
    stdin.on('error', this.#onstdinerror);
    stdin.on('end', this.#onend);
    stdin.on('close', this.#onend);
    stdout.on('error', this.#onstdouterror);
    return Promise.resolve();
  }

  #receive(part: JsonRpcReadPart<JSONRPCMessage>): void {
    this.#framing = part.framing;
    if (part.type === 'message') {
      this.onmessage?.(part.message);
      return;
    }
    this.onerror?.(part.error);
    const response = refusalResponse(part) as JSONRPCMessage;
    // A reply of the client's (to sampling, say) that was refused fails the request it answers, here.
    if (part.kind === 'response' && part.id !== null) this.onmessage?.(response);
    else void this.send(response).catch((error: unknown) => this.onerror?.(toError(error)));
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the stdio transport is closed'));
    const { stdout } = this.#options;
    if (stdout.write(frameJsonRpcMessage(message, this.#framing))) return Promise.resolve();
    // Every write made while stdout is full waits on the same drain: one pair of listeners, however many wait.
    this.#drained ??= new Promise<void>((resolve, reject) => {
      const onError = (error: Error): void => {
        stdout.off('drain', onDrain);
        reject(error);
      };
      const onDrain = (): void => {
        stdout.off('error', onError);
        resolve();
      };
      stdout.once('error', onError);
      stdout.once('drain', onDrain);
    }).finally(() => {
      this.#drained = undefined;
    });
    return this.#drained;
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    const { stdin } = this.#options;
    stdin.off('data', this.#ondata);
    stdin.off('error', this.#onstdinerror);
    stdin.off('end', this.#onend);
    stdin.off('close', this.#onend);
    this.#options.stdout.off('error', this.#onstdouterror);
    if (stdin.listenerCount('data') === 0) stdin.pause();
    this.#reader.clear();
    this.onclose?.();
    this.#resolveClosed();
    return Promise.resolve();
  }
}
