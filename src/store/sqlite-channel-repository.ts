import type { StatementSync } from 'node:sqlite';
import type { ChannelMessageRecord, ChannelMessageStatus, ChannelPairingRecord, ChannelRepository } from '../contracts/index.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { parseRow } from './rows.ts';
import { limitParameter, type SqliteRow } from './sqlite-rows.ts';
import { channelMessageColumns as messageColumns, channelMessageRow as messageRow, channelPairingColumns as pairingColumns, channelPairingRow as pairingRow } from './table-rows.ts';

/** `ChannelRepository` on SQLite (migration 10). */
export class SqliteChannelRepository implements ChannelRepository {
  readonly #connection: SqliteConnection;
  readonly #insert: StatementSync;
  readonly #settle: StatementSync;
  readonly #get: StatementSync;
  readonly #revise: StatementSync;
  readonly #withdraw: StatementSync;
  readonly #unsettled: StatementSync;
  readonly #recent: StatementSync;
  readonly #dropPending: StatementSync;
  readonly #insertPairing: StatementSync;
  readonly #approve: StatementSync;
  readonly #pairingByCode: StatementSync;
  readonly #pairingOf: StatementSync;
  readonly #pairings: StatementSync;
  readonly #pairingsOf: StatementSync;

  constructor(connection: SqliteConnection) {
    this.#connection = connection;
    const { db } = connection;
    this.#insert = db.prepare(`INSERT INTO channel_messages (${messageColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (channel, platform_id) DO NOTHING`);
    this.#settle = db.prepare('UPDATE channel_messages SET status = ?, note = ?, updated_at = ? WHERE channel = ? AND platform_id = ?');
    this.#get = db.prepare(`SELECT ${messageColumns} FROM channel_messages WHERE channel = ? AND platform_id = ?`);
    this.#revise = db.prepare("UPDATE channel_messages SET text = ?, updated_at = ? WHERE channel = ? AND platform_id = ? AND status = 'received'");
    this.#withdraw = db.prepare("UPDATE channel_messages SET status = 'ignored', note = ?, updated_at = ? WHERE channel = ? AND platform_id = ? AND status = 'received'");
    this.#unsettled = db.prepare(`SELECT ${messageColumns} FROM channel_messages WHERE channel = ? AND status = 'received' ORDER BY received_at, rowid`);
    this.#recent = db.prepare(`SELECT ${messageColumns} FROM channel_messages WHERE channel = ? ORDER BY received_at DESC, rowid DESC LIMIT ?`);
    this.#dropPending = db.prepare('DELETE FROM channel_pairings WHERE channel = ? AND user_id = ? AND approved_at IS NULL');
    this.#insertPairing = db.prepare(`INSERT INTO channel_pairings (${pairingColumns}) VALUES (?, ?, ?, ?, ?, ?)`);
    this.#approve = db.prepare('UPDATE channel_pairings SET approved_at = ? WHERE code = ? AND approved_at IS NULL');
    this.#pairingByCode = db.prepare(`SELECT ${pairingColumns} FROM channel_pairings WHERE code = ?`);
    this.#pairingOf = db.prepare(`SELECT ${pairingColumns} FROM channel_pairings WHERE channel = ? AND user_id = ? ORDER BY approved_at IS NULL, created_at DESC LIMIT 1`);
    this.#pairings = db.prepare(`SELECT ${pairingColumns} FROM channel_pairings ORDER BY created_at DESC, rowid DESC`);
    this.#pairingsOf = db.prepare(`SELECT ${pairingColumns} FROM channel_pairings WHERE channel = ? ORDER BY created_at DESC, rowid DESC`);
  }

  receive(record: ChannelMessageRecord): Promise<boolean> {
    return this.#connection.execute(
      () =>
        Number(
          this.#insert.run(
            record.channel,
            record.platformId,
            record.userId,
            record.userName,
            record.conversationId,
            record.conversationKind,
            record.thread,
            record.mentioned ? 1 : 0,
            record.text,
            record.status,
            record.note,
            record.receivedAt,
            record.updatedAt,
          ).changes,
        ) === 1,
      () => ({ action: `store message "${record.platformId}" of channel "${record.channel}"` }),
    );
  }

  settle(channel: string, platformId: string, status: ChannelMessageStatus, note: string | null, at: number): Promise<void> {
    return this.#connection.execute(
      () => {
        this.#settle.run(status, note, at, channel, platformId);
      },
      () => ({ action: `record message "${platformId}" of channel "${channel}" as ${status}` }),
    );
  }

  get(channel: string, platformId: string): Promise<ChannelMessageRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#get.get(channel, platformId);
        return row === undefined ? undefined : parseMessage(row);
      },
      () => ({ action: `read message "${platformId}" of channel "${channel}"` }),
    );
  }

  amend(channel: string, platformId: string, change: { text: string } | { withdrawn: string }, at: number): Promise<boolean> {
    return this.#connection.execute(
      () => Number(('text' in change ? this.#revise.run(change.text, at, channel, platformId) : this.#withdraw.run(change.withdrawn, at, channel, platformId)).changes) === 1,
      () => ({ action: `change message "${platformId}" of channel "${channel}"` }),
    );
  }

  unsettled(channel: string): Promise<ChannelMessageRecord[]> {
    return this.#connection.execute(
      () => this.#unsettled.all(channel).map(parseMessage),
      () => ({ action: `list the unanswered messages of channel "${channel}"` }),
    );
  }

  recent(channel: string, limit: number): Promise<ChannelMessageRecord[]> {
    return this.#connection.execute(
      () => this.#recent.all(channel, limitParameter(limit, `list the recent messages of channel "${channel}"`)).map(parseMessage),
      () => ({ action: `list the recent messages of channel "${channel}"` }),
    );
  }

  requestPairing(record: ChannelPairingRecord): Promise<void> {
    return this.#connection.execute(
      () =>
        this.#connection.transaction(() => {
          this.#dropPending.run(record.channel, record.userId);
          this.#insertPairing.run(record.code, record.channel, record.userId, record.userName, record.createdAt, record.approvedAt);
        }),
      () => ({ action: `store a pairing request of channel "${record.channel}"` }),
    );
  }

  approvePairing(code: string, at: number): Promise<ChannelPairingRecord | undefined> {
    return this.#connection.execute(
      () =>
        this.#connection.transaction(() => {
          this.#approve.run(at, code);
          const row = this.#pairingByCode.get(code);
          return row === undefined ? undefined : parsePairing(row);
        }),
      () => ({ action: `approve pairing "${code}"` }),
    );
  }

  pairingOf(channel: string, userId: string): Promise<ChannelPairingRecord | undefined> {
    return this.#connection.execute(
      () => {
        const row = this.#pairingOf.get(channel, userId);
        return row === undefined ? undefined : parsePairing(row);
      },
      () => ({ action: `read the pairing of "${userId}" on channel "${channel}"` }),
    );
  }

  pairings(channel?: string): Promise<ChannelPairingRecord[]> {
    return this.#connection.execute(
      () => (channel === undefined ? this.#pairings.all() : this.#pairingsOf.all(channel)).map(parsePairing),
      () => ({ action: 'list pairings' }),
    );
  }
}

function parseMessage(row: SqliteRow): ChannelMessageRecord {
  return parseRow(messageRow, row, 'channel_messages', ['channel', 'platform_id']);
}

function parsePairing(row: SqliteRow): ChannelPairingRecord {
  return parseRow(pairingRow, row, 'channel_pairings', ['code']);
}
