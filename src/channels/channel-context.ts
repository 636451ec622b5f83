/**
 * What the parts of the channel service share: its options, its logger, the channels running
 * here, and the signal of its stop (one explicit record, handed to each part); and who a person
 * on a channel is to the kernel, and the audit of a person the channel turned away.
 */
import type { ChannelConfig } from '../config/index.ts';
import type { Clock, Logger, Principal, Store } from '../contracts/index.ts';
import type { Kernel } from '../kernel/index.ts';
import type { ChannelAdapter } from './channel-adapter.ts';
import type { EmailChannelOptions } from './email-channel.ts';

/** What the channel service needs. */
export interface ChannelServiceOptions {
  channels: readonly ChannelConfig[];
  /** `[people]` of config.toml: a person's name → their `<channel>:<user id>` identities. */
  people?: Readonly<Record<string, readonly string[]>>;
  /** Each person on a channel asks it as a principal of their own (see `channelPrincipal`). */
  kernel: Kernel;
  store: Pick<Store, 'channels'>;
  clock: Clock;
  logger: Logger;
  env: Readonly<Record<string, string | undefined>>;
  /** For adapters' HTTP calls (replies to a webhook); the platform SDKs bring their own. */
  fetch?: typeof fetch;
  /** For email channels' DKIM key lookups: the system's DNS unless a test injects another. */
  resolveDns?: EmailChannelOptions['resolver'];
  /**
   * With several nodes on one database: the lease a node holds on a channel that polls its
   * platform, so that one node at a time polls it (decision 0061). Absent, every channel runs here.
   */
  pollLease?: ChannelPollLease;
}

/** A lease on a channel's polling, shared by the nodes of a database (see `src/cluster/channel-leases.ts`). */
export interface ChannelPollLease {
  /** How long a lease lasts unrenewed, in milliseconds: the node renews it every third of this (on the service's clock). */
  readonly leaseMs: number;
  /** Takes or renews the lease on `channel` for this node; false when another node holds it. */
  acquire(channel: string): Promise<boolean>;
  /** Gives the lease up (a clean stop), so that another node takes it at its next look. */
  release(channel: string): Promise<void>;
}

/** A channel of the service, and its adapter while it runs here. */
export interface RunningChannel {
  config: ChannelConfig;
  adapter: ChannelAdapter | undefined;
  /** Why it could not start (missing credentials). */
  failure: string | null;
  /** Another node holds its polling lease: it is not started here, and waits to take over. */
  standby?: boolean;
}

/** The state the channel service's parts share. */
export interface ChannelContext {
  readonly options: ChannelServiceOptions;
  /** The service's logger (`component: channels`). */
  readonly logger: Logger;
  /** The channels, by name, once the service started. */
  readonly running: Map<string, RunningChannel>;
  /** Aborted when the service stops: no more waits, retries or lease renewals. */
  readonly stopping: AbortSignal;
}

/** A person on a channel: their id on the platform and their name there, when it gives one. */
export interface ChannelUser {
  id: string;
  name: string | null;
}

/**
 * Who a person on a channel is to the kernel, once the channel's policy admitted them (paired,
 * allowed, or the channel open): `<channel>:<user id>`, a `user` reaching the channel's agent
 * only, deciding its tool calls when they are among the channel's `approvers`, speaking in the
 * chat of `conversation` (shared with everyone in it). The kernel judges what they may do
 * (src/kernel/authority.ts); the channel only says who they are.
 */
export function channelPrincipal(config: ChannelConfig, userId: string, conversation?: string): Principal {
  return {
    name: `${config.name}:${userId}`,
    role: 'user',
    agents: [config.agent],
    ...(config.policy.approvers.includes(userId) ? { approves: [config.agent] } : {}),
    ...(conversation === undefined ? {} : { conversation }),
  };
}

/** The id of the channel's agent, or null when it does not exist (any more). */
export function agentIdOf(context: ChannelContext, config: ChannelConfig): string | null {
  try {
    return context.options.kernel.get(config.agent).id;
  } catch {
    return null;
  }
}

/** Records that the channel turned `user` away (the audit log's `channel-refuse`). */
export async function auditRefused(context: ChannelContext, refusal: { config: ChannelConfig; user: ChannelUser; reason: string }): Promise<void> {
  const { config, user, reason } = refusal;
  const { kernel, clock } = context.options;
  await kernel.publish({
    type: 'channel-refuse',
    at: clock.now(),
    agentId: agentIdOf(context, config),
    name: config.agent,
    channel: config.name,
    userId: user.id,
    userName: user.name,
    reason,
  });
}
