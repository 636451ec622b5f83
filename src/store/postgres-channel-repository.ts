import type { ChannelMessageRecord, ChannelMessageStatus, ChannelPairingRecord, ChannelRepository } from '../contracts/index.ts';
import { type PostgresConnection, query } from './postgres-connection.ts';
import { checkLimit, parseRow, type Row } from './rows.ts';
import { channelMessageColumns as messageColumns, channelMessageRow, channelPairingColumns as pairingColumns, channelPairingRow } from './table-rows.ts';

/** `ChannelRepository` on PostgreSQL. */
export class PostgresChannelRepository implements ChannelRepository {
  readonly #connection: PostgresConnection;

  constructor(connection: PostgresConnection) {
    this.#connection = connection;
  }

  receive(record: ChannelMessageRecord): Promise<boolean> {
    return this.#connection.execute(
      async (db) =>
        (
          await query(db, `INSERT INTO channel_messages (${messageColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (channel, platform_id) DO NOTHING`, [
            record.channel,
            record.platformId,
            record.userId,
            record.userName,
            record.conversationId,
            record.conversationKind,
            record.thread,
            record.mentioned,
            record.text,
            record.status,
            record.note,
            record.receivedAt,
            record.updatedAt,
          ])
        ).changed === 1,
      () => ({ action: `store message "${record.platformId}" of channel "${record.channel}"` }),
    );
  }

  settle(channel: string, platformId: string, status: ChannelMessageStatus, note: string | null, at: number): Promise<void> {
    return this.#connection.execute(
      async (db) => {
        await query(db, 'UPDATE channel_messages SET status = $1, note = $2, updated_at = $3 WHERE channel = $4 AND platform_id = $5', [status, note, at, channel, platformId]);
      },
      () => ({ action: `record message "${platformId}" of channel "${channel}" as ${status}` }),
    );
  }

  get(channel: string, platformId: string): Promise<ChannelMessageRecord | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, `SELECT ${messageColumns} FROM channel_messages WHERE channel = $1 AND platform_id = $2`, [channel, platformId])).rows;
        return row === undefined ? undefined : parseMessage(row);
      },
      () => ({ action: `read message "${platformId}" of channel "${channel}"` }),
    );
  }

  amend(channel: string, platformId: string, change: { text: string } | { withdrawn: string }, at: number): Promise<boolean> {
    return this.#connection.execute(
      async (db) => {
        const { changed } =
          'text' in change
            ? await query(db, "UPDATE channel_messages SET text = $1, updated_at = $2 WHERE channel = $3 AND platform_id = $4 AND status = 'received'", [change.text, at, channel, platformId])
            : await query(db, "UPDATE channel_messages SET status = 'ignored', note = $1, updated_at = $2 WHERE channel = $3 AND platform_id = $4 AND status = 'received'", [change.withdrawn, at, channel, platformId]);
        return changed === 1;
      },
      () => ({ action: `change message "${platformId}" of channel "${channel}"` }),
    );
  }

  unsettled(channel: string): Promise<ChannelMessageRecord[]> {
    return this.#connection.execute(
      async (db) => (await query(db, `SELECT ${messageColumns} FROM channel_messages WHERE channel = $1 AND status = 'received' ORDER BY received_at, insert_order`, [channel])).rows.map(parseMessage),
      () => ({ action: `list the unanswered messages of channel "${channel}"` }),
    );
  }

  recent(channel: string, limit: number): Promise<ChannelMessageRecord[]> {
    const action = `list the recent messages of channel "${channel}"`;
    return this.#connection.execute(
      async (db) => (await query(db, `SELECT ${messageColumns} FROM channel_messages WHERE channel = $1 ORDER BY received_at DESC, insert_order DESC LIMIT $2`, [channel, checkLimit(limit, action) ?? null])).rows.map(parseMessage),
      () => ({ action }),
    );
  }

  requestPairing(record: ChannelPairingRecord): Promise<void> {
    return this.#connection.execute(
      () =>
        this.#connection.transaction(async (client) => {
          await query(client, 'DELETE FROM channel_pairings WHERE channel = $1 AND user_id = $2 AND approved_at IS NULL', [record.channel, record.userId]);
          await query(client, `INSERT INTO channel_pairings (${pairingColumns}) VALUES ($1, $2, $3, $4, $5, $6)`, [record.code, record.channel, record.userId, record.userName, record.createdAt, record.approvedAt]);
        }),
      () => ({ action: `store a pairing request of channel "${record.channel}"` }),
    );
  }

  approvePairing(code: string, at: number): Promise<ChannelPairingRecord | undefined> {
    return this.#connection.execute(
      () =>
        this.#connection.transaction(async (client) => {
          await query(client, 'UPDATE channel_pairings SET approved_at = $1 WHERE code = $2 AND approved_at IS NULL', [at, code]);
          const [row] = (await query(client, `SELECT ${pairingColumns} FROM channel_pairings WHERE code = $1`, [code])).rows;
          return row === undefined ? undefined : parsePairing(row);
        }),
      () => ({ action: `approve pairing "${code}"` }),
    );
  }

  pairingOf(channel: string, userId: string): Promise<ChannelPairingRecord | undefined> {
    return this.#connection.execute(
      async (db) => {
        const [row] = (await query(db, `SELECT ${pairingColumns} FROM channel_pairings WHERE channel = $1 AND user_id = $2 ORDER BY approved_at IS NULL, created_at DESC LIMIT 1`, [channel, userId])).rows;
        return row === undefined ? undefined : parsePairing(row);
      },
      () => ({ action: `read the pairing of "${userId}" on channel "${channel}"` }),
    );
  }

  pairings(channel?: string): Promise<ChannelPairingRecord[]> {
    return this.#connection.execute(
      async (db) => {
        const { rows } =
          channel === undefined
            ? await query(db, `SELECT ${pairingColumns} FROM channel_pairings ORDER BY created_at DESC, insert_order DESC`)
            : await query(db, `SELECT ${pairingColumns} FROM channel_pairings WHERE channel = $1 ORDER BY created_at DESC, insert_order DESC`, [channel]);
        return rows.map(parsePairing);
      },
      () => ({ action: 'list pairings' }),
    );
  }
}

function parseMessage(row: Row): ChannelMessageRecord {
  return parseRow(channelMessageRow, row, 'channel_messages', ['channel', 'platform_id']);
}

function parsePairing(row: Row): ChannelPairingRecord {
  return parseRow(channelPairingRow, row, 'channel_pairings', ['code']);
}
