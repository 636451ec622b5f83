import { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { streamSSE } from 'hono/streaming';
import { API_SECURITY_HEADERS } from './security-headers.ts';
import type { HttpContext } from './http-context.ts';

/** One server-sent event: its type, its data (one `data:` line per line), and the id a client reconnects with. */
export interface SseMessage {
  event: string;
  data: string;
  id?: string;
}

/** What a stream does once its client has gone: `stop` reading, or `drain` its source to the end (a turn that outlives its client). */
export type ClientGone = 'stop' | 'drain';

/** What {@link replySse} needs besides the context: its messages, what to do when the client goes, and what to run once it ends. */
export interface SseReplyOptions {
  /** What the stream sends, in order; it ends when they do. It must not throw: a failure is a message of its own. */
  messages: AsyncIterator<SseMessage>;
  /** Whether the messages are still read once the client has gone. */
  clientGone: ClientGone;
  /** Runs once the stream has ended, however it ended (e.g. the request's deadline let go); it must not throw. */
  onEnd: () => void | Promise<void>;
}

/** A line break, which an SSE field other than `data` must not hold. */
const LINE_BREAK = /[\r\n]/;

/**
 * The wire text of `message`, as Hono's `writeSSE` writes it: `event:`, a `data:` line per line of
 * its data, `id:`, and a blank line.
 * @throws {Error} when the event or id holds a line break (it would end the field early).
 */
export function sseText(message: SseMessage): string {
  if (LINE_BREAK.test(message.event) || (message.id !== undefined && LINE_BREAK.test(message.id)))
    throw new Error(`cannot write the server-sent event "${message.event.slice(0, 100)}": its event or id holds a line break`);
  const data = LINE_BREAK.test(message.data) ? message.data.split(/\r\n|\r|\n/).join('\ndata: ') : message.data;
  return `event: ${message.event}\ndata: ${data}\n${message.id === undefined ? '' : `id: ${message.id}\n`}\n`;
}

/** Where a stream's text goes: `write` returns a promise only when the client is behind (wait for it), `gone` once the client has left. */
interface SseSink {
  write(text: string): Promise<void> | undefined;
  readonly gone: boolean;
}

/** Reads `messages` into `sink` until they end (or, with `stop`, until the client goes). */
async function pump(messages: AsyncIterator<SseMessage>, sink: SseSink, clientGone: ClientGone): Promise<void> {
  for (let next = await messages.next(); next.done !== true; next = await messages.next()) {
    if (sink.gone) {
      if (clientGone === 'stop') return;
      continue;
    }
    const behind = sink.write(sseText(next.value));
    if (behind !== undefined) await behind;
  }
}

/**
 * Answers the request with a stream of server-sent events. Served by Node (the daemon), the
 * events are written on Node's response itself: what is ready by the end of a turn of the event
 * loop goes in one chunk, the headers with the first, so a turn that streams all it has at once
 * (a cached or fast reply) costs one socket write instead of one per event and one more for the
 * headers, and no web streams. Elsewhere (`app.request()`), through Hono's SSE helper; a HEAD
 * request gets the head alone. Either way the same bytes, with the headers every API answer carries. See decision 0075.
 *
 * The response returned tells the API's middleware it is a stream (`Content-Type`), so the
 * request's deadline stays with it until `onEnd`.
 */
export function replySse(c: HttpContext, options: SseReplyOptions): Response {
  const outgoing = (c.env as { outgoing?: unknown } | undefined)?.outgoing;
  if (c.req.method === 'HEAD') return replyHead(c, options);
  if (outgoing instanceof ServerResponse) return replyOnNode(outgoing as ServerResponse, options);
  return streamSSE(c, async (stream) => {
    const sink: SseSink = {
      write: (text) => stream.write(text).then(() => undefined),
      get gone() {
        return stream.aborted;
      },
    };
    try {
      await pump(options.messages, sink, options.clientGone);
    } finally {
      await options.onEnd();
    }
  });
}

/**
 * A HEAD request's answer: the stream's head and no body, its messages never read and its end run
 * at once (the follower let go, the deadline disposed). Hono answers HEAD by wrapping the GET
 * route's response anew: a stream written on Node's response would have its head written twice,
 * and one left to Hono's helper would wait forever on a body nobody reads.
 */
function replyHead(c: HttpContext, { messages, onEnd }: SseReplyOptions): Response {
  void (async () => {
    try {
      await messages.return?.(undefined);
    } finally {
      await onEnd();
    }
  })().catch(() => undefined);
  return sseHead(c);
}

/**
 * The head a GET of a stream gets, alone: what a HEAD of one is answered (its chunked encoding
 * keeps the connection open for the next request).
 */
export function sseHead(c: HttpContext): Response {
  return c.body(null, 200, SSE_HEADERS);
}

/** The headers of a stream written on Node's response, and of a stream's HEAD: Hono's SSE helper's, and what every API answer carries. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
  'transfer-encoding': 'chunked',
  ...Object.fromEntries(API_SECURITY_HEADERS),
};

/**
 * What a route returns once it answers on Node's response: the Node server writes nothing for it
 * (`RESPONSE_ALREADY_SENT`'s header), and the API's middleware sees a stream. One for every such
 * reply, as `RESPONSE_ALREADY_SENT` is, and of the runtime's own Response class as it is: the Node
 * server writes a Response of its own lightweight class out as it is.
 */
const ANSWERED_ON_NODE: Response = new (RESPONSE_ALREADY_SENT.constructor as typeof Response)(null, {
  headers: { ...Object.fromEntries(RESPONSE_ALREADY_SENT.headers), 'content-type': 'text/event-stream' },
});

function replyOnNode(outgoing: ServerResponse, { messages, clientGone, onEnd }: SseReplyOptions): Response {
  outgoing.writeHead(200, SSE_HEADERS);
  let pending = '';
  let flushing = false;
  let sent = false;
  let drained: Promise<void> | undefined;
  const flush = (): void => {
    flushing = false;
    if (outgoing.destroyed) return;
    // A stream with nothing to say yet still answers: its client waits for the headers.
    if (pending === '') {
      // (A reply whole before this first flush has been ended, its headers with it.)
      if (!sent && !outgoing.writableEnded) outgoing.flushHeaders();
      sent = true;
      return;
    }
    sent = true;
    const text = pending;
    pending = '';
    if (outgoing.write(text)) return;
    // The client reads slower than the stream writes: the next write waits until it has caught up (or gone).
    drained = new Promise<void>((resolve) => {
      const done = (): void => {
        outgoing.off('drain', done).off('close', done);
        drained = undefined;
        resolve();
      };
      outgoing.on('drain', done).on('close', done);
    });
  };
  const schedule = (): void => {
    if (flushing) return;
    flushing = true;
    setImmediate(flush);
  };
  schedule();
  const sink: SseSink = {
    write: (text) => {
      pending += text;
      schedule();
      return drained;
    },
    get gone() {
      return outgoing.destroyed;
    },
  };
  void pump(messages, sink, clientGone)
    .then(
      () => {
        const text = pending;
        pending = '';
        outgoing.end(text);
      },
      // The messages failed, which they must not: the client sees the stream cut, not ended.
      (error: unknown) => outgoing.destroy(error instanceof Error ? error : new Error(String(error))),
    )
    .finally(onEnd)
    .catch(() => undefined);
  return ANSWERED_ON_NODE;
}
