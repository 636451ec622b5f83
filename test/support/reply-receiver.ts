import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Where a webhook channel's replies go in a test: their texts, in the order they came. */
export interface ReplyReceiver {
  /** The reply URL to give the channel (`reply_url`). */
  url: string;
  /** Each reply's `text`, as it arrived. */
  replies: string[];
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (port 0) for a webhook channel's replies, answering each 204. */
export async function startReplyReceiver(): Promise<ReplyReceiver> {
  const replies: string[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      replies.push((JSON.parse(body) as { text: string }).text);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/replies`,
    replies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
