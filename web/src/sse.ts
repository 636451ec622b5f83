/** One server-sent event: its `event:` name (undefined when none), its `data:` lines joined, and its `id:` (undefined when none). */
export interface SseMessage {
  event: string | undefined;
  data: string;
  id?: string | undefined;
}

/**
 * Reads a `text/event-stream` body event by event. EventSource can only GET, so a POST that
 * answers with a stream (an agent's reply) is read with fetch and this. Comments (`: heartbeat`)
 * are skipped; CRLF and LF line ends are both accepted.
 */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      // A CR at a chunk's end may be the first half of a CRLF: it is normalized with the next chunk.
      buffer = (buffer + decoder.decode(value, { stream: true })).replace(/\r\n/g, '\n').replace(/\r(?!$)/g, '\n');
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const message = toMessage(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (message !== undefined) yield message;
      }
    }
    const last = toMessage((buffer + decoder.decode()).replace(/\r/g, '\n'));
    if (last !== undefined) yield last;
  } finally {
    reader.releaseLock();
  }
}

function toMessage(block: string): SseMessage | undefined {
  let event: string | undefined;
  let id: string | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id') id = value;
  }
  return event === undefined && data.length === 0 ? undefined : { event, data: data.join('\n'), ...(id === undefined ? {} : { id }) };
}
