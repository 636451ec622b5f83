import pg from 'pg';
import type { Logger } from '../contracts/index.ts';
import { messageOf } from '../errors/index.ts';

/** What {@link createPostgresListener} needs. */
export interface PostgresListenerOptions {
  /** The database (`postgres://…`). */
  url: string;
  /** The channel to `LISTEN` on (a constant identifier). */
  channel: string;
  /** How the connection is named in `pg_stat_activity`. */
  applicationName: string;
  logger: Logger;
  /** Called with each notification's payload, in the order the server sends them. */
  onNotification(payload: string): void;
  /**
   * Called once listening, each time: `again` is false after the first try, true after a try
   * that followed a failed or lost connection (notifications sent meanwhile were missed).
   */
  onListening?(again: boolean): void;
  /** What is missed while not listening, for the warning (e.g. "looking every 1000 ms until listening again"). */
  meanwhile: string;
  /** How long to wait before listening again after the connection was lost, in milliseconds (default 2 s). */
  retryMs?: number;
  connectTimeoutMs?: number;
}

/** A `LISTEN` on a connection of its own, opened again whenever it is lost. */
export interface PostgresListener {
  /** Listens; resolves once listening, or once the first try failed (it tries again later). */
  start(): Promise<void>;
  /** Closes the connection; no notification is delivered afterwards. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Listens on `channel` on a connection of its own (not a pool's: a pooled connection would stop
 * listening when returned). A connection that fails or closes is dropped with a warning and opened
 * again after `retryMs`, and `onListening(true)` tells the owner that notifications may have been
 * missed in between.
 */
export function createPostgresListener(options: PostgresListenerOptions): PostgresListener {
  const retryMs = options.retryMs ?? 2_000;
  let listener: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let tried = false;

  function drop(client: pg.Client, reason: string): void {
    if (client !== listener) return;
    listener = undefined;
    client.end().catch(() => undefined);
    if (stopped) return;
    options.logger.warn({ reason, channel: options.channel }, `stopped listening on "${options.channel}" (${reason}); ${options.meanwhile}`);
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      void listen();
    }, retryMs);
    timer.unref();
  }

  async function listen(): Promise<void> {
    if (stopped || listener !== undefined) return;
    const again = tried;
    tried = true;
    const client = new pg.Client({
      connectionString: options.url,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
      application_name: options.applicationName,
      keepAlive: true,
    });
    client.on('notification', (message) => options.onNotification(message.payload ?? ''));
    client.on('error', (error) => drop(client, error.message));
    client.on('end', () => drop(client, 'its connection closed'));
    try {
      listener = client;
      await client.connect();
      await client.query(`LISTEN ${options.channel}`);
      if (stopped) {
        await client.end();
        return;
      }
      if (listener !== client) return;
      options.onListening?.(again);
    } catch (error) {
      drop(client, messageOf(error));
    }
  }

  return {
    start: () => listen(),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
