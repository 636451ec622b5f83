import { z } from 'zod';
import type { ChannelMessageClaim, ChannelMessageRecord, ChannelMessageStatus, ChannelPairingRecord, ChannelRepository } from '../../contracts/index.ts';
import { flag, parseRow, type Row } from '../rows.ts';
import { nodeBeatingSql } from '../server-clock.ts';
import type { Database, Work } from '../sql/database.ts';
import { insert, raw, sql, where } from '../sql/statement.ts';

const CHANNEL_MESSAGE_STATUSES = ['received', 'answered', 'refused', 'ignored', 'failed'] as const satisfies readonly ChannelMessageStatus[];

const messageColumns =
  'channel, platform_id, user_id, user_name, conversation_id, conversation_kind, thread, mentioned, text, status, note, received_at, updated_at';
const selectMessages = raw(`SELECT ${messageColumns} FROM channel_messages`);

/**
 * The claimer of a message (`channel_messages.claimed_by`) still beats, by the cluster's measure, as
 * SQL: a node stopping cleanly holds its claims while it ends its answers (it gives them up then,
 * `releaseAll`), whether or not it is shown stopped; its heartbeat goes stale within the stale time.
 */
const CLAIMER_ALIVE = raw(`EXISTS (SELECT 1 FROM loom_nodes WHERE loom_nodes.id = channel_messages.claimed_by AND ${nodeBeatingSql()})`);

/** A row of `channel_messages`. */
const channelMessageRow = z
  .object({
    channel: z.string(),
    platform_id: z.string(),
    user_id: z.string(),
    user_name: z.string().nullable(),
    conversation_id: z.string(),
    conversation_kind: z.enum(['direct', 'group']),
    thread: z.string().nullable(),
    mentioned: flag,
    text: z.string(),
    status: z.enum(CHANNEL_MESSAGE_STATUSES),
    note: z.string().nullable(),
    received_at: z.number(),
    updated_at: z.number(),
  })
  .transform((row): ChannelMessageRecord => ({
    channel: row.channel,
    platformId: row.platform_id,
    userId: row.user_id,
    userName: row.user_name,
    conversationId: row.conversation_id,
    conversationKind: row.conversation_kind,
    thread: row.thread,
    mentioned: row.mentioned,
    text: row.text,
    status: row.status,
    note: row.note,
    receivedAt: row.received_at,
    updatedAt: row.updated_at,
  }));

const pairingColumns = 'code, channel, user_id, user_name, created_at, approved_at';
const selectPairings = raw(`SELECT ${pairingColumns} FROM channel_pairings`);

/** A row of `channel_pairings`. */
const channelPairingRow = z
  .object({
    code: z.string(),
    channel: z.string(),
    user_id: z.string(),
    user_name: z.string().nullable(),
    created_at: z.number(),
    approved_at: z.number().nullable(),
  })
  .transform((row): ChannelPairingRecord => ({
    code: row.code,
    channel: row.channel,
    userId: row.user_id,
    userName: row.user_name,
    createdAt: row.created_at,
    approvedAt: row.approved_at,
  }));

/** `ChannelRepository` on either database: the messages channels receive, and the pairings of their users. */
export class SqlChannelRepository implements ChannelRepository {
  readonly #db: Database;
  /** The node whose claims this store takes, on a database several nodes share (PostgreSQL); absent alone (SQLite). */
  readonly #node: string | undefined;

  constructor(db: Database, node?: string) {
    this.#db = db;
    this.#node = node;
  }

  async receive(record: ChannelMessageRecord): Promise<boolean> {
    const values = [
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
    ];
    const statement = sql`${insert('channel_messages', messageColumns, values)} ON CONFLICT (channel, platform_id) DO NOTHING`;
    return (await this.#db.run(statement, () => ({ action: `store message "${record.platformId}" of channel "${record.channel}"` }))) === 1;
  }

  async settle(channel: string, platformId: string, status: ChannelMessageStatus, note: string | null, at: number): Promise<void> {
    await this.#db.run(
      sql`UPDATE channel_messages SET status = ${status}, note = ${note}, updated_at = ${at} WHERE channel = ${channel} AND platform_id = ${platformId}`,
      () => ({
        action: `record message "${platformId}" of channel "${channel}" as ${status}`,
      }),
    );
  }

  async get(channel: string, platformId: string): Promise<ChannelMessageRecord | undefined> {
    const row = await this.#db.one(sql`${selectMessages} WHERE channel = ${channel} AND platform_id = ${platformId}`, () => ({
      action: `read message "${platformId}" of channel "${channel}"`,
    }));
    return row === undefined ? undefined : parseMessage(row);
  }

  async claim(channel: string, platformId: string): Promise<ChannelMessageClaim | undefined> {
    const node = this.#node;
    const describe = (): { action: string } => ({ action: `take up message "${platformId}" of channel "${channel}"` });
    if (node === undefined) {
      const message = await this.get(channel, platformId);
      return message === undefined ? undefined : { message, held: message.status === 'received', claimedBy: null };
    }
    // One statement: the claim, taken only from no node or a node that is gone (one this node
    // holds already is only read: no row written); and the message as it stood (the statement's
    // snapshot, which the claim's write does not show: it changes nothing else of it).
    const row = await this.#db.one(
      sql`WITH taken AS (
            UPDATE channel_messages SET claimed_by = ${node}
            WHERE channel = ${channel} AND platform_id = ${platformId} AND status = 'received'
              AND (claimed_by IS NULL OR (claimed_by <> ${node} AND NOT ${CLAIMER_ALIVE}))
            RETURNING 1)
          SELECT ${raw(messageColumns)},
            EXISTS (SELECT 1 FROM taken) OR (status = 'received' AND claimed_by IS NOT DISTINCT FROM ${node}) AS held,
            CASE WHEN EXISTS (SELECT 1 FROM taken) THEN ${node} ELSE claimed_by END AS claimed_by
          FROM channel_messages WHERE channel = ${channel} AND platform_id = ${platformId}`,
      describe,
    );
    if (row === undefined) return undefined;
    const claimedBy = row['claimed_by'];
    return { message: parseMessage(row), held: row['held'] === true, claimedBy: typeof claimedBy === 'string' ? claimedBy : null };
  }

  async release(channel: string, platformId: string): Promise<void> {
    const node = this.#node;
    if (node === undefined) return;
    await this.#db.run(
      sql`UPDATE channel_messages SET claimed_by = NULL WHERE channel = ${channel} AND platform_id = ${platformId} AND claimed_by = ${node} AND status = 'received'`,
      () => ({ action: `give up message "${platformId}" of channel "${channel}"` }),
    );
  }

  async releaseAll(): Promise<void> {
    const node = this.#node;
    if (node === undefined) return;
    await this.#db.run(sql`UPDATE channel_messages SET claimed_by = NULL WHERE claimed_by = ${node} AND status = 'received'`, () => ({
      action: 'give up the channel messages this node took up',
    }));
  }

  async amend(channel: string, platformId: string, change: { text: string } | { withdrawn: string }, at: number): Promise<boolean> {
    const set = 'text' in change ? sql`text = ${change.text}` : sql`status = 'ignored', note = ${change.withdrawn}`;
    const statement = sql`UPDATE channel_messages SET ${set}, updated_at = ${at} WHERE channel = ${channel} AND platform_id = ${platformId} AND status = 'received'`;
    return (await this.#db.run(statement, () => ({ action: `change message "${platformId}" of channel "${channel}"` }))) === 1;
  }

  async unsettled(channel: string, options: { notClaimedHere?: boolean } = {}): Promise<ChannelMessageRecord[]> {
    const node = this.#node;
    const others = options.notClaimedHere === true && node !== undefined ? sql` AND claimed_by IS DISTINCT FROM ${node}` : sql``;
    const rows = await this.#db.all(
      sql`${selectMessages} WHERE channel = ${channel} AND status = 'received'${others} ORDER BY received_at, ${this.#db.insertOrder}`,
      () => ({
        action: `list the unanswered messages of channel "${channel}"`,
      }),
    );
    return rows.map(parseMessage);
  }

  async recent(channel: string, limit: number): Promise<ChannelMessageRecord[]> {
    const action = `list the recent messages of channel "${channel}"`;
    const order = this.#db.insertOrder;
    const rows = await this.#db.all(
      sql`${selectMessages} WHERE channel = ${channel} ORDER BY received_at DESC, ${order} DESC LIMIT ${this.#db.limit(limit, action)}`,
      () => ({ action }),
    );
    return rows.map(parseMessage);
  }

  requestPairing(record: ChannelPairingRecord): Promise<void> {
    return this.#db.transaction(
      function* (): Work<void> {
        yield sql`DELETE FROM channel_pairings WHERE channel = ${record.channel} AND user_id = ${record.userId} AND approved_at IS NULL`;
        yield insert('channel_pairings', pairingColumns, [record.code, record.channel, record.userId, record.userName, record.createdAt, record.approvedAt]);
      },
      () => ({ action: `store a pairing request of channel "${record.channel}"` }),
    );
  }

  approvePairing(code: string, at: number): Promise<ChannelPairingRecord | undefined> {
    return this.#db.transaction(
      function* (): Work<ChannelPairingRecord | undefined> {
        yield sql`UPDATE channel_pairings SET approved_at = ${at} WHERE code = ${code} AND approved_at IS NULL`;
        const [row] = (yield sql`${selectPairings} WHERE code = ${code}`).rows;
        return row === undefined ? undefined : parsePairing(row);
      },
      () => ({ action: `approve pairing "${code}"` }),
    );
  }

  async pairingOf(channel: string, userId: string): Promise<ChannelPairingRecord | undefined> {
    const statement = sql`${selectPairings} WHERE channel = ${channel} AND user_id = ${userId} ORDER BY approved_at IS NULL, created_at DESC LIMIT 1`;
    const row = await this.#db.one(statement, () => ({ action: `read the pairing of "${userId}" on channel "${channel}"` }));
    return row === undefined ? undefined : parsePairing(row);
  }

  async pairings(channel?: string): Promise<ChannelPairingRecord[]> {
    const filter = where(channel === undefined ? [] : [sql`channel = ${channel}`]);
    const rows = await this.#db.all(sql`${selectPairings} ${filter} ORDER BY created_at DESC, ${this.#db.insertOrder} DESC`, () => ({
      action: 'list pairings',
    }));
    return rows.map(parsePairing);
  }
}

function parseMessage(row: Row): ChannelMessageRecord {
  return parseRow(channelMessageRow, row, 'channel_messages', ['channel', 'platform_id']);
}

function parsePairing(row: Row): ChannelPairingRecord {
  return parseRow(channelPairingRow, row, 'channel_pairings', ['code']);
}
