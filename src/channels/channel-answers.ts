/**
 * `ChannelAnswers`: the messages a channel took in, answered: each conversation's in order, each
 * message admitted by the policy first, then the agent's turn as the person who wrote it (its
 * words streamed by edits where the platform can), and the reply delivered; a reply command
 * (`approve <id>`, `deny <id>`) answered at once.
 */
import type { ChannelConfig } from '../config/index.ts';
import type { ChannelMessageClaim, ChannelMessageRecord } from '../contracts/index.ts';
import { isLoomError, messageOf } from '../errors/index.ts';
import { kernelAs, TURN_ELSEWHERE_RETRY_MS, TURN_ELSEWHERE_WAIT_MS, untilTurnHere } from '../kernel/index.ts';
import type { ChannelAdapter, ReplyTarget } from './channel-adapter.ts';
import type { AnswerShown, ChannelAdmission } from './channel-admission.ts';
import { askApproval, decideApproval } from './channel-approvals.ts';
import { type ChannelContext, channelPrincipal, type RunningChannel } from './channel-context.ts';
import { deliver, reply, sendParts, undelivered } from './channel-delivery.ts';
import { splitReply } from './split-reply.ts';

/** How often a streamed reply's message is edited at most (platforms rate-limit edits). */
const EDIT_INTERVAL_MS = 1000;

/** How often a message another node is answering is looked at again, to take it up should that node be gone (decision 0061). */
const CLAIM_RETRY_MS = TURN_ELSEWHERE_RETRY_MS;

/** A stored message's key in this process's sets: its channel and its platform id. */
function messageKey(channel: string, platformId: string): string {
  return `${channel}\u0000${platformId}`;
}

/** How long a message another node is answering is looked at, at most: as long as a turn running elsewhere is waited for. */
const CLAIM_WAIT_MS = TURN_ELSEWHERE_WAIT_MS;

/**
 * How often, and how many times at most, the outcome of a message whose reply reached the person is
 * recorded again in the background when the store refused it.
 */
export const RECORD_RETRY_MS = 5000;
const RECORD_TRIES = 3;

/**
 * How an answer ended: `done` once its message is settled (recorded by this node, or found settled or
 * held by another); `shown` once anything reached the person (the refusal, streamed words, the reply,
 * an approval's prompt, the apology); `tried`, the outcome last written (or tried).
 */
interface Outcome extends AnswerShown {
  done: boolean;
}

/** A message as this node finds it when it comes to answer it: its to answer (`held`), another node's (`elsewhere`), or neither. */
type Look = { held: ChannelMessageRecord } | { elsewhere: string | null } | undefined;

/** `approve <id>` or `deny <id>` (an id or its first 8 characters), the reply command where a platform has no buttons. */
const APPROVAL_COMMAND = /^\s*(approve|deny)\s+([0-9a-f-]{8,36})\s*$/i;

/** The reply command (`approve <id>`, `deny <id>`) `text` is on a channel with approvers, if it is one. */
function approvalCommandOf(config: ChannelConfig, text: string): { verb: string; reference: string } | undefined {
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
  /**
   * `<channel>\0<platform id>` of the messages whose reply (or apology) reached the person but
   * could not be recorded: not answered again while this process runs (a restart may, decision 0061).
   */
  readonly #delivered = new Set<string>();
  /** The outcomes of `#delivered` messages being recorded again (`#keepDelivered`), which a stop waits for. */
  readonly #keeping = new Set<Promise<void>>();

  constructor(context: ChannelContext, admission: ChannelAdmission) {
    this.#context = context;
    this.#admission = admission;
    for (const [person, identities] of Object.entries(context.options.people ?? {})) for (const identity of identities) this.#personOf.set(identity, person);
  }

  /**
   * Answers a stored message after the others of its conversation (unless it is queued or answered
   * here already). One another node is answering is left to it, and waited for outside the
   * conversation, whose next messages are answered meanwhile (decision 0061).
   */
  #enqueue(channel: RunningChannel, message: ChannelMessageRecord): void {
    const key = `${channel.config.name}\u0000${message.conversationId}\u0000${message.thread ?? ''}`;
    const id = messageKey(channel.config.name, message.platformId);
    if (this.#pending.has(id) || this.#delivered.has(id)) return;
    this.#pending.add(id);
    const previous = this.#conversations.get(key) ?? Promise.resolve();
    const next = previous
      .then(() => this.#answer(channel, message))
      .then(
        (elsewhere) => {
          if (elsewhere === undefined) this.#pending.delete(id);
          else this.#waitElsewhere(channel, message, elsewhere.claimedBy);
        },
        (error: unknown) => {
          this.#pending.delete(id);
          this.#context.logger.error({ err: error, channel: channel.config.name, platformId: message.platformId }, 'could not answer a channel message');
        },
      );
    this.#conversations.set(key, next);
    void next.finally(() => {
      if (this.#conversations.get(key) === next) this.#conversations.delete(key);
    });
  }

  /**
   * Takes up a stored message (as it came in, or stored and not answered: a previous process's,
   * or another node's that polled the channel before): a reply command answered at once, in the
   * background, so that the platform's next messages do not wait for it; another message queued
   * in its conversation. One queued or answered here already is left as it is. `adapter`: the
   * channel's, as it starts (before the channel records it).
   */
  takeUp(channel: RunningChannel, message: ChannelMessageRecord, adapter = channel.adapter): void {
    const id = messageKey(channel.config.name, message.platformId);
    if (this.#pending.has(id) || this.#delivered.has(id)) return;
    const command = approvalCommandOf(channel.config, message.text);
    if (command === undefined || adapter === undefined) {
      this.#enqueue(channel, message);
      return;
    }
    this.#track(
      `${messageKey(channel.config.name, message.platformId)}\u0000command`,
      this.#answerCommand({ config: channel.config, adapter }, message, command),
    );
  }

  /**
   * Resolves once every message taken in so far is settled; once the service stops, also once the
   * outcomes kept to record again are tried a last time.
   */
  async idle(): Promise<void> {
    while (this.#conversations.size > 0) await Promise.allSettled([...this.#conversations.values()]);
    if (this.#context.stopping.aborted) await Promise.allSettled([...this.#keeping]);
  }

  /** Counts `work` with the conversations under `key`, so that `idle` waits for it. */
  #track(key: string, work: Promise<void>): void {
    this.#conversations.set(key, work);
    void work.finally(() => {
      if (this.#conversations.get(key) === work) this.#conversations.delete(key);
    });
  }

  /**
   * Answers a reply command (`approve <id>`, `deny <id>`) at once, not behind the turn it would
   * unblock: admitted by the policy and rate as any message first (a stranger's command in a
   * closed group is ignored like their chatter there, and counts towards their rate), then
   * decided (by an approver only, see `decideApproval`).
   */
  async #answerCommand(
    channel: { config: RunningChannel['config']; adapter: ChannelAdapter },
    message: ChannelMessageRecord,
    command: { verb: string; reference: string },
  ): Promise<void> {
    const context = this.#context;
    const { config, adapter } = channel;
    const { store, clock } = context.options;
    const id = messageKey(config.name, message.platformId);
    // Taken in once here: as it came in, and again from the stored ones not answered.
    if (this.#pending.has(id) || this.#delivered.has(id)) return;
    this.#pending.add(id);
    let held = false;
    let settled = false;
    /** What reached the person: the refusal, or the words that say what was decided. */
    const answer: AnswerShown = { shown: false };
    try {
      // Decided by one node: another that took the channel over leaves it to the node deciding it, while that node lives.
      const look = await this.#look(config, message.platformId);
      if (look === undefined || ('elsewhere' in look && !(await this.#whileElsewhere(channel, message.platformId, look.elsewhere)))) return;
      held = true;
      if (!(await this.#admission.admit(config, adapter, message, answer))) {
        settled = true;
        return;
      }
      const text = await decideApproval(context, config, { user: { id: message.userId, name: message.userName }, ...command });
      // Decided whether or not the platform takes the words that say so.
      await reply(context, { config, adapter, target: { conversationId: message.conversationId, thread: message.thread } }, text).then(
        () => {
          answer.shown = true;
          answer.tried = { status: 'answered', note: text };
        },
        (error: unknown) => undelivered(context, { config, message, kind: 'approval-answer', error }),
      );
      await store.channels.settle(config.name, message.platformId, 'answered', text, clock.now());
      settled = true;
    } catch (error) {
      context.logger.error({ err: error, channel: config.name, platformId: message.platformId }, 'could not answer an approval command');
      // Settled, so that a restart does not take it up as a message for the agent.
      settled = await store.channels
        .settle(
          config.name,
          message.platformId,
          'failed',
          `the approval command could not be answered: ${error instanceof Error ? error.message : String(error)}`,
          clock.now(),
        )
        .then(
          () => true,
          () => false,
        );
    } finally {
      // Given up only when nothing reached the person: one that did is not answered again here.
      if (held && !settled && answer.shown) this.#keepDelivered(config.name, message.platformId, answer.tried);
      else if (held && !settled) await this.#release(config.name, message.platformId);
      this.#pending.delete(id);
    }
  }

  /**
   * Answers one stored message: policy, identity, the agent's turn (streamed by edits where the
   * platform can), the reply. Taken up by this node before anything is shown to the person, as it
   * stands now (edited or deleted on the platform while it waited); one another node answers is
   * left to it (returned: the node holding it). An answer that ends without settling the message
   * (the store failing) gives up its claim, so that another node may take it up, unless something
   * reached the person: then it is not answered again here, and its outcome is recorded again in
   * the background (`#keepDelivered`).
   */
  async #answer(channel: RunningChannel, queued: ChannelMessageRecord): Promise<{ claimedBy: string | null } | undefined> {
    const { config } = channel;
    const adapter = channel.adapter;
    if (adapter === undefined || this.#context.stopping.aborted) {
      // The channel no longer runs here (taken over), or the service stops: a claim taken while it
      // waited is given up (at a stop, with the others, by `releaseAll` once the answers end), so
      // that another node answers it.
      await this.#release(config.name, queued.platformId);
      return undefined;
    }
    const look = await this.#look(config, queued.platformId);
    if (look === undefined) return undefined;
    if ('elsewhere' in look) return { claimedBy: look.elsewhere };
    const message = look.held;
    const outcome: Outcome = { done: false, shown: false };
    try {
      await this.#answerHeld({ config, adapter }, message, outcome);
    } finally {
      if (outcome.shown && !outcome.done) this.#keepDelivered(config.name, message.platformId, outcome.tried);
      else if (!outcome.done) await this.#release(config.name, message.platformId);
    }
    return undefined;
  }

  /** Answers a message this node holds; `outcome` says how far it went. */
  async #answerHeld(channel: { config: ChannelConfig; adapter: ChannelAdapter }, message: ChannelMessageRecord, outcome: Outcome): Promise<void> {
    const context = this.#context;
    const { logger } = context;
    const { kernel, store, clock } = context.options;
    const { config, adapter } = channel;
    if (!(await this.#admission.admit(config, adapter, message, outcome))) {
      outcome.done = true;
      return;
    }
    const target: ReplyTarget = { conversationId: message.conversationId, thread: message.thread };
    const way = { config, adapter, target };
    const settle = async (status: ChannelMessageRecord['status'], note: string | null): Promise<void> => {
      outcome.tried = { status, note };
      await store.channels.settle(config.name, message.platformId, status, note, clock.now());
      outcome.done = true;
    };
    /**
     * Whether the message is no longer this node's to answer (decision 0061): settled by another
     * node meanwhile, deleted on the platform (`ignored`), or held by another node now (this node
     * was taken for gone, paused past its heartbeat, and another took the message up). The turn
     * ran once (its key); its reply, or the apology, is not delivered twice. The claim is taken
     * again to find out (a read while this node holds it): when the store cannot be read, it is
     * delivered, a second copy rather than none.
     */
    const answeredElsewhere = async (): Promise<boolean> => {
      const claim = await store.channels.claim(config.name, message.platformId).catch(() => undefined);
      if (claim === undefined || claim.held) return false;
      const status = claim.message.status;
      // Not this node's to settle (nor to give up) any more.
      outcome.done = true;
      logger.info(
        { channel: config.name, platformId: message.platformId, status, claimedBy: claim.claimedBy },
        status === 'received'
          ? `channel "${config.name}": message "${message.platformId}" was taken up by ${nodeNamed(claim.claimedBy)} meanwhile; answered there, not here`
          : status === 'ignored'
            ? `channel "${config.name}": message "${message.platformId}" was withdrawn while it was answered (${claim.message.note ?? 'ignored'}); its reply is not delivered`
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
      if (sent === undefined) {
        sent = { messageId: (await adapter.send(target, text)).messageId, text };
        outcome.shown = true;
      } else if (sent.text !== text && edit !== undefined) {
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
                .then(async () => {
                  await askApproval(context, way, event);
                  outcome.shown = true;
                })
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
        // Tried again while the platform is away, as long as the message is still this node's.
        let tries = 0;
        const shown = await deliver(context, config.name, async () => {
          if (tries++ > 0 && (await answeredElsewhere())) return false;
          await show(first);
          return true;
        });
        if (!shown) return;
        await sendParts(context, way, rest);
      } catch (error) {
        // The answer is in the session; only the platform did not take it.
        await settle('failed', `the reply could not be delivered: ${messageOf(error)}`);
        await undelivered(context, { config, message, kind: 'reply', error });
        return;
      }
      // Delivered: a store that cannot record it now does not make the person get an apology too.
      // Not answered again here; recorded again in the background, else a restart may deliver it again.
      const recorded = await settle('answered', result.text).then(
        () => true,
        (error: unknown) => {
          logger.error(
            { err: error, channel: config.name, platformId: message.platformId },
            `channel "${config.name}": delivered the reply to message "${message.platformId}" but could not record it as answered; not answered again while this node runs (a restart may deliver it again)`,
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
      await reply(context, way, text).then(
        () => (outcome.shown = true),
        (failure: unknown) => undelivered(context, { config, message, kind: 'error-reply', error: failure }),
      );
      await settle('failed', why);
    }
  }

  /**
   * Takes a message up for this node to answer (its claim, decision 0061), as it stands now:
   * `held`, this node's; `elsewhere`, another node (alive) is answering it; undefined when there is
   * nothing to answer (settled, withdrawn, not stored). A claim whose answer does not come back
   * (the store failing) is given up, in case it was taken.
   */
  async #look(config: ChannelConfig, platformId: string): Promise<Look> {
    let claim: ChannelMessageClaim | undefined;
    try {
      claim = await this.#context.options.store.channels.claim(config.name, platformId);
    } catch (error) {
      await this.#release(config.name, platformId);
      throw error;
    }
    if (claim?.message.status !== 'received') return undefined;
    return claim.held ? { held: claim.message } : { elsewhere: claim.claimedBy };
  }

  /**
   * Looks again at a message another node (alive) is answering, every {@link CLAIM_RETRY_MS} on the
   * service's clock, until that node settles it (false), is gone (true: this node holds it now), or
   * the channel stops running here (false); for {@link CLAIM_WAIT_MS} at most, then says so (false:
   * the message is looked at again when the channel's unanswered messages are next listed here).
   */
  async #whileElsewhere(
    channel: { config: ChannelConfig; adapter: ChannelAdapter | undefined },
    platformId: string,
    claimedBy: string | null,
  ): Promise<boolean> {
    const context = this.#context;
    const { clock } = context.options;
    const name = channel.config.name;
    const adapter = channel.adapter;
    let holder = claimedBy;
    context.logger.info(
      { channel: name, platformId, claimedBy: holder },
      `channel "${name}": message "${platformId}" is being answered by ${nodeNamed(holder)}; left to it while it runs`,
    );
    const until = clock.now() + CLAIM_WAIT_MS;
    for (;;) {
      await clock.sleep(CLAIM_RETRY_MS, { signal: context.stopping }).catch(() => undefined);
      if (context.stopping.aborted || context.running.get(name)?.adapter !== adapter) return false;
      const look = await this.#look(channel.config, platformId);
      if (look === undefined) return false;
      if ('held' in look) return true;
      holder = look.elsewhere ?? holder;
      if (clock.now() >= until) {
        context.logger.error(
          { channel: name, platformId, claimedBy: holder },
          `channel "${name}": message "${platformId}" has been held by ${nodeNamed(holder)} for ${CLAIM_WAIT_MS / 60_000} minutes and is still not recorded as answered (that node may have answered it and failed to record it); no longer waited for here`,
        );
        return false;
      }
    }
  }

  /** Waits, outside its conversation, for a message another node holds; answers it once this node holds it. */
  #waitElsewhere(channel: RunningChannel, message: ChannelMessageRecord, claimedBy: string | null): void {
    const id = messageKey(channel.config.name, message.platformId);
    const waited = this.#whileElsewhere(channel, message.platformId, claimedBy).then(
      (held) => {
        this.#pending.delete(id);
        if (held) this.#enqueue(channel, message);
      },
      (error: unknown) => {
        this.#pending.delete(id);
        this.#context.logger.error({ err: error, channel: channel.config.name, platformId: message.platformId }, 'could not answer a channel message');
      },
    );
    this.#track(`${id}\u0000elsewhere`, waited);
  }

  /**
   * Keeps a message whose reply (or anything) reached the person, but whose outcome the store did
   * not record, from being answered again while this process runs (its claim kept: another node
   * leaves it to this one while it lives); records `outcome` again every {@link RECORD_RETRY_MS},
   * {@link RECORD_TRIES} times at most, and at once when the service stops (before its claims are
   * given up, see `idle`); the last time, without its note (the reply the store refuses, likely).
   */
  #keepDelivered(channel: string, platformId: string, outcome: Outcome['tried']): void {
    const { logger, stopping } = this.#context;
    const { store, clock } = this.#context.options;
    const id = messageKey(channel, platformId);
    this.#delivered.add(id);
    if (outcome === undefined) return;
    let failure: unknown;
    /** The answer's own try counted. */
    let tries = 1;
    const recorded = async (note: string | null): Promise<boolean> => {
      tries++;
      try {
        await store.channels.settle(channel, platformId, outcome.status, note, clock.now());
      } catch (error) {
        failure = error;
        return false;
      }
      this.#delivered.delete(id);
      const without = note === outcome.note ? '' : ', without its note (the store refused it)';
      logger.info({ channel, platformId }, `channel "${channel}": recorded message "${platformId}" as ${outcome.status} at last${without}`);
      return true;
    };
    const kept = (async () => {
      let done = false;
      for (let retry = 0; retry < RECORD_TRIES && !done; retry++) {
        await clock.sleep(RECORD_RETRY_MS, { signal: stopping }).catch(() => undefined);
        done = await recorded(outcome.note);
        if (stopping.aborted) break;
      }
      if (!done && outcome.note !== null) done = await recorded(null);
      if (done) return;
      logger.error(
        { err: failure, channel, platformId },
        `channel "${channel}": could not record message "${platformId}" as ${outcome.status} (tried ${tries} times); not answered again while this node runs (a restart, or another node once this one stopped, may answer it again)`,
      );
    })();
    this.#keeping.add(kept);
    void kept.finally(() => this.#keeping.delete(kept));
  }

  /** Gives up this node's claim on a message it did not settle, so that another node takes it up at once; a failure is logged. */
  async #release(channel: string, platformId: string): Promise<void> {
    await this.#context.options.store.channels
      .release(channel, platformId)
      .catch((error: unknown) =>
        this.#context.logger.error(
          { err: error, channel, platformId },
          `channel "${channel}": could not give up message "${platformId}", left unanswered here; another node takes it up once this one is gone`,
        ),
      );
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

/** A node holding a message, for the log: `node <id>` (as `GET /api/cluster` lists the nodes), or another node. */
function nodeNamed(id: string | null): string {
  return id === null ? 'another node' : `node ${id}`;
}
