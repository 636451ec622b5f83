import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { createMcpSessionEventStore } from '../../src/mcp/server/index.ts';

const note = (n: number): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { n } });
const PRIMING = {} as JSONRPCMessage; // what the SDK transport stores for a priming event

async function replay(store: ReturnType<typeof createMcpSessionEventStore>, after: string): Promise<{ stream: string; sent: unknown[] }> {
  const sent: unknown[] = [];
  const stream = await store.replayEventsAfter(after, {
    send: (_id, message) => {
      sent.push(message);
      return Promise.resolve();
    },
  });
  return { stream, sent };
}

describe('createMcpSessionEventStore()', () => {
  it('replays what came after an event on its own stream only, without resending the priming event', async () => {
    const store = createMcpSessionEventStore();
    const primed = await store.storeEvent('call-1', PRIMING);
    await store.storeEvent('call-2', note(0));
    const first = await store.storeEvent('call-1', note(1));
    await store.storeEvent('call-1', note(2));
    expect(primed).toMatch(/^[0-9a-f-]{36}$/);
    expect(await store.getStreamIdForEventId?.(first)).toBe('call-1');
    expect(await replay(store, primed)).toEqual({ stream: 'call-1', sent: [note(1), note(2)] });
    expect(await replay(store, first)).toEqual({ stream: 'call-1', sent: [note(2)] });
  });

  it('keeps at most maxEvents and maxBytes, dropping the oldest, and refuses a replay after an event it no longer holds', async () => {
    const byCount = createMcpSessionEventStore({ maxEvents: 2 });
    const dropped = await byCount.storeEvent('s', note(1));
    const kept = await byCount.storeEvent('s', note(2));
    await byCount.storeEvent('s', note(3));
    expect(byCount.size).toBe(2);
    expect(await byCount.getStreamIdForEventId?.(dropped)).toBeUndefined();
    await expect(replay(byCount, dropped)).rejects.toThrow(/holds no such event/);
    expect((await replay(byCount, kept)).sent).toEqual([note(3)]);

    const size = JSON.stringify(note(1)).length;
    const byBytes = createMcpSessionEventStore({ maxBytes: size * 2 });
    for (let n = 1; n <= 5; n++) await byBytes.storeEvent('s', note(n));
    expect(byBytes.size).toBe(2);
    // The newest is kept whatever its size.
    await byBytes.storeEvent('s', { jsonrpc: '2.0', method: 'notifications/message', params: { text: 'x'.repeat(size * 10) } });
    expect(byBytes.size).toBe(1);
  });
});
