import type { MiddlewareHandler } from 'hono';
import { isEventStream } from '../wire/index.ts';
import { ALREADY_SENT_HEADER } from './response-already-sent.ts';

/**
 * Gives the answer to a HEAD the `Content-Length` its GET's answer has: Hono answers a HEAD with
 * its GET route's answer, body dropped, and the Node server counts a body's length only as it
 * writes it, so a client asking HEAD for a size (the OpenAPI document's, an error's) learnt none.
 * Only a body already in memory is measured (JSON, a text): one whose bytes are all there at once.
 * A stream (SSE or any other), an answer written on Node's response, one with no body or one that
 * states its length or encoding (the dashboard's files) keeps its headers as they are.
 */
export const headContentLength: MiddlewareHandler = (c, next) => (c.req.method === 'HEAD' ? measured(c, next) : next());

const measured: MiddlewareHandler = async (c, next) => {
  await next();
  const { res } = c;
  const { headers } = res;
  if (res.body === null || headers.has('content-length') || headers.has('transfer-encoding') || headers.has(ALREADY_SENT_HEADER) || isEventStream(res)) return;
  const length = await lengthInMemory(res.body);
  // Read again: a Node server's answer makes its headers anew once its body is read.
  if (length !== undefined) res.headers.set('content-length', String(length));
};

/**
 * The length of `body` when it is one chunk ready at once, then its end (a body built from a
 * string or bytes); undefined, and the body cancelled, for anything else (a stream that produces
 * over time is never read past its first chunk). It reads the body: a HEAD's answer drops it anyway.
 */
async function lengthInMemory(body: ReadableStream<Uint8Array>): Promise<number | undefined> {
  const reader = body.getReader();
  // Ready at once: before the event loop's next turn.
  const now = <T>(read: Promise<T>): Promise<T | undefined> =>
    Promise.race([read, new Promise<undefined>((resolve) => setImmediate(() => resolve(undefined)))]);
  const first = await now(reader.read());
  const end = first === undefined || first.done ? first : await now(reader.read());
  if (end?.done !== true) {
    void reader.cancel().catch(() => undefined);
    return undefined;
  }
  return first?.done === false ? first.value.byteLength : 0;
}
