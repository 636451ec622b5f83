import type { EventRecord, EventRepository, Logger } from '../contracts/index.ts';
import { EVENT_CHANNEL } from '../store/index.ts';
import { createPostgresListener } from './postgres-listener.ts';

/** What {@link createEventRelay} needs. */
export interface EventRelayOptions {
  /** The store's database (`postgres://…`). */
  url: string;
  /** This node's id, the origin its store names in its events' notifications: those are skipped. */
  origin: string;
  logger: Logger;
  /** Where the events themselves are read (the notifications carry only their numbers). */
  events: Pick<EventRepository, 'list'>;
  /** Hands on an event another process recorded; called one at a time, in the order the events committed. */
  deliver(event: EventRecord): Promise<void>;
  /**
   * Called when notifications may have been missed (the listening connection was lost, or the
   * first try to listen failed): what this node holds from the store is to be read again.
   */
  resync(): Promise<void>;
  connectTimeoutMs?: number;
  retryMs?: number;
}

/** Events recorded by other processes sharing the database, handed on as they commit. */
export interface EventRelay {
  /** Listens; resolves once listening (or once the first try failed: it tries again). */
  start(): Promise<void>;
  /** Stops listening and waits for the events being handed on. Idempotent. */
  stop(): Promise<void>;
}

/** The most events read in one query; more pending are read in the next. */
const BATCH = 500;

/**
 * Events between nodes (docs/cluster.md "Events between nodes"): every event appended to the
 * audit log is announced in its transaction on `loom_events` as `<origin>:<seq>` (see
 * `insertEvent`), so notifications arrive in commit order (which two appends on two connections
 * may reach in the other order than their sequence numbers). The relay listens on a connection of
 * its own, skips its own node's, reads the others' from the events table in batches, and hands
 * each on in the order announced. When the connection was lost it asks for a resync, since
 * notifications sent meanwhile are gone.
 */
export function createEventRelay(options: EventRelayOptions): EventRelay {
  const logger = options.logger.child({ subsystem: 'events' });
  const pending: number[] = [];
  let resync = false;
  let draining: Promise<void> | undefined;
  let stopped = false;

  function kick(): void {
    if (stopped || draining !== undefined) return;
    draining = drain().finally(() => {
      draining = undefined;
      if (pending.length > 0 || resync) kick();
    });
  }

  async function drain(): Promise<void> {
    while (!stopped && (resync || pending.length > 0)) {
      if (resync) {
        resync = false;
        try {
          await options.resync();
        } catch (error) {
          logger.error(
            { err: error },
            'could not bring this node up to date with the store after missing events; it reads it again at its next reconnection or restart',
          );
        }
        continue;
      }
      const batch = pending.splice(0, BATCH);
      const bySeq = new Map<number, EventRecord>();
      try {
        for (const event of await options.events.list({ after: Math.min(...batch) - 1, before: Math.max(...batch) + 1 })) bySeq.set(event.seq, event);
      } catch (error) {
        logger.warn({ err: error, events: batch.length }, `could not read ${batch.length} event(s) another node recorded; they are not handed on here`);
        continue;
      }
      // In the order they were announced, which is the order they committed: appends on two
      // connections may commit in the other order than their numbers (decision 0058).
      for (const seq of batch) {
        const event = bySeq.get(seq);
        if (event === undefined) continue;
        try {
          await options.deliver(event);
        } catch (error) {
          logger.error({ err: error, seq: event.seq, eventType: event.type }, `could not take in event ${event.seq} ("${event.type}") from another node`);
        }
      }
    }
  }

  const listener = createPostgresListener({
    url: options.url,
    channel: EVENT_CHANNEL,
    applicationName: 'loom-events-listen',
    logger,
    meanwhile: "other nodes' events are not heard until listening again",
    ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
    ...(options.retryMs === undefined ? {} : { retryMs: options.retryMs }),
    onNotification(payload) {
      const colon = payload.lastIndexOf(':');
      const seq = Number(payload.slice(colon + 1));
      if (colon < 1 || !Number.isSafeInteger(seq)) {
        logger.warn({ payload: payload.slice(0, 200) }, `ignored a notification on "${EVENT_CHANNEL}" that is not <origin>:<seq>`);
        return;
      }
      if (payload.slice(0, colon) === options.origin) return;
      pending.push(seq);
      kick();
    },
    onListening(again) {
      if (!again) return;
      resync = true;
      kick();
    },
  });

  return {
    start: () => listener.start(),
    async stop() {
      if (stopped) return;
      stopped = true;
      await listener.stop();
      await draining;
    },
  };
}
