/**
 * `ChannelRunner`: the service's channels started and stopped. Each adapter starts with a sink
 * that stores what comes in before it is acknowledged and hands it to the answers; a channel that
 * polls its platform runs, when nodes share a database, only on the node holding its polling lease
 * (decision 0061), and waits as `standby` elsewhere.
 */
import type { ChannelConfig } from '../config/index.ts';
import type { ChannelMessageRecord } from '../contracts/index.ts';
import type { InboundChange, InboundChoice } from './channel-adapter.ts';
import { adapterOf } from './channel-adapters.ts';
import type { ChannelAnswers } from './channel-answers.ts';
import { decideApproval } from './channel-approvals.ts';
import type { ChannelContext, ChannelPollLease, RunningChannel } from './channel-context.ts';

/**
 * Whether a channel takes its messages by asking its platform (long polling, a mailbox, a gateway
 * or Socket Mode connection), which one node at a time does, rather than by the platform's HTTP
 * requests to `/hooks/<name>`, which any node answers.
 */
export function pollsPlatform(config: ChannelConfig): boolean {
  switch (config.kind) {
    case 'telegram':
      return config.mode === 'polling';
    case 'slack':
      return config.mode === 'socket';
    case 'email':
    case 'discord':
      return true;
    case 'webhook':
      return false;
  }
}

/** The starts and stops of the service's channels. */
export class ChannelRunner {
  readonly #context: ChannelContext;
  readonly #answers: ChannelAnswers;
  /** The loops of channels held by lease, until the service stops. */
  readonly #leaseLoops: Promise<void>[] = [];

  constructor(context: ChannelContext, answers: ChannelAnswers) {
    this.#context = context;
    this.#answers = answers;
  }

  /** Starts every channel, each in turn (one held by lease in the background); stops early when the service stops. */
  async startAll(): Promise<void> {
    const { options, running, stopping, logger } = this.#context;
    for (const config of options.channels) {
      if (stopping.aborted) return;
      const channel: RunningChannel = { config, adapter: undefined, failure: null };
      running.set(config.name, channel);
      const lease = options.pollLease;
      if (lease !== undefined && pollsPlatform(config)) {
        this.#leaseLoops.push(
          this.#holdLease(channel, lease).catch((error: unknown) =>
            logger.error({ err: error, channel: config.name }, `channel "${config.name}": its polling lease stopped being held`),
          ),
        );
        continue;
      }
      await this.#open(channel);
    }
  }

  /** Stops every adapter (after the lease loops end), giving up the polling leases held. */
  async stopAll(): Promise<void> {
    const { options, running } = this.#context;
    await Promise.allSettled(this.#leaseLoops);
    for (const channel of running.values()) {
      await channel.adapter?.stop();
      // Given up at once, so that another node polls it at its next look.
      if (channel.adapter !== undefined && options.pollLease !== undefined && pollsPlatform(channel.config))
        await options.pollLease.release(channel.config.name).catch(() => undefined);
    }
  }

  /** Starts a channel's adapter; false when it could not start (shown failed). */
  async #open(channel: RunningChannel): Promise<boolean> {
    const { options, logger } = this.#context;
    const { store, clock } = options;
    const { config } = channel;
    try {
      const adapter = await adapterOf(this.#context, config);
      const onChange = async (change: InboundChange): Promise<void> => {
        const applied = await store.channels.amend(
          config.name,
          change.platformId,
          change.kind === 'edit' ? { text: change.text } : { withdrawn: 'deleted on the platform before it was answered' },
          clock.now(),
        );
        if (!applied)
          logger.debug(
            { channel: config.name, platformId: change.platformId, change: change.kind },
            'a message changed after it was answered; the answer stands',
          );
      };
      const onChoice = async (choice: InboundChoice): Promise<void> => {
        const match = /^(approve|deny):(.+)$/.exec(choice.data);
        await choice.acknowledge(
          match === null
            ? 'That button is not one of mine.'
            : await decideApproval(this.#context, config, { user: choice.user, verb: match[1] ?? '', reference: match[2] ?? '' }),
        );
      };
      await adapter.start(
        async (inbound) => {
          const at = clock.now();
          const record: ChannelMessageRecord = {
            channel: config.name,
            platformId: inbound.platformId,
            userId: inbound.user.id,
            userName: inbound.user.name,
            conversationId: inbound.conversation.id,
            conversationKind: inbound.conversation.kind,
            thread: inbound.conversation.thread,
            mentioned: inbound.mentioned,
            text: inbound.text,
            status: 'received',
            note: null,
            receivedAt: at,
            updatedAt: at,
          };
          const stored = await store.channels.receive(record);
          // Answered in the background (a reply command too): the platform's next messages do not wait for it.
          if (stored) this.#answers.takeUp(channel, record, adapter);
          return { duplicate: !stored };
        },
        onChoice,
        onChange,
      );
      channel.adapter = adapter;
      channel.failure = null;
    } catch (error) {
      channel.failure = error instanceof Error ? error.message : String(error);
      logger.error({ channel: config.name, problem: channel.failure }, `channel "${config.name}" could not start`);
      return false;
    }
    // What a previous process (or the node that polled it before) stored but did not answer.
    for (const message of await store.channels.unsettled(config.name)) this.#answers.takeUp(channel, message);
    return true;
  }

  /**
   * Holds the polling lease of a channel that polls its platform, for as long as the service
   * runs: the channel runs here while this node holds it (renewed every third of the lease), and
   * waits, shown `standby`, while another node does; it starts here when that node stops renewing.
   */
  async #holdLease(channel: RunningChannel, lease: ChannelPollLease): Promise<void> {
    const { stopping, logger } = this.#context;
    const { clock } = this.#context.options;
    const { name } = channel.config;
    const everyMs = Math.max(1, Math.floor(lease.leaseMs / 3));
    while (!stopping.aborted) {
      const held = await lease.acquire(name).catch((error: unknown) => {
        logger.warn({ err: error, channel: name }, `channel "${name}": could not take or renew its polling lease`);
        return false;
      });
      if (stopping.aborted) return;
      if (held && channel.adapter !== undefined) {
        // What the node that polled it before stored after this node took it over, until it stopped
        // polling (it stops at its next renewal, or later when paused): not answered there.
        const late = await this.#context.options.store.channels.unsettled(name, { notClaimedHere: true }).catch((error: unknown) => {
          logger.warn({ err: error, channel: name }, `channel "${name}": could not list its unanswered messages`);
          return [];
        });
        for (const message of late) this.#answers.takeUp(channel, message);
      } else if (held && channel.adapter === undefined) {
        logger.info({ channel: name }, `channel "${name}" is polled by this node now`);
        channel.standby = false;
        // One that cannot start here (its credentials missing) is shown failed, and left to another node.
        if (!(await this.#open(channel))) {
          await lease.release(name).catch(() => undefined);
          return;
        }
      } else if (!held && channel.adapter !== undefined) {
        logger.warn({ channel: name }, `channel "${name}": another node holds its polling lease; stopped polling here`);
        const adapter = channel.adapter;
        channel.adapter = undefined;
        channel.standby = true;
        await adapter.stop();
      } else if (!held) channel.standby = true;
      await clock.sleep(everyMs, { signal: stopping }).catch(() => undefined);
    }
  }
}
