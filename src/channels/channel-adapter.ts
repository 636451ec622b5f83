/**
 * What a channel adapter does for Loom: receive people's messages from a platform, and send
 * (and, where the platform allows, edit) replies. Each adapter is a thin layer on the platform's
 * maintained SDK; everything else (storage, policy, identity, sessions) is the channel service's.
 */

/** A message as it came in, in the platform's own ids. */
export interface InboundMessage {
  /** The platform's id of the message: a second delivery of the same id is answered once. */
  platformId: string;
  user: { id: string; name: string | null };
  conversation: { id: string; kind: 'direct' | 'group'; thread: string | null };
  /** Whether the message mentions the bot (it matters in groups). */
  mentioned: boolean;
  text: string;
}

/** Where a reply goes: the conversation (and thread) the message came from. */
export interface ReplyTarget {
  conversationId: string;
  thread: string | null;
}

/**
 * Receives what an adapter takes in. It resolves once the message is stored (or found to be a
 * duplicate): only then may the adapter acknowledge it to the platform.
 */
export type InboundSink = (message: InboundMessage) => Promise<{ duplicate: boolean }>;

/** A message changed on the platform after it came in: edited (its new text) or deleted. */
export type InboundChange = { platformId: string; kind: 'edit'; text: string } | { platformId: string; kind: 'delete' };

/** Receives edits and deletions; one that comes before the message is answered changes what is answered. */
export type ChangeSink = (change: InboundChange) => Promise<void>;

/** A button a person pressed under one of the bot's messages (an approval's Approve or Deny). */
export interface InboundChoice {
  user: { id: string; name: string | null };
  conversationId: string;
  /** What the button carries (`approve:<id>`, `deny:<id>`). */
  data: string;
  /** Tells the person what came of it (a toast on Telegram). */
  acknowledge(text: string): Promise<void>;
}

/** Receives the buttons people press. */
export type ChoiceSink = (choice: InboundChoice) => Promise<void>;

/** A button under a message: what it says, what it carries back. */
export interface Choice {
  label: string;
  data: string;
}

/** How a channel's connection stands; `standby`: another node polls it (it takes over when that node stops). */
export type ChannelState = 'starting' | 'connected' | 'reconnecting' | 'stopped' | 'failed' | 'standby';

export interface ChannelAdapter {
  readonly kind: string;
  /** The longest text one message may carry on the platform (longer replies are split). */
  readonly maxMessageLength: number;
  /**
   * Starts receiving; messages go to `sink`, pressed buttons to `choices`, edits and deletions
   * to `changes`. Resolves once receiving has begun.
   */
  start(sink: InboundSink, choices?: ChoiceSink, changes?: ChangeSink): Promise<void>;
  stop(): Promise<void>;
  /** Sends a message; its platform id, for edits. */
  send(target: ReplyTarget, text: string): Promise<{ messageId: string }>;
  /** Replaces a sent message's text (a streamed reply growing); absent where the platform cannot. */
  edit?(target: ReplyTarget, messageId: string, text: string): Promise<void>;
  /** Sends a message with buttons under it, where the platform has them. */
  sendChoices?(target: ReplyTarget, text: string, choices: readonly Choice[]): Promise<{ messageId: string }>;
  /** Shows that a reply is being written, where the platform can. */
  typing?(target: ReplyTarget): Promise<void>;
  /**
   * Whether a failed send is a refusal the platform would repeat (the bot blocked, the chat gone,
   * the request malformed), so that trying again in a minute cannot deliver it; absent, every
   * failure is taken for the platform being away and tried again.
   */
  refusedForGood?(error: unknown): boolean;
  state(): { state: ChannelState; error: string | null };
}

/**
 * Whether an HTTP status refuses a request for good: a 4xx but for those that mean "not now"
 * (408 Request Timeout, 409 Conflict, 425 Too Early, 429 Too Many Requests).
 */
export function isRefusalForGood(status: number): boolean {
  return status >= 400 && status < 500 && ![408, 409, 425, 429].includes(status);
}

/** An adapter the platform reaches over HTTP: `POST /hooks/<name>` is handed to it. */
export interface InboundRequests {
  /**
   * Answers a POST: the platform's own checks (a signature, a timestamp), then the message taken in.
   * @throws {LoomError} a request it refuses (`UNAUTHORIZED`, `INVALID_REQUEST`, `ROUTE_NOT_FOUND`,
   * `CHANNEL_STOPPED`), which the HTTP layer's one error mapping answers.
   */
  handle(request: Request): Promise<Response>;
}
