import { describe, expect, it } from 'vitest';
import { parseSse, type SseMessage } from '../../web/src/sse.ts';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function collect(chunks: string[]): Promise<SseMessage[]> {
  const messages: SseMessage[] = [];
  for await (const message of parseSse(streamOf(chunks))) messages.push(message);
  return messages;
}

describe('the dashboard SSE parser', () => {
  it('yields named events with their data when events are split across chunks', async () => {
    expect(await collect(['event: text-de', 'lta\ndata: {"text":"he', 'llo"}\n', '\nevent: run-finish\ndata: {}\n\n'])).toEqual([
      { event: 'text-delta', data: '{"text":"hello"}' },
      { event: 'run-finish', data: '{}' },
    ]);
  });

  it('skips comments, joins multi-line data and accepts CRLF even when a CRLF is split', async () => {
    expect(await collect([': connected\n\n', 'data: a\r', '\ndata: b\r\n\r\n', ': heartbeat\n\n'])).toEqual([{ event: undefined, data: 'a\nb' }]);
  });

  it('yields a last event that is not followed by a blank line when the stream ends', async () => {
    expect(await collect(['event: error\ndata: {"code":"X"}'])).toEqual([{ event: 'error', data: '{"code":"X"}' }]);
  });
});
