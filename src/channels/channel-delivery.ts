/**
 * Replies on their way to a platform: sent in as many messages as its limit needs, tried again
 * while the platform is away, and, when it never takes them, recorded as undelivered in the
 * daemon's log and the audit log (`channel-reply-fail`).
 */
import type { ChannelConfig } from '../config/index.ts';
import type { ChannelMessageRecord } from '../contracts/index.ts';
import { messageOf } from '../errors/index.ts';
import type { ChannelEvent } from '../kernel/index.ts';
import type { ChannelAdapter, ReplyTarget } from './channel-adapter.ts';
import { agentIdOf, type ChannelContext } from './channel-context.ts';
import { splitReply } from './split-reply.ts';

/** The waits between attempts to deliver a reply while the platform is away (about a minute in all). */
const DELIVERY_RETRY_MS: readonly number[] = [1000, 2000, 4000, 8000, 16_000, 30_000];

/** A message of the channel the platform did not take, retries spent (the audit log's `channel-reply-fail`). */
export type ChannelReplyFailedEvent = Extract<ChannelEvent, { type: 'channel-reply-fail' }>;

/** What a message the channel could not deliver was. */
export type UndeliveredKind = ChannelReplyFailedEvent['kind'];

/** Where a reply goes: a conversation (and thread) of a running channel. */
export interface ReplyWay {
  config: ChannelConfig;
  adapter: ChannelAdapter;
  target: ReplyTarget;
}

/**
 * Records that the platform did not take `kind`, in answer to `message`, retries spent: in the
 * daemon's log and the audit log (`channel-reply-fail`), where the channel's refusals are.
 */
export async function undelivered(
  context: ChannelContext,
  failed: { config: ChannelConfig; message: ChannelMessageRecord; kind: UndeliveredKind; error: unknown },
): Promise<void> {
  const { config, message, kind, error } = failed;
  const { logger } = context;
  const { kernel, clock } = context.options;
  const reason = messageOf(error);
  const what =
    kind === 'reply'
      ? 'the reply'
      : kind === 'error-reply'
        ? 'the error reply'
        : kind === 'refusal'
          ? 'the refusal'
          : kind === 'approval-request'
            ? 'the approval request'
            : 'the answer to an approval command';
  logger.error(
    { err: error, channel: config.name, platformId: message.platformId, conversationId: message.conversationId, kind, problem: reason },
    `could not deliver ${what} to message "${message.platformId}" on channel "${config.name}": ${reason}`,
  );
  const event: ChannelReplyFailedEvent = {
    type: 'channel-reply-fail',
    at: clock.now(),
    agentId: agentIdOf(context, config),
    name: config.agent,
    channel: config.name,
    kind,
    platformId: message.platformId,
    conversationId: message.conversationId,
    thread: message.thread,
    userId: message.userId,
    reason,
  };
  // The kernel's event union (src/kernel/event-bus.ts) does not name this type yet; the audit
  // log stores any event as its type, time, agent and data.
  await kernel
    .publish(event)
    .catch((caught: unknown) => logger.error({ err: caught, channel: config.name }, 'could not record an undelivered reply in the audit log'));
}

/**
 * Runs a delivery to the platform, again after a wait while it fails (the platform away), until
 * the waits run out; a refusal the platform would repeat (`refusedForGood`) is not tried again.
 */
export async function deliver<T>(context: ChannelContext, channel: string, action: () => Promise<T>): Promise<T> {
  const { clock } = context.options;
  const adapter = context.running.get(channel)?.adapter;
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await action();
    } catch (error) {
      const wait = DELIVERY_RETRY_MS[attempt];
      if (wait === undefined || context.stopping.aborted || adapter?.refusedForGood?.(error) === true) throw error;
      context.logger.warn({ err: error, channel, attempt: attempt + 1, retryInMs: wait }, 'a reply could not be delivered; trying again');
      await clock.sleep(wait, { signal: context.stopping });
    }
  }
}

/** Sends each of `parts` as a message of its own, in order. */
export async function sendParts(context: ChannelContext, way: ReplyWay, parts: readonly string[]): Promise<void> {
  for (const part of parts) await deliver(context, way.config.name, () => way.adapter.send(way.target, part));
}

/** Sends `text` as the reply, in as many messages as the platform's limit needs. */
export async function reply(context: ChannelContext, way: ReplyWay, text: string): Promise<void> {
  await sendParts(context, way, splitReply(text, way.adapter.maxMessageLength));
}
