/** The state of a channel's connection to its platform. */
export type ChannelState = 'starting' | 'connected' | 'reconnecting' | 'stopped' | 'failed' | 'standby';

/** A channel as `GET /api/channels` and `loom channels list` show it. */
export interface ChannelView {
  name: string;
  kind: string;
  agent: string;
  state: ChannelState;
  error: string | null;
  /** When its newest message came in (ISO 8601), if any. */
  lastMessageAt: string | null;
  policy: { direct: string; groups: string; require_mention: boolean; messages_per_minute: number; approvers: string[] };
  /** Pairing requests waiting for the owner. */
  pendingPairings: { code: string; userId: string; userName: string | null; requestedAt: string }[];
}

/** A pairing the owner approved (`POST /api/channels/pairings/{code}/approve`). */
export interface PairingView {
  code: string;
  channel: string;
  user_id: string;
  user_name: string | null;
  approved_at: string;
}
