/**
 * `ChannelAdmission`: the channel's policy and rate applied to each message to the bot (spec/01
 * step 2), and the pairing codes it hands out. A message turned away is settled here: ignored
 * without a word, or refused with the reply such a message gets, audited as the policy says.
 */
import { randomInt } from 'node:crypto';
import type { ChannelConfig } from '../config/index.ts';
import type { ChannelMessageRecord, ChannelPairingRecord } from '../contracts/index.ts';
import type { ChannelAdapter, InboundMessage } from './channel-adapter.ts';
import { auditRefused, type ChannelContext } from './channel-context.ts';
import { reply, undelivered } from './channel-delivery.ts';
import { decide } from './channel-policy.ts';

const PAIRING_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const RATE_WINDOW_MS = 60_000;

/**
 * What of a message's answer reached the person (`shown`: words the platform took), and the outcome
 * last written for it (or tried), so that one shown is not answered again when its record fails.
 */
export interface AnswerShown {
  shown: boolean;
  tried?: { status: ChannelMessageRecord['status']; note: string | null };
}

/** Who may be answered on the service's channels, and how fast. */
export class ChannelAdmission {
  readonly #context: ChannelContext;
  /** Per channel and person: when their recent messages came. */
  readonly #recentByUser = new Map<string, number[]>();

  constructor(context: ChannelContext) {
    this.#context = context;
  }

  /**
   * The channel's policy and rate applied to a message to the bot (spec/01 step 2), the same for
   * every message, a reply command included. Returns whether it may be answered; when not, it is
   * settled here: ignored without a word, or refused with the reply such a message gets, audited
   * as `decide()` and the rate say. `answer` says whether the refusal (a pairing prompt included)
   * reached the person, also when its record then fails.
   */
  async admit(config: ChannelConfig, adapter: ChannelAdapter, message: ChannelMessageRecord, answer: AnswerShown): Promise<boolean> {
    const context = this.#context;
    const { store, clock } = context.options;
    const way = { config, adapter, target: { conversationId: message.conversationId, thread: message.thread } };
    const user = { id: message.userId, name: message.userName };
    const settle = (status: ChannelMessageRecord['status'], note: string): Promise<void> =>
      store.channels.settle(config.name, message.platformId, status, note, clock.now());
    const refused = async (reason: string, text: string): Promise<void> => {
      await auditRefused(context, { config, user, reason });
      // Refused whether or not the platform takes the words that say so.
      await reply(context, way, text).then(
        () => {
          answer.shown = true;
          answer.tried = { status: 'refused', note: reason };
        },
        (error: unknown) => undelivered(context, { config, message, kind: 'refusal', error }),
      );
      await settle('refused', reason);
    };

    // Only a direct message under the pairing policy asks whether the person is paired.
    const pairing =
      message.conversationKind === 'direct' && config.policy.direct === 'pairing' ? await store.channels.pairingOf(config.name, message.userId) : undefined;
    const paired = pairing !== undefined && pairing.approvedAt !== null;
    const inbound: InboundMessage = {
      platformId: message.platformId,
      user,
      conversation: { id: message.conversationId, kind: message.conversationKind, thread: message.thread },
      mentioned: message.mentioned,
      text: message.text,
    };
    const decision = decide(inbound, config.policy, paired);
    if (decision.kind === 'ignore') {
      if (decision.audit) await auditRefused(context, { config, user, reason: decision.reason });
      await settle('ignored', decision.reason);
      return false;
    }
    // Counted for every message to the bot, refused or not: a flood is held back whoever sends
    // it, and answered once.
    const sentLately = this.#recentCount(config, message.userId);
    const limit = config.policy.messages_per_minute;
    if (sentLately > limit) {
      const reason = `more than ${limit} messages a minute`;
      // Told once a minute; the rest of a flood gets no answer (a reply to each would feed it).
      if (sentLately === limit + 1) await refused(reason, `You are sending messages faster than ${limit} a minute; please wait a moment.`);
      else await settle('ignored', reason);
      return false;
    }
    if (decision.kind === 'refuse') {
      await refused(decision.reason, `Sorry, I can't talk with you here: ${decision.reason}.`);
      return false;
    }
    if (decision.kind === 'pair') {
      const code = await this.#pairingCode(config, message, pairing);
      await refused(
        `not paired; pairing code ${code} issued`,
        `I can't talk with you here yet. Ask the owner of this Loom to run:\n\nloom channels approve ${code}`,
      );
      return false;
    }
    return true;
  }

  /** How many messages the person sent in the last minute, this one counted. */
  #recentCount(config: ChannelConfig, userId: string): number {
    const key = `${config.name}\u0000${userId}`;
    const now = this.#context.options.clock.now();
    const recent = (this.#recentByUser.get(key) ?? []).filter((at) => now - at < RATE_WINDOW_MS);
    recent.push(now);
    this.#recentByUser.set(key, recent);
    return recent.length;
  }

  /** The person's pairing code: the one still waiting in `existing` (their pairing as stored), else a new one. */
  async #pairingCode(config: ChannelConfig, message: ChannelMessageRecord, existing: ChannelPairingRecord | undefined): Promise<string> {
    if (existing !== undefined && existing.approvedAt === null) return existing.code;
    const code = Array.from({ length: 6 }, () => PAIRING_ALPHABET[randomInt(PAIRING_ALPHABET.length)]).join('');
    const { store, clock } = this.#context.options;
    await store.channels.requestPairing({
      code,
      channel: config.name,
      userId: message.userId,
      userName: message.userName,
      createdAt: clock.now(),
      approvedAt: null,
    });
    return code;
  }
}
