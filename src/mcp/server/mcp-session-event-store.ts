import { randomUUID } from 'node:crypto';
import type { EventId, EventStore, JSONRPCMessage, StreamId } from '@modelcontextprotocol/server';

/** How many events one session keeps for replay (the oldest go first). */
export const DEFAULT_MCP_SESSION_EVENTS = 256;

/** How many bytes of events (as JSON) one session keeps for replay (the oldest go first; the newest is kept whatever its size). */
export const DEFAULT_MCP_SESSION_EVENT_BYTES = 4 * 1024 * 1024;

/** The bounds of a {@link createMcpSessionEventStore}. */
export interface McpSessionEventLimits {
  /** Default {@link DEFAULT_MCP_SESSION_EVENTS}. */
  maxEvents?: number;
  /** Default {@link DEFAULT_MCP_SESSION_EVENT_BYTES}. */
  maxBytes?: number;
}

interface StoredEvent {
  id: EventId;
  streamId: StreamId;
  message: JSONRPCMessage;
  bytes: number;
}

/** The event store of one MCP session, and how much it holds. */
export interface McpSessionEventStore extends EventStore {
  /** How many events it holds now. */
  readonly size: number;
}

/**
 * The SDK `EventStore` of one 2025-era MCP session, in memory: every event the session's
 * transport writes on an SSE stream (a POST's priming event and messages, the standalone `GET`
 * stream's notifications) is kept, so a client that lost a stream can `GET` it again with
 * `Last-Event-ID` and get what it missed. It belongs to one session, which belongs to one
 * principal, so a replay reaches only the principal that opened the stream; it is dropped with
 * the session. Bounded in events and bytes: the oldest go first, so an event still held has
 * every later event of its stream held too, and a replay never skips one silently (an id no
 * longer held is refused by the SDK with 400). Event ids are random.
 */
export function createMcpSessionEventStore(limits: McpSessionEventLimits = {}): McpSessionEventStore {
  const maxEvents = limits.maxEvents ?? DEFAULT_MCP_SESSION_EVENTS;
  const maxBytes = limits.maxBytes ?? DEFAULT_MCP_SESSION_EVENT_BYTES;
  // Oldest first; the map finds an event by id.
  const events: StoredEvent[] = [];
  const byId = new Map<EventId, StoredEvent>();
  let bytes = 0;

  return {
    get size() {
      return events.length;
    },
    storeEvent(streamId, message) {
      const event: StoredEvent = { id: randomUUID(), streamId, message, bytes: Buffer.byteLength(JSON.stringify(message), 'utf8') };
      events.push(event);
      byId.set(event.id, event);
      bytes += event.bytes;
      while (events.length > 1 && (events.length > maxEvents || bytes > maxBytes)) {
        const oldest = events.shift() as StoredEvent;
        byId.delete(oldest.id);
        bytes -= oldest.bytes;
      }
      return Promise.resolve(event.id);
    },
    getStreamIdForEventId(eventId) {
      return Promise.resolve(byId.get(eventId)?.streamId);
    },
    async replayEventsAfter(lastEventId, { send }) {
      const last = byId.get(lastEventId);
      if (last === undefined)
        throw new Error(
          `cannot replay after the event "${lastEventId}": this session holds no such event (it never did, or it was dropped to keep the store within its bounds)`,
        );
      // Until nothing newer is left: the transport attaches the resumed stream only once this returns,
      // so an event stored meanwhile is sent here. Priming events (no JSON-RPC message) are not resent.
      let sent = last;
      for (;;) {
        const next = events.slice(events.indexOf(sent) + 1).find((event) => event.streamId === last.streamId && 'jsonrpc' in event.message);
        if (next === undefined) return last.streamId;
        await send(next.id, next.message);
        sent = next;
      }
    },
  };
}
