/**
 * The channel service, composed of its parts over one `ChannelContext`: `ChannelRunner` (the
 * channels started, stopped, and held by lease), `ChannelAnswers` (what comes in, answered in
 * order), `ChannelAdmission` (the policy, the rate and pairing), the approvals asked and decided
 * on a channel (channel-approvals.ts), and the replies delivered (channel-delivery.ts).
 */
import type { ChannelConfig } from '../config/index.ts';
import type { ChannelPairingRecord } from '../contracts/index.ts';
import { UsageError } from '../errors/index.ts';
import type { ChannelView as WireChannelView } from '../wire/index.ts';
import type { ChannelAdapter, InboundRequests } from './channel-adapter.ts';
import { ChannelAdmission } from './channel-admission.ts';
import { ChannelAnswers } from './channel-answers.ts';
import { agentIdOf, type ChannelContext, type ChannelServiceOptions, type RunningChannel } from './channel-context.ts';
import { ChannelRunner } from './channel-runner.ts';

export { channelPrincipal } from './channel-context.ts';
export type { ChannelPollLease, ChannelServiceOptions } from './channel-context.ts';
export type { ChannelReplyFailedEvent, UndeliveredKind } from './channel-delivery.ts';
export { pollsPlatform } from './channel-runner.ts';

/** A channel as `loom channels list` and `GET /api/channels` show it: src/wire's `ChannelView`, with the whole policy. */
export interface ChannelView extends Omit<WireChannelView, 'policy'> {
  policy: ChannelConfig['policy'];
}

/** The channels of a daemon: their adapters, what comes in, and the owner's pairing decisions. */
export interface ChannelService {
  /**
   * Starts every channel (one whose credentials are missing is shown failed; the daemon runs
   * on), then answers what a crash left unanswered. Called again, it waits for the same start.
   */
  start(): Promise<void>;
  /** Stops receiving and retrying deliveries; turns under way end with the kernel's shutdown (then `idle`). */
  stop(): Promise<void>;
  list(): Promise<ChannelView[]>;
  /**
   * Lets the person who was given `code` talk to the channel's agent.
   * @throws {UsageError} for a code no one was given.
   */
  approve(code: string): Promise<ChannelPairingRecord>;
  /** The running channel named `name` that takes requests over HTTP (a webhook, Slack's Events API), for `/hooks/<name>`. */
  inbound(name: string): InboundRequests | undefined;
  /**
   * Resolves once every message taken in so far is settled (tests, shutdown); after `stop`, this
   * node's claims on the messages it did not settle are given up then (decision 0061).
   */
  idle(): Promise<void>;
}

/** Creates the channel service of a daemon; nothing runs until `start`. */
export function createChannelService(options: ChannelServiceOptions): ChannelService {
  const { kernel, store, clock } = options;
  const stopping = new AbortController();
  const context: ChannelContext = {
    options,
    logger: options.logger.child({ component: 'channels' }),
    running: new Map<string, RunningChannel>(),
    stopping: stopping.signal,
  };
  const { running } = context;
  const answers = new ChannelAnswers(context, new ChannelAdmission(context));
  const runner = new ChannelRunner(context, answers);
  let started: Promise<void> | undefined;

  return {
    start() {
      started ??= runner.startAll().catch((error: unknown) => context.logger.error({ err: error }, 'channels could not start'));
      return started;
    },

    async stop() {
      stopping.abort();
      await started;
      await runner.stopAll();
    },

    async list() {
      const views: ChannelView[] = [];
      // Outside the daemon nothing runs: each channel is shown stopped, with where it would run.
      const notRunning = 'channels run in the daemon (loom start)';
      for (const channel of started === undefined
        ? options.channels.map((config): RunningChannel => ({ config, adapter: undefined, failure: null }))
        : running.values()) {
        const { config } = channel;
        const adapterState = channel.adapter?.state() ?? (started === undefined ? { state: 'stopped' as const, error: notRunning } : undefined);
        const [latest] = await store.channels.recent(config.name, 1);
        const pending = (await store.channels.pairings(config.name)).filter((pairing) => pairing.approvedAt === null);
        views.push({
          name: config.name,
          kind: config.kind,
          agent: config.agent,
          state:
            channel.failure !== null ? 'failed' : channel.standby === true && channel.adapter === undefined ? 'standby' : (adapterState?.state ?? 'stopped'),
          error: channel.failure ?? adapterState?.error ?? null,
          lastMessageAt: latest === undefined ? null : new Date(latest.receivedAt).toISOString(),
          policy: config.policy,
          pendingPairings: pending.map((pairing) => ({
            code: pairing.code,
            userId: pairing.userId,
            userName: pairing.userName,
            requestedAt: new Date(pairing.createdAt).toISOString(),
          })),
        });
      }
      return views;
    },

    async approve(code) {
      const normalized = code.trim().toUpperCase();
      const pairing = await store.channels.approvePairing(normalized, clock.now());
      if (pairing === undefined)
        throw new UsageError(`no one was given the pairing code "${normalized}"; the waiting codes are listed by \`loom channels list\``);
      const config = running.get(pairing.channel)?.config ?? options.channels.find((candidate) => candidate.name === pairing.channel);
      await kernel.publish({
        type: 'channel-pair',
        at: clock.now(),
        agentId: config === undefined ? null : agentIdOf(context, config),
        name: config?.agent ?? '',
        channel: pairing.channel,
        userId: pairing.userId,
        userName: pairing.userName,
        code: pairing.code,
      });
      return pairing;
    },

    inbound(name) {
      const adapter = running.get(name)?.adapter as (ChannelAdapter & Partial<InboundRequests>) | undefined;
      return adapter?.handle === undefined ? undefined : (adapter as InboundRequests);
    },

    async idle() {
      await answers.idle();
      // Stopping cleanly: what this node took up and did not settle is another node's to answer at once.
      if (stopping.signal.aborted)
        await store.channels
          .releaseAll()
          .catch((error: unknown) =>
            context.logger.warn(
              { err: error },
              'could not give up the channel messages this node took up; other nodes answer them once its heartbeat is stale',
            ),
          );
    },
  };
}
