/**
 * One bounded reader of JSON-RPC messages from a byte stream, for both ends of Loom's stdio MCP:
 * the client transport reading a server's stdout and `loom mcp` reading its stdin. It takes
 * either framing, told apart per message (spec/05 frames stdio with `Content-Length` headers; the
 * MCP stdio binding with newlines), and never holds more than the limit of one message: a larger
 * one is read past (its head and tail kept, bounded, to find its `"id"`) and reported as
 * `oversized`, so the connection and every other message carry on.
 */
import { McpMessageTooLargeError } from './mcp-message-too-large-error.ts';

/** How a message was framed: one JSON line, or `Content-Length` headers and a body. */
export type JsonRpcFraming = 'line' | 'content-length';

/** A JSON-RPC id as far as the reader could recover it; `null` when it could not. */
export type JsonRpcId = string | number | null;

/** What a message looked like, from its keys: a request or notification (`method`), a response (`result`/`error`), or unknown. */
export type JsonRpcMessageKind = 'request' | 'response' | 'unknown';

/** One thing read: a message, or a message refused (over the limit, not JSON, not JSON-RPC). */
export type JsonRpcReadPart<M> =
  | { type: 'message'; message: M; framing: JsonRpcFraming }
  | {
      type: 'refused';
      /** JSON-RPC's code for the answer: -32600 (Invalid Request) or -32700 (Parse error, nothing parseable). */
      code: -32600 | -32700;
      error: Error;
      id: JsonRpcId;
      kind: JsonRpcMessageKind;
      framing: JsonRpcFraming;
    };

/** How {@link JsonRpcMessageReader} reads. */
export interface JsonRpcMessageReaderOptions<M> {
  /** The largest message accepted, in bytes (MAX_MCP_MESSAGE_BYTES in Loom). */
  maxMessageBytes: number;
  /** Checks a parsed value is a JSON-RPC message (the SDK's `parseJSONRPCMessage`); throws when not. */
  parse: (value: unknown) => M;
}

/** How much of an oversized message's start and end is kept to find its id. */
const KEPT_BYTES = 16 * 1024;
/** The most header bytes a `Content-Length` message may have before its blank line. */
const MAX_HEADER_BYTES = 8 * 1024;
const PREFIX = 'content-length:';
const NEWLINE = 0x0a;

/**
 * The bytes of one message: all of them while within `max`, then only the first and last 16 KiB
 * (to find its id with {@link recoverJsonRpcId}) and the count.
 */
export class BoundedBytes {
  size = 0;
  #chunks: Buffer[] = [];
  #head: Buffer | undefined;
  #tail = Buffer.alloc(0);
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get over(): boolean {
    return this.size > this.#max;
  }

  add(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    this.size += bytes.length;
    if (this.#head === undefined && this.size <= this.#max) {
      this.#chunks.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
      return;
    }
    if (this.#head === undefined) {
      // Over the limit now: keep the first and last KEPT_BYTES, let go of the rest (no copy of the whole).
      const chunks = [...this.#chunks, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)];
      this.#chunks = [];
      this.#head = Buffer.from(Buffer.concat(firstBytes(chunks, KEPT_BYTES)).subarray(0, KEPT_BYTES));
      this.#tail = Buffer.from(Buffer.concat(firstBytes(chunks.reverse(), KEPT_BYTES).reverse()).subarray(-KEPT_BYTES));
      return;
    }
    this.#tail = Buffer.from(Buffer.concat([this.#tail, Buffer.from(bytes.subarray(-KEPT_BYTES))]).subarray(-KEPT_BYTES));
  }

  /** The whole message (only when not over). */
  whole(): Buffer {
    return Buffer.concat(this.#chunks);
  }

  head(): string {
    return (this.#head ?? Buffer.alloc(0)).toString('utf8');
  }

  tail(): string {
    return this.#tail.toString('utf8');
  }
}

/** The leading chunks of `chunks` that together hold at least `count` bytes. */
function firstBytes(chunks: Buffer[], count: number): Buffer[] {
  const taken: Buffer[] = [];
  let total = 0;
  for (const chunk of chunks) {
    if (total >= count) break;
    taken.push(chunk);
    total += chunk.length;
  }
  return taken;
}

type State =
  | { kind: 'start'; probe: Buffer }
  | { kind: 'line'; collector: BoundedBytes }
  | { kind: 'headers'; bytes: Buffer }
  | { kind: 'body'; remaining: number; collector: BoundedBytes }
  | { kind: 'skip-line' };

/**
 * Reads JSON-RPC messages from chunks of bytes. Each message is framed on its own: one starting
 * with `Content-Length:` is headers, a blank line and that many bytes; anything else is a line.
 * A message over `maxMessageBytes` is drained without being held and comes out as `refused` with
 * a {@link McpMessageTooLargeError}; text that is no JSON, or JSON that is no JSON-RPC message,
 * comes out as `refused` too.
 *
 * @example
 * const reader = new JsonRpcMessageReader({ maxMessageBytes: MAX_MCP_MESSAGE_BYTES, parse: parseJSONRPCMessage });
 * stdin.on('data', (chunk: Buffer) => { for (const part of reader.push(chunk)) handle(part); });
 */
export class JsonRpcMessageReader<M> {
  readonly #options: JsonRpcMessageReaderOptions<M>;
  #state: State = { kind: 'start', probe: Buffer.alloc(0) };

  constructor(options: JsonRpcMessageReaderOptions<M>) {
    this.#options = options;
  }

  /** Takes the next chunk; returns the messages (and refusals) it completed, in order. */
  push(chunk: Buffer): JsonRpcReadPart<M>[] {
    const parts: JsonRpcReadPart<M>[] = [];
    let offset = 0;
    while (offset < chunk.length) {
      const state = this.#state;
      switch (state.kind) {
        case 'start': {
          // Blank bytes between messages (a Content-Length body's trailing newline, empty lines) are skipped.
          if (state.probe.length === 0) {
            while (offset < chunk.length && isBlank(chunk[offset] ?? 0)) offset += 1;
            if (offset === chunk.length) break;
          }
          // Enough of the message's start to tell its framing: where it stops matching "Content-Length:", or all of that.
          let end = offset;
          let probe = state.probe;
          while (end < chunk.length && probe.length + (end - offset) < PREFIX.length) {
            const at = probe.length + (end - offset);
            if (String.fromCharCode(chunk[end] ?? 0).toLowerCase() !== PREFIX[at]) break;
            end += 1;
          }
          probe = Buffer.concat([probe, chunk.subarray(offset, end)]);
          offset = end;
          if (probe.length === PREFIX.length) {
            this.#state = { kind: 'headers', bytes: probe };
          } else if (offset < chunk.length) {
            const collector = new BoundedBytes(this.#options.maxMessageBytes + 1);
            collector.add(probe);
            this.#state = { kind: 'line', collector };
          } else {
            this.#state = { kind: 'start', probe };
          }
          break;
        }
        case 'line': {
          const newline = chunk.indexOf(NEWLINE, offset);
          state.collector.add(chunk.subarray(offset, newline === -1 ? chunk.length : newline));
          if (newline === -1) {
            offset = chunk.length;
            break;
          }
          offset = newline + 1;
          this.#state = { kind: 'start', probe: Buffer.alloc(0) };
          parts.push(this.#finish(state.collector, 'line'));
          break;
        }
        case 'headers': {
          const before = state.bytes.length;
          const bytes = Buffer.concat([state.bytes, chunk.subarray(offset, offset + MAX_HEADER_BYTES + 4)]);
          const blank = headerEnd(bytes);
          if (blank === undefined) {
            if (bytes.length > MAX_HEADER_BYTES) {
              parts.push(
                this.#refusal(-32700, new Error(`MCP message headers are over ${MAX_HEADER_BYTES.toLocaleString('en-US')} bytes; refused`), 'content-length'),
              );
              this.#state = { kind: 'skip-line' };
              offset += bytes.length - before;
            } else {
              this.#state = { kind: 'headers', bytes };
              offset = chunk.length;
            }
            break;
          }
          offset += blank.end - before;
          const length = contentLength(bytes.subarray(0, blank.start).toString('latin1'));
          if (length === undefined) {
            parts.push(this.#refusal(-32700, new Error('MCP message headers have no valid Content-Length; refused'), 'content-length'));
            this.#state = { kind: 'start', probe: Buffer.alloc(0) };
            break;
          }
          this.#state = { kind: 'body', remaining: length, collector: new BoundedBytes(this.#options.maxMessageBytes) };
          if (length === 0) {
            this.#state = { kind: 'start', probe: Buffer.alloc(0) };
            parts.push(this.#finish(new BoundedBytes(this.#options.maxMessageBytes), 'content-length'));
          }
          break;
        }
        case 'body': {
          const take = Math.min(state.remaining, chunk.length - offset);
          state.collector.add(chunk.subarray(offset, offset + take));
          state.remaining -= take;
          offset += take;
          if (state.remaining === 0) {
            this.#state = { kind: 'start', probe: Buffer.alloc(0) };
            parts.push(this.#finish(state.collector, 'content-length'));
          }
          break;
        }
        case 'skip-line': {
          const newline = chunk.indexOf(NEWLINE, offset);
          if (newline === -1) {
            offset = chunk.length;
          } else {
            offset = newline + 1;
            this.#state = { kind: 'start', probe: Buffer.alloc(0) };
          }
          break;
        }
      }
    }
    return parts;
  }

  /** Drops a message half read (the stream ended or the transport closed). */
  clear(): void {
    this.#state = { kind: 'start', probe: Buffer.alloc(0) };
  }

  #finish(collector: BoundedBytes, framing: JsonRpcFraming): JsonRpcReadPart<M> {
    const limit = this.#options.maxMessageBytes;
    if (collector.over) {
      const head = collector.head();
      const tail = collector.tail();
      const { id, kind } = recoverJsonRpcId(head, tail);
      const size = framing === 'line' && tail.endsWith('\r') ? collector.size - 1 : collector.size;
      return { type: 'refused', code: /^\s*[{[]/.test(head) ? -32600 : -32700, error: new McpMessageTooLargeError({ size, limit }), id, kind, framing };
    }
    let bytes = collector.whole();
    if (framing === 'line' && bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, -1);
    if (bytes.length > limit) {
      const text = bytes.toString('utf8');
      return { type: 'refused', code: -32600, error: new McpMessageTooLargeError({ size: bytes.length, limit }), ...recoverJsonRpcId(text, text), framing };
    }
    return this.#parse(bytes, framing);
  }

  #parse(bytes: Buffer, framing: JsonRpcFraming): JsonRpcReadPart<M> {
    const text = bytes.toString('utf8');
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      return { ...this.#refusal(-32700, new Error(`MCP message is not JSON: ${(error as Error).message}`), framing) };
    }
    try {
      return { type: 'message', message: this.#options.parse(value), framing };
    } catch (error) {
      const record = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
      const id = typeof record['id'] === 'string' || typeof record['id'] === 'number' ? record['id'] : null;
      const kind: JsonRpcMessageKind = 'method' in record ? 'request' : 'result' in record || 'error' in record ? 'response' : 'unknown';
      return {
        type: 'refused',
        code: -32600,
        error: new Error(`MCP message is not a JSON-RPC message: ${(error as Error).message.slice(0, 500)}`),
        id,
        kind,
        framing,
      };
    }
  }

  #refusal(code: -32600 | -32700, error: Error, framing: JsonRpcFraming): JsonRpcReadPart<M> {
    return { type: 'refused', code, error, id: null, kind: 'unknown', framing };
  }
}

/**
 * The JSON-RPC error answering a refused message: `{ jsonrpc, id, error: { code, message, data } }`,
 * `data` holding the size and the limit of an oversized one.
 */
export function refusalResponse(part: Extract<JsonRpcReadPart<unknown>, { type: 'refused' }>): {
  jsonrpc: '2.0';
  id: JsonRpcId;
  error: { code: number; message: string; data?: Record<string, unknown> };
} {
  const data = part.error instanceof McpMessageTooLargeError ? { data: { ...part.error.details } } : {};
  return { jsonrpc: '2.0', id: part.id, error: { code: part.code, message: part.error.message, ...data } };
}

/** A message as bytes in `framing`: a JSON line, or `Content-Length` headers and the JSON. */
export function frameJsonRpcMessage(message: unknown, framing: JsonRpcFraming): string {
  const json = JSON.stringify(message);
  return framing === 'line' ? `${json}\n` : `Content-Length: ${Buffer.byteLength(json, 'utf8')}\r\n\r\n${json}`;
}

function isBlank(byte: number): boolean {
  return byte === 0x0a || byte === 0x0d || byte === 0x20 || byte === 0x09;
}

/** Where the headers' blank line starts and the body begins, if it has come. */
function headerEnd(bytes: Buffer): { start: number; end: number } | undefined {
  const crlf = bytes.indexOf('\r\n\r\n');
  const lf = bytes.indexOf('\n\n');
  if (crlf === -1 && lf === -1) return undefined;
  if (lf === -1 || (crlf !== -1 && crlf < lf)) return { start: crlf, end: crlf + 4 };
  return { start: lf, end: lf + 2 };
}

function contentLength(headers: string): number | undefined {
  for (const line of headers.split(/\r?\n/)) {
    const match = /^content-length:\s*(\d{1,15})\s*$/i.exec(line);
    if (match !== null) return Number(match[1]);
  }
  return undefined;
}

/**
 * The id of a JSON-RPC message known only by its start and end (an oversized one), and what kind
 * of message its top-level keys say it is: the id from the start when its key comes before the
 * text runs out, else from the end when `"id"` is its last member; `null` when neither.
 */
export function recoverJsonRpcId(head: string, tail: string): { id: JsonRpcId; kind: JsonRpcMessageKind } {
  const scanned = scanHead(head);
  return { id: scanned.id !== undefined ? scanned.id : (idFromTail(tail) ?? null), kind: scanned.kind };
}

const STRING = /^"(?:[^"\\]|\\.)*"/;
const NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/;

/**
 * Walks the top-level keys of the start of a JSON object as far as it goes: the `id` if it comes
 * before the text runs out, and what kind of message the keys say it is (read past the `id` too,
 * since other SDKs write `{"jsonrpc":"2.0","id":3,"result":…}`).
 */
function scanHead(text: string): { id?: JsonRpcId; kind: JsonRpcMessageKind } {
  let kind: JsonRpcMessageKind = 'unknown';
  let id: JsonRpcId | undefined;
  const found = (): { id?: JsonRpcId; kind: JsonRpcMessageKind } => (id === undefined ? { kind } : { id, kind });
  let at = skipSpace(text, 0);
  if (text[at] !== '{') return found();
  at += 1;
  for (;;) {
    at = skipSpace(text, at);
    const key = STRING.exec(text.slice(at, at + 1024))?.[0];
    if (key === undefined) return found();
    at = skipSpace(text, at + key.length);
    if (text[at] !== ':') return found();
    at = skipSpace(text, at + 1);
    const name = key.slice(1, -1);
    if (name === 'method') kind = 'request';
    if ((name === 'result' || name === 'error') && kind === 'unknown') kind = 'response';
    if (name === 'id') {
      const rest = text.slice(at, at + 1024);
      const string = STRING.exec(rest)?.[0];
      const number = string === undefined ? NUMBER.exec(rest)?.[0] : undefined;
      id = string !== undefined ? (JSON.parse(string) as string) : number !== undefined ? Number(number) : null;
    }
    if (id !== undefined && kind !== 'unknown') return found();
    const next = skipValue(text, at);
    if (next === undefined) return found();
    at = skipSpace(text, next);
    if (text[at] !== ',') return found();
    at += 1;
  }
}

/** The index just past the JSON value at `at`, or undefined when the text ends inside it. */
function skipValue(text: string, at: number): number | undefined {
  let depth = 0;
  let index = at;
  while (index < text.length) {
    const char = text[index];
    if (char === '"') {
      let end = index + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      if (end >= text.length) return undefined;
      index = end + 1;
      if (depth === 0) return index;
      continue;
    }
    if (char === '{' || char === '[') depth += 1;
    else if (char === '}' || char === ']') {
      depth -= 1;
      if (depth < 0) return index;
      if (depth === 0) return index + 1;
    } else if (depth === 0 && (char === ',' || char === ' ' || char === '\n' || char === '\r' || char === '\t')) return index;
    index += 1;
  }
  return undefined;
}

function skipSpace(text: string, at: number): number {
  let index = at;
  while (index < text.length && /\s/.test(text[index] ?? '')) index += 1;
  return index;
}

/**
 * The id of a message whose last top-level member is `"id"` (the SDK writes responses as
 * `{"result":…,"jsonrpc":"2.0","id":7}`): anchored at the end, it cannot be a nested key, since
 * a nested object would close with a second brace.
 */
function idFromTail(text: string): JsonRpcId | undefined {
  const match = /[,{]\s*"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*\}\s*$/.exec(text);
  const raw = match?.[1];
  if (raw === undefined) return undefined;
  return raw.startsWith('"') ? (JSON.parse(raw) as string) : Number(raw);
}
