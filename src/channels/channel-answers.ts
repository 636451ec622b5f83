/**
 * `ChannelAnswers`: the messages a channel took in, answered: each conversation's in order, each
 * message admitted by the policy first, then the agent's turn as the person who wrote it (its
 * words streamed by edits where the platform can), and the reply delivered; a reply command
 * (`approve <id>`, `deny <id>`) answered at once.
 */
import type { ChannelConfig } from '../config/index.ts';
import type { ChannelMessageRecord } from '../contracts/index.ts';
import { isLoomError, messageOf } from '../errors/index.ts';
import { kernelAs, untilTurnHere } from '../kernel/index.ts';
import type { ChannelAdapter, ReplyTarget } from './channel-adapter.ts';
import type { ChannelAdmission } from './channel-admission.ts';
import { askApproval, decideApproval } from './channel-approvals.ts';
import { type ChannelContext, channelPrincipal, type RunningChannel } from './channel-context.ts';
import { deliver, reply, sendParts, undelivered } from './channel-delivery.ts';
import { splitReply } from './split-reply.ts';

/** How often a streamed reply's message is edited at most (platforms rate-limit edits). */
const EDIT_INTERVAL_MS = 1000;

/** How often a message another node is answering is looked at again, to take it up should that node be gone (decision 0061). */
export const CLAIM_RETRY_MS = 2000;

/** `approve <id>` or `deny <id>` (an id or its first 8 characters), the reply command where a platform has no buttons. */
const APPROVAL_COMMAND = /^\s*(approve|deny)\s+([0-9a-f-]{8,36})\s*$/i;

/** The reply command (`approve <id>`, `deny <id>`) `text` is on a channel with approvers, if it is one. */
export function approvalCommandOf(config: ChannelConfig, text: string): { verb: string; reference: string } | undefined {
  const command = config.policy.approvers.length > 0 ? APPROVAL_COMMAND.exec(text) : null;
  return command === null ? undefined : { verb: command[1] ?? '', reference: command[2] ?? '' };
}

/** The answering of the service's messages. */
export class ChannelAnswers {
  readonly #context: ChannelContext;
  readonly #admission: ChannelAdmission;
  /** `<channel>:<user id>` → the person's name in `[people]`. */
  readonly #personOf = new Map<string, string>();
  /** Per conversation: its messages are answered in order. */
  readonly #conversations = new Map<string, Promise<void>>();
  /** `<channel>\0<platform id>` of the messages queued or being answered here, so that one is not queued twice. */
  readonly #pending = new Set<string>();

  constructor(context: ChannelContext, admission: ChannelAdmission) {
    this.#context = context;
    this.#admission = admission;
    for (const [person, identities] of Object.entries(context.options.people ?? {})) for (const identity of identities) this.#personOf.set(identity, person);
  }

  /** Answers a stored message after the others of its conversation (unless it is queued or answered here already). */
  enqueue(channel: RunningChannel, message: ChannelMessageRecord): void {
    const key = `${channel.config.name}\u0000${message.conversationId}\u0000${message.thread ?? ''}`;
    const id = `${channel.config.name}\u0000${message.platformId}`;
    if (this.#pending.has(id)) return;
    this.#pending.add(id);
    const previous = this.#conversations.get(key) ?? Promise.resolve();
    const next = previous
      .then(() => this.#answer(channel, message))
      .catch((error: unknown) =>
        this.#context.logger.error({ err: error, channel: channel.config.name, platformId: message.platformId }, 'could not answer a channel message'),
      )
      .finally(() => this.#pending.delete(id));
    this.#conversations.set(key, next);
    void next.finally(() => {
      if (this.#conversations.get(key) === next) this.#conversations.delete(key);
    });
  }

  /**
   * Takes up a message stored and not answered (a previous process's, or another node's that
   * polled the channel before): a reply command answered at once, as when it came in, in the
   * background; another message queued in its conversation. One queued or answered here already
   * is left as it is.
   */
  takeUp(channel: RunningChannel, message: ChannelMessageRecord): void {
    if (this.#pending.has(`${channel.config.name}\u0000${message.platformId}`)) return;
    const adapter = channel.adapter;
    const command = approvalCommandOf(channel.config, message.text);
    if (command === undefined || adapter === undefined) {
      this.enqueue(channel, message);
      return;
    }
    const answered = this.answerCommand({ config: channel.config, adapter }, message, command);
    // Counted with the conversations, so that `idle` waits for it.
    const key = `${channel.config.name}\u0000${message.platformId}\u0000command`;
    this.#conversations.set(key, answered);
    void answered.finally(() => this.#conversations.delete(key));
  }

  /** Resolves once every message taken in so far is settled. */
  async idle(): Promise<void> {
    while (this.#conversations.size > 0) await Promise.allSettled([...this.#conversations.values()]);
  }

  /**
   * Answers a reply command (`approve <id>`, `deny <id>`) at once, not behind the turn it would
   * unblock: admitted by the policy and rate as any message first (a stranger's command in a
   * closed group is ignored like their chatter there, and counts towards their rate), then
   * decided (by an approver only, see `decideApproval`).
   */
  async answerCommand(
    channel: { config: RunningChannel['config']; adapter: ChannelAdapter },
    message: ChannelMessageRecord,
    command: { verb: string; reference: string },
  ): Promise<void> {
    const context = this.#context;
    const { config, adapter } = channel;
    const { store, clock } = context.options;
    const id = `${config.name}\u0000${message.platformId}`;
    // Taken in once here: as it came in, and again from the stored ones not answered.
    if (this.#pending.has(id)) return;
    this.#pending.add(id);
    try {
      // Decided by one node: another that took the channel over leaves it to the node deciding it, while that node lives.
      if ((await this.#claim(channel, message.platformId)) === undefined) return;
      if (!(await this.#admission.admit(config, adapter, message))) return;
      const text = await decideApproval(context, config, { user: { id: message.userId, name: message.userName }, ...command });
      // Decided whether or not the platform takes the words that say so.
      await reply(context, { config, adapter, target: { conversationId: message.conversationId, thread: message.thread } }, text).catch((error: unknown) =>
        undelivered(context, { config, message, kind: 'approval-answer', error }),
      );
      await store.channels.settle(config.name, message.platformId, 'answered', text, clock.now());
    } catch (error) {
      context.logger.error({ err: error, channel: config.name, platformId: message.platformId }, 'could not answer an approval command');
      // Settled, so that a restart does not take it up as a message for the agent.
      await store.channels
        .settle(
          config.name,
          message.platformId,
          'failed',
          `the approval command could not be answered: ${error instanceof Error ? error.message : String(error)}`,
          clock.now(),
        )
        .catch(() => undefined);
    } finally {
      this.#pending.delete(id);
    }
  }

  /** Answers one stored message: policy, identity, the agent's turn (streamed by edits where the platform can), the reply. */
  async #answer(channel: RunningChannel, queued: ChannelMessageRecord): Promise<void> {
    const context = this.#context;
    const { logger } = context;
    const { kernel, store, clock } = context.options;
    const { config } = channel;
    const adapter = channel.adapter;
    if (adapter === undefined) return;
    // Taken up by this node before anything is shown to the person, as it stands now (edited or
    // deleted on the platform while it waited); one another node answers is left to it.
    const message = await this.#claim({ config, adapter }, queued.platformId);
    if (message === undefined) return;
    if (!(await this.#admission.admit(config, adapter, message))) return;
    const target: ReplyTarget = { conversationId: message.conversationId, thread: message.thread };
    const way = { config, adapter, target };
    const settle = (status: ChannelMessageRecord['status'], note: string | null): Promise<void> =>
      store.channels.settle(config.name, message.platformId, status, note, clock.now());
    /**
     * Whether another node settled the message while this one answered it, or holds it now
     * (decision 0061): this node was taken for gone (paused past its heartbeat) and another took
     * the message up. The turn ran once (its key); its reply, or the apology, is not delivered
     * twice. The claim is taken again to find out: when the store cannot be read, it is delivered,
     * a second copy rather than none.
     */
    const answeredElsewhere = async (): Promise<boolean> => {
      const claim = await store.channels.claim(config.name, message.platformId).catch(() => undefined);
      const status = claim?.message.status;
      if (status !== 'answered' && status !== 'failed' && !(status === 'received' && claim?.held === false)) return false;
      logger.info(
        { channel: config.name, platformId: message.platformId, status },
        status === 'received'
          ? `channel "${config.name}": message "${message.platformId}" was taken up by another node meanwhile; answered there, not here`
          : `channel "${config.name}": message "${message.platformId}" was settled by another node meanwhile; not answered again here`,
      );
      return true;
    };

    await adapter.typing?.(target).catch(() => undefined);
    let streamed = '';
    let sent: { messageId: string; text: string } | undefined;
    /** When the reply so far was last put on its way (sent, then edited); undefined before its first words. */
    let lastShown: number | undefined;
    let edits: Promise<void> = Promise.resolve();
    const edit = adapter.edit?.bind(adapter);
    /**
     * Whether the words streamed may be shown: with several nodes, this node still holds the
     * message when the first words come (once asked; decision 0061): paused past its heartbeat
     * before them (a slow model), it may have been taken for gone and the message taken up
     * elsewhere. When the store cannot be read, they are shown. Alone, always.
     */
    let mayStream: Promise<boolean> | undefined;
    const stillHeld = async (): Promise<boolean> =>
      context.options.pollLease === undefined || ((await store.channels.claim(config.name, message.platformId).catch(() => undefined))?.held ?? true);
    /** Shows `text` as the reply so far: sent as a message the first time, that message edited after. */
    const show = async (text: string): Promise<void> => {
      if (sent === undefined) sent = { messageId: (await adapter.send(target, text)).messageId, text };
      else if (sent.text !== text && edit !== undefined) {
        await edit(target, sent.messageId, text);
        sent = { ...sent, text };
      }
    };
    try {
      const speaker = channelPrincipal(
        config,
        message.userId,
        `channel:${config.name}:${message.conversationId}${message.thread === null ? '' : `:${message.thread}`}`,
      );
      const result = await this.#untilNotElsewhere(() =>
        kernelAs(kernel, speaker).send(config.agent, message.text, {
          person: this.#personOf.get(`${config.name}:${message.userId}`) ?? `${config.name}:${message.userId}`,
          // A message queued again after a restart gets the turn it started, resumed (decision 0045), not a second one.
          idempotencyKey: `channel:${config.name}:${message.platformId}`,
          emit: (event) => {
            if (event.type === 'approval-request') {
              edits = edits
                .then(() => askApproval(context, way, event))
                .catch((error: unknown) => undelivered(context, { config, message, kind: 'approval-request', error }));
              return;
            }
            if (edit === undefined || event.type !== 'text-delta') return;
            streamed += event.text;
            const now = clock.now();
            // Timed from when the first words were put on their way, not from when the platform took
            // them: the words streamed while that send is under way wait for the next edit.
            if (streamed.length > adapter.maxMessageLength || (lastShown !== undefined && now - lastShown < EDIT_INTERVAL_MS)) return;
            const text = streamed;
            lastShown = now;
            edits = edits.then(async () => {
              if (await (mayStream ??= stillHeld())) await show(text);
            });
            edits = edits.catch((error: unknown) => logger.warn({ err: error, channel: config.name }, 'could not update a streamed reply'));
          },
        }),
      );
      await edits;
      if (await answeredElsewhere()) return;
      const [first = '', ...rest] = splitReply(result.text === '' ? '(no reply)' : result.text, adapter.maxMessageLength);
      try {
        await deliver(context, config.name, () => show(first));
        await sendParts(context, way, rest);
      } catch (error) {
        // The answer is in the session; only the platform did not take it.
        await settle('failed', `the reply could not be delivered: ${messageOf(error)}`);
        await undelivered(context, { config, message, kind: 'reply', error });
        return;
      }
      // Delivered: a store that cannot record it now does not make the person get an apology too.
      // The message stays unanswered in the store, so a restart may deliver the reply again.
      const recorded = await settle('answered', result.text).then(
        () => true,
        (error: unknown) => {
          logger.error(
            { err: error, channel: config.name, platformId: message.platformId },
            `channel "${config.name}": delivered the reply to message "${message.platformId}" but could not record it as answered; a restart may deliver it again`,
          );
          return false;
        },
      );
      if (!recorded) return;
      logger.info(
        { channel: config.name, conversationId: message.conversationId },
        `channel "${config.name}": delivered the reply of agent "${config.agent}" to ${message.userName ?? message.userId} (${1 + rest.length} message${rest.length === 0 ? '' : 's'})`,
      );
    } catch (error) {
      await edits;
      const why = error instanceof Error ? error.message : String(error);
      logger.warn({ err: error, channel: config.name, platformId: message.platformId }, 'a channel message was not answered');
      if (await answeredElsewhere()) return;
      const text =
        isLoomError(error) && error.category === 'user'
          ? `Sorry, I can't do that: ${why}`
          : 'Sorry, something went wrong while I was answering; please try again.';
      await reply(context, way, text).catch((failure: unknown) => undelivered(context, { config, message, kind: 'error-reply', error: failure }));
      await settle('failed', why);
    }
  }

  /**
   * Takes a message up for this node to answer (its claim, decision 0061), as it stands now;
   * undefined when it is not this node's to answer: settled, withdrawn, no longer stored, or its
   * channel no longer run here. One another node (alive) is answering is looked at again every
   * {@link CLAIM_RETRY_MS} on the service's clock, until that node settles it or is gone (then it
   * is taken up here).
   */
  async #claim(channel: { config: ChannelConfig; adapter: ChannelAdapter }, platformId: string): Promise<ChannelMessageRecord | undefined> {
    const context = this.#context;
    const { store, clock } = context.options;
    const name = channel.config.name;
    for (let looks = 0; ; looks += 1) {
      const claim = await store.channels.claim(name, platformId);
      if (claim?.message.status !== 'received') return undefined;
      if (claim.held) return claim.message;
      if (looks === 0)
        context.logger.info(
          { channel: name, platformId },
          `channel "${name}": message "${platformId}" is being answered by another node; left to it while it runs`,
        );
      await clock.sleep(CLAIM_RETRY_MS, { signal: context.stopping }).catch(() => undefined);
      if (context.stopping.aborted || context.running.get(name)?.adapter !== channel.adapter) return undefined;
    }
  }

  /**
   * Runs `send` again while its message's turn runs on another node: `TURN_RUNNING` (this node
   * took the channel over from a node that died, and another node took the turn over), or
   * `TURN_TAKEN_OVER` (this node ran the turn, and its lease on it lapsed: a long pause, the
   * database out of reach). Once that node finishes the turn, its reply comes back here, by the
   * same idempotency key, to be delivered (see `untilTurnHere`). Gives up when the service stops.
   */
  #untilNotElsewhere<T>(send: () => Promise<T>): Promise<T> {
    return untilTurnHere(send, this.#context.options.clock, this.#context.stopping);
  }
}
