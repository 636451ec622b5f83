import type { MiddlewareHandler } from 'hono';
import { ALREADY_SENT_HEADER } from './response-already-sent.ts';

/**
 * Gives the answer to a HEAD the `Content-Length` its GET's answer has: Hono answers a HEAD with
 * its GET route's answer, body dropped, and the Node server counts a body's length only as it
 * writes it, so a client asking HEAD for a size (the OpenAPI document's, a dashboard file's) learnt
 * none. Only a body of known length is measured (JSON, text, a file read): a stream (SSE), an
 * answer written on Node's response, one with no body or one that states its length or encoding
 * keeps its headers as they are.
 */
export const headContentLength: MiddlewareHandler = (c, next) => (c.req.method === 'HEAD' ? measured(c, next) : next());

const measured: MiddlewareHandler = async (c, next) => {
  await next();
  const { res } = c;
  const { headers } = res;
  if (res.body === null || headers.has('content-length') || headers.has('transfer-encoding') || headers.has(ALREADY_SENT_HEADER)) return;
  if ((headers.get('content-type') ?? '').startsWith('text/event-stream')) return;
  const length = (await res.clone().arrayBuffer()).byteLength;
  // Read again: a Node server's answer makes its headers anew once its body is read.
  res.headers.set('content-length', String(length));
};
