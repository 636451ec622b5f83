import { randomInt } from 'node:crypto';
import type { ChannelConfig } from '../config/index.ts';
import type { ChannelMessageRecord, ChannelPairingRecord, Clock, Logger, Principal, Store } from '../contracts/index.ts';
import { AccessDeniedError, isLoomError, messageOf, UsageError } from '../errors/index.ts';
import { type ChannelEvent, type Kernel, kernelAs } from '../kernel/index.ts';
import type { ChannelAdapter, Choice, InboundChange, InboundChoice, InboundMessage, InboundRequests, ReplyTarget } from './channel-adapter.ts';
import type { EmailChannelOptions } from './email-channel.ts';
import { decide } from './channel-policy.ts';
import { splitReply } from './split-reply.ts';
import type { ChannelView as WireChannelView } from '../wire/index.ts';

/** How often a streamed reply's message is edited at most (platforms rate-limit edits). */
const EDIT_INTERVAL_MS = 1000;
/** The waits between attempts to deliver a reply while the platform is away (about a minute in all). */
const DELIVERY_RETRY_MS: readonly number[] = [1000, 2000, 4000, 8000, 16_000, 30_000];
const PAIRING_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
/** `approve <id>` or `deny <id>` (an id or its first 8 characters), the reply command where a platform has no buttons. */
const APPROVAL_COMMAND = /^\s*(approve|deny)\s+([0-9a-f-]{8,36})\s*$/i;
/** How much of a tool call's input an approval request shows. */
const SHOWN_INPUT_CHARS = 300;
const RATE_WINDOW_MS = 60_000;
/** How often a message whose turn runs on another node (taken over there, decision 0061) asks for its reply again. */
const TURN_ELSEWHERE_RETRY_MS = 2000;
/** How long it asks at most before it is answered as failed. */
const TURN_ELSEWHERE_WAIT_MS = 600_000;

/** A channel as `loom channels list` and `GET /api/channels` show it: src/wire's `ChannelView`, with the whole policy. */
export interface ChannelView extends Omit<WireChannelView, 'policy'> {
  policy: ChannelConfig['policy'];
}

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
  /** Resolves once every message taken in so far is settled (tests, shutdown). */
  idle(): Promise<void>;
}

/** What a message the channel could not deliver was. */
export type UndeliveredKind = ChannelReplyFailedEvent['kind'];

/** A message of the channel the platform did not take, retries spent (the audit log's `channel-reply-failed`). */
export type ChannelReplyFailedEvent = Extract<ChannelEvent, { type: 'channel-reply-failed' }>;

interface RunningChannel {
  config: ChannelConfig;
  adapter: ChannelAdapter | undefined;
  /** Why it could not start (missing credentials). */
  failure: string | null;
  /** Another node holds its polling lease: it is not started here, and waits to take over. */
  standby?: boolean;
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

export function createChannelService(options: ChannelServiceOptions): ChannelService {
  const { kernel, store, clock } = options;
  const logger = options.logger.child({ component: 'channels' });
  const running = new Map<string, RunningChannel>();
  /** `<channel>:<user id>` → the person's name in `[people]`. */
  const personOf = new Map<string, string>();
  for (const [person, identities] of Object.entries(options.people ?? {})) for (const identity of identities) personOf.set(identity, person);
  /** Per conversation: its messages are answered in order. */
  const conversations = new Map<string, Promise<void>>();
  /** Per channel and person: when their recent messages came. */
  const recentByUser = new Map<string, number[]>();

  /** The value of a channel's credential variable. @throws {Error} naming the variable when it is not set. */
  function credential(variable: string): string {
    const value = options.env[variable];
    if (value === undefined || value === '') throw new Error(`${variable} is not set in the daemon's environment`);
    return value;
  }

  /** The channel's adapter; each platform's SDK is loaded with the first channel on it, so a daemon without channels holds none. */
  async function adapterOf(config: ChannelConfig): Promise<ChannelAdapter> {
    switch (config.kind) {
      case 'webhook': {
        const { createWebhookChannel } = await import('./webhook-channel.ts');
        return createWebhookChannel({ name: config.name, secret: credential(config.secret_env), replyUrl: config.reply_url, maxSkewSeconds: config.max_skew_seconds, clock, ...(options.fetch === undefined ? {} : { fetch: options.fetch }) });
      }
      case 'telegram': {
        const { createTelegramChannel } = await import('./telegram-channel.ts');
        return createTelegramChannel({
          name: config.name,
          token: credential(config.token_env),
          apiBaseUrl: config.api_base_url,
          ...(config.mode === 'webhook' ? { webhook: { url: config.webhook_url ?? '', secretToken: credential(config.secret_token_env ?? '') } } : {}),
          logger,
        });
      }
      case 'discord': {
        const { createDiscordChannel } = await import('./discord-channel.ts');
        return createDiscordChannel({ name: config.name, token: credential(config.token_env), apiBaseUrl: config.api_base_url, logger });
      }
      case 'email': {
        const { createEmailChannel } = await import('./email-channel.ts');
        const server = (url: string, securePort: number, plainPort: number): { host: string; port: number; secure: boolean } => {
          const parsed = new URL(url);
          const secure = parsed.protocol === 'imaps:' || parsed.protocol === 'smtps:';
          return { host: parsed.hostname, port: parsed.port === '' ? (secure ? securePort : plainPort) : Number(parsed.port), secure };
        };
        return createEmailChannel({
          name: config.name,
          address: config.address,
          imap: server(config.imap_url, 993, 143),
          smtp: server(config.smtp_url, 465, 587),
          user: credential(config.user_env),
          password: credential(config.password_env),
          mailbox: config.mailbox,
          pollMs: config.poll_seconds * 1000,
          senderCheck: config.sender_check,
          ...(options.resolveDns === undefined ? {} : { resolver: options.resolveDns }),
          // Not answered (the answer would go to whoever owns the forged address), only audited.
          onRefused: (user, reason) => auditRefused(config, user, reason),
          clock,
          logger,
        });
      }
      case 'slack': {
        const { createSlackChannel } = await import('./slack-channel.ts');
        return createSlackChannel({
          name: config.name,
          botToken: credential(config.bot_token_env),
          apiBaseUrl: config.api_base_url,
          receiver: config.mode === 'socket' ? { mode: 'socket', appToken: credential(config.app_token_env ?? '') } : { mode: 'events', signingSecret: credential(config.signing_secret_env ?? ''), clock },
          logger,
        });
      }
    }
  }

  function agentIdOf(config: ChannelConfig): string | null {
    try {
      return kernel.get(config.agent).id;
    } catch {
      return null;
    }
  }

  /** Records that the channel turned `user` away (the audit log's `channel-refused`). */
  async function auditRefused(config: ChannelConfig, user: { id: string; name: string | null }, reason: string): Promise<void> {
    await kernel.publish({ type: 'channel-refused', at: clock.now(), agentId: agentIdOf(config), name: config.agent, channel: config.name, userId: user.id, userName: user.name, reason });
  }

  /**
   * Records that the platform did not take `kind`, in answer to `message`, retries spent: in the
   * daemon's log and the audit log (`channel-reply-failed`), where the channel's refusals are.
   */
  async function undelivered(config: ChannelConfig, message: ChannelMessageRecord, kind: UndeliveredKind, error: unknown): Promise<void> {
    const reason = messageOf(error);
    const what = kind === 'reply' ? 'the reply' : kind === 'error-reply' ? 'the error reply' : kind === 'refusal' ? 'the refusal' : kind === 'approval-request' ? 'the approval request' : 'the answer to an approval command';
    logger.error({ err: error, channel: config.name, platformId: message.platformId, conversationId: message.conversationId, kind, problem: reason }, `could not deliver ${what} to message "${message.platformId}" on channel "${config.name}": ${reason}`);
    const event: ChannelReplyFailedEvent = { type: 'channel-reply-failed', at: clock.now(), agentId: agentIdOf(config), name: config.agent, channel: config.name, kind, platformId: message.platformId, conversationId: message.conversationId, thread: message.thread, userId: message.userId, reason };
    // The kernel's event union (src/kernel/event-bus.ts) does not name this type yet; the audit
    // log stores any event as its type, time, agent and data.
    await kernel.publish(event).catch((caught: unknown) => logger.error({ err: caught, channel: config.name }, 'could not record an undelivered reply in the audit log'));
  }

  /** How many messages the person sent in the last minute, this one counted. */
  function recentCount(config: ChannelConfig, userId: string): number {
    const key = `${config.name}\u0000${userId}`;
    const now = clock.now();
    const recent = (recentByUser.get(key) ?? []).filter((at) => now - at < RATE_WINDOW_MS);
    recent.push(now);
    recentByUser.set(key, recent);
    return recent.length;
  }

  /** The person's pairing code: the one still waiting in `existing` (their pairing as stored), else a new one. */
  async function pairingCode(config: ChannelConfig, message: ChannelMessageRecord, existing: ChannelPairingRecord | undefined): Promise<string> {
    if (existing !== undefined && existing.approvedAt === null) return existing.code;
    const code = Array.from({ length: 6 }, () => PAIRING_ALPHABET[randomInt(PAIRING_ALPHABET.length)]).join('');
    await store.channels.requestPairing({ code, channel: config.name, userId: message.userId, userName: message.userName, createdAt: clock.now(), approvedAt: null });
    return code;
  }

  /** Sends each of `parts` as a message of its own, in order. */
  async function sendParts(channel: string, adapter: ChannelAdapter, target: ReplyTarget, parts: readonly string[]): Promise<void> {
    for (const part of parts) await deliver(channel, () => adapter.send(target, part));
  }

  /** Sends `text` as the reply, in as many messages as the platform's limit needs. */
  async function reply(channel: string, adapter: ChannelAdapter, target: ReplyTarget, text: string): Promise<void> {
    await sendParts(channel, adapter, target, splitReply(text, adapter.maxMessageLength));
  }

  /** Asks the conversation about a tool call that waits for approval: buttons for the approvers where the platform has them, else how to answer. */
  async function askApproval(config: ChannelConfig, adapter: ChannelAdapter, target: ReplyTarget, request: { approvalId: string; toolName: string; input: unknown; reason?: string }): Promise<void> {
    const short = request.approvalId.slice(0, 8);
    const asked = questionOf(request.input);
    // `hint`: how to answer where there are approvers but no buttons; `unattended`: what follows where there are none.
    let ask: { text: string; choices: Choice[]; hint: string; unattended: string };
    if (asked !== undefined) {
      // A question an MCP server asks: its form is answered in the dashboard or the CLI (as its
      // text says); here it can be declined.
      ask = {
        text: `${request.toolName} asks, for ${config.agent}: ${asked.message}\nFields: ${asked.fields}.\nAnswer it on the dashboard's Approvals page or with: loom approvals approve ${short} --answer field=value`,
        choices: [{ label: 'Decline', data: `deny:${request.approvalId}` }],
        hint: `\nReply "deny ${short}" to decline it.`,
        unattended: '',
      };
    } else {
      const input = JSON.stringify(request.input) ?? '';
      const shown = input.length > SHOWN_INPUT_CHARS ? `${input.slice(0, SHOWN_INPUT_CHARS)}…` : input;
      ask = {
        text: `${config.agent} wants to run ${request.toolName} ${shown}${request.reason === undefined ? '' : `\n(${request.reason})`}`,
        choices: [
          { label: 'Approve', data: `approve:${request.approvalId}` },
          { label: 'Deny', data: `deny:${request.approvalId}` },
        ],
        hint: `\nReply "approve ${short}" or "deny ${short}".`,
        unattended: `\nIt waits for the owner's approval: loom approvals approve ${short}`,
      };
    }
    const sendChoices = adapter.sendChoices?.bind(adapter);
    if (config.policy.approvers.length === 0) await reply(config.name, adapter, target, `${ask.text}${ask.unattended}`);
    else if (sendChoices !== undefined) await deliver(config.name, () => sendChoices(target, ask.text, ask.choices));
    else await reply(config.name, adapter, target, `${ask.text}${ask.hint}`);
  }

  /** An approval's input when it is a question (an MCP server's elicitation): its message and its fields, named. */
  function questionOf(input: unknown): { message: string; fields: string } | undefined {
    if (input === null || typeof input !== 'object' || Array.isArray(input)) return undefined;
    const { message, requestedSchema } = input as { message?: unknown; requestedSchema?: { properties?: Record<string, unknown>; required?: string[] } };
    if (typeof message !== 'string' || requestedSchema === undefined) return undefined;
    const required = new Set(requestedSchema.required ?? []);
    const fields = Object.keys(requestedSchema.properties ?? {}).map((key) => (required.has(key) ? `${key} (required)` : key));
    return { message, fields: fields.join(', ') || 'none' };
  }

  /**
   * A person's decision on an approval, from a button or the reply command: taken only from the
   * channel's `approvers`, and only on the channel's own agent's requests (an approver of one
   * agent's channel decides nothing of another's, whatever id they give); the decision is the
   * kernel's, recorded as by `<channel>:<user id>`. Returns what to tell them.
   */
  async function decideApproval(config: ChannelConfig, user: { id: string; name: string | null }, verb: string, reference: string): Promise<string> {
    const approved = verb.toLowerCase() === 'approve';
    const caller = kernelAs(kernel, channelPrincipal(config, user.id));
    const refused = async (): Promise<string> => {
      await auditRefused(config, user, 'an approval decision from someone not in the channel\'s approvers');
      return 'Only the approvers of this channel may decide that.';
    };
    // The kernel judges (a channel's approvers decide its agent's requests): asked before the id is looked up, so a stranger learns nothing of it.
    if (!caller.may(approved ? 'approve tool calls' : 'deny tool calls', config.agent)) return refused();
    // The waiting requests of the agents the person reaches: the channel's agent's.
    const pending = (await caller.approvals('pending')).filter((approval) => approval.id.startsWith(reference.toLowerCase()));
    const [approval] = pending;
    if (approval === undefined || pending.length > 1) return pending.length > 1 ? `"${reference}" names more than one request; give more of its id.` : 'That request is no longer waiting.';
    try {
      await caller.decide(approval.id, { approved, reason: null });
    } catch (error) {
      if (error instanceof AccessDeniedError) return refused();
      return `It could not be decided: ${error instanceof Error ? error.message : String(error)}`;
    }
    if (questionOf(approval.input) !== undefined) return approved ? `Answered: ${approval.tool}.` : `Declined: ${approval.tool} gets no answer.`;
    return approved ? `Approved: ${approval.tool} runs.` : `Denied: ${approval.tool} does not run.`;
  }

  /**
   * The channel's policy and rate applied to a message to the bot (spec/01 step 2), the same for
   * every message, a reply command included. Returns whether it may be answered; when not, it is
   * settled here: ignored without a word, or refused with the reply such a message gets, audited
   * as `decide()` and the rate say.
   */
  async function admit(config: ChannelConfig, adapter: ChannelAdapter, message: ChannelMessageRecord): Promise<boolean> {
    const target: ReplyTarget = { conversationId: message.conversationId, thread: message.thread };
    const user = { id: message.userId, name: message.userName };
    const settle = (status: ChannelMessageRecord['status'], note: string): Promise<void> => store.channels.settle(config.name, message.platformId, status, note, clock.now());
    const refused = async (reason: string, text: string): Promise<void> => {
      await auditRefused(config, user, reason);
      // Refused whether or not the platform takes the words that say so.
      await reply(config.name, adapter, target, text).catch((error: unknown) => undelivered(config, message, 'refusal', error));
      await settle('refused', reason);
    };

    // Only a direct message under the pairing policy asks whether the person is paired.
    const pairing = message.conversationKind === 'direct' && config.policy.direct === 'pairing' ? await store.channels.pairingOf(config.name, message.userId) : undefined;
    const paired = pairing !== undefined && pairing.approvedAt !== null;
    const inbound: InboundMessage = { platformId: message.platformId, user, conversation: { id: message.conversationId, kind: message.conversationKind, thread: message.thread }, mentioned: message.mentioned, text: message.text };
    const decision = decide(inbound, config.policy, paired);
    if (decision.kind === 'ignore') {
      if (decision.audit) await auditRefused(config, user, decision.reason);
      await settle('ignored', decision.reason);
      return false;
    }
    // Counted for every message to the bot, refused or not: a flood is held back whoever sends
    // it, and answered once.
    const sentLately = recentCount(config, message.userId);
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
      const code = await pairingCode(config, message, pairing);
      await refused(`not paired; pairing code ${code} issued`, `I can't talk with you here yet. Ask the owner of this Loom to run:\n\nloom channels approve ${code}`);
      return false;
    }
    return true;
  }

  /**
   * Answers a reply command (`approve <id>`, `deny <id>`) at once, not behind the turn it would
   * unblock: admitted by the policy and rate as any message first (a stranger's command in a
   * closed group is ignored like their chatter there, and counts towards their rate), then
   * decided (by an approver only, see `decideApproval`).
   */
  async function answerCommand(config: ChannelConfig, adapter: ChannelAdapter, message: ChannelMessageRecord, verb: string, reference: string): Promise<void> {
    try {
      if (!(await admit(config, adapter, message))) return;
      const text = await decideApproval(config, { id: message.userId, name: message.userName }, verb, reference);
      // Decided whether or not the platform takes the words that say so.
      await reply(config.name, adapter, { conversationId: message.conversationId, thread: message.thread }, text).catch((error: unknown) => undelivered(config, message, 'approval-answer', error));
      await store.channels.settle(config.name, message.platformId, 'answered', text, clock.now());
    } catch (error) {
      logger.error({ err: error, channel: config.name, platformId: message.platformId }, 'could not answer an approval command');
      // Settled, so that a restart does not take it up as a message for the agent.
      await store.channels.settle(config.name, message.platformId, 'failed', `the approval command could not be answered: ${error instanceof Error ? error.message : String(error)}`, clock.now()).catch(() => undefined);
    }
  }

  /** Answers one stored message: policy, identity, the agent's turn (streamed by edits where the platform can), the reply. */
  async function answer(channel: RunningChannel, queued: ChannelMessageRecord): Promise<void> {
    const { config } = channel;
    const adapter = channel.adapter;
    if (adapter === undefined) return;
    // As it stands now: edited or deleted on the platform while it waited.
    const message = await store.channels.get(config.name, queued.platformId);
    if (message?.status !== 'received') return;
    if (!(await admit(config, adapter, message))) return;
    const target: ReplyTarget = { conversationId: message.conversationId, thread: message.thread };
    const settle = (status: ChannelMessageRecord['status'], note: string | null): Promise<void> => store.channels.settle(config.name, message.platformId, status, note, clock.now());

    await adapter.typing?.(target).catch(() => undefined);
    let streamed = '';
    let sent: { messageId: string; text: string } | undefined;
    /** When the reply so far was last put on its way (sent, then edited); undefined before its first words. */
    let lastShown: number | undefined;
    let edits: Promise<void> = Promise.resolve();
    const edit = adapter.edit?.bind(adapter);
    /** Shows `text` as the reply so far: sent as a message the first time, that message edited after. */
    const show = async (text: string): Promise<void> => {
      if (sent === undefined) sent = { messageId: (await adapter.send(target, text)).messageId, text };
      else if (sent.text !== text && edit !== undefined) {
        await edit(target, sent.messageId, text);
        sent = { ...sent, text };
      }
    };
    try {
      const speaker = channelPrincipal(config, message.userId, `channel:${config.name}:${message.conversationId}${message.thread === null ? '' : `:${message.thread}`}`);
      const result = await untilNotElsewhere(() => kernelAs(kernel, speaker).send(config.agent, message.text, {
        person: personOf.get(`${config.name}:${message.userId}`) ?? `${config.name}:${message.userId}`,
        // A message queued again after a restart gets the turn it started, resumed (decision 0045), not a second one.
        idempotencyKey: `channel:${config.name}:${message.platformId}`,
        emit: (event) => {
          if (event.type === 'approval-request') {
            edits = edits.then(() => askApproval(config, adapter, target, event)).catch((error: unknown) => undelivered(config, message, 'approval-request', error));
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
          edits = edits.then(() => show(text));
          edits = edits.catch((error: unknown) => logger.warn({ err: error, channel: config.name }, 'could not update a streamed reply'));
        },
      }));
      await edits;
      const [first = '', ...rest] = splitReply(result.text === '' ? '(no reply)' : result.text, adapter.maxMessageLength);
      try {
        await deliver(config.name, () => show(first));
        await sendParts(config.name, adapter, target, rest);
      } catch (error) {
        // The answer is in the session; only the platform did not take it.
        await settle('failed', `the reply could not be delivered: ${messageOf(error)}`);
        await undelivered(config, message, 'reply', error);
        return;
      }
      await settle('answered', result.text);
      logger.info({ channel: config.name, conversationId: message.conversationId }, `channel "${config.name}": delivered the reply of agent "${config.agent}" to ${message.userName ?? message.userId} (${1 + rest.length} message${rest.length === 0 ? '' : 's'})`);
    } catch (error) {
      await edits;
      const why = error instanceof Error ? error.message : String(error);
      logger.warn({ err: error, channel: config.name, platformId: message.platformId }, 'a channel message was not answered');
      const text = isLoomError(error) && error.category === 'user' ? `Sorry, I can't do that: ${why}` : 'Sorry, something went wrong while I was answering; please try again.';
      await reply(config.name, adapter, target, text).catch((failure: unknown) => undelivered(config, message, 'error-reply', failure));
      await settle('failed', why);
    }
  }

  /** Answers a stored message after the others of its conversation. */
  function enqueue(channel: RunningChannel, message: ChannelMessageRecord): void {
    const key = `${channel.config.name}\u0000${message.conversationId}\u0000${message.thread ?? ''}`;
    const previous = conversations.get(key) ?? Promise.resolve();
    const next = previous
      .then(() => answer(channel, message))
      .catch((error: unknown) => logger.error({ err: error, channel: channel.config.name, platformId: message.platformId }, 'could not answer a channel message'));
    conversations.set(key, next);
    void next.finally(() => {
      if (conversations.get(key) === next) conversations.delete(key);
    });
  }

  let started: Promise<void> | undefined;
  const stopping = new AbortController();

  /**
   * Runs `send` again, every {@link TURN_ELSEWHERE_RETRY_MS}, while its message's turn runs on
   * another node (`TURN_RUNNING`: this node took the channel over from a node that died, and
   * another node took the turn over): once that node finishes it, its reply comes back here to
   * be delivered. Gives up after {@link TURN_ELSEWHERE_WAIT_MS}, or when the service stops.
   */
  async function untilNotElsewhere<T>(send: () => Promise<T>): Promise<T> {
    const deadline = clock.now() + TURN_ELSEWHERE_WAIT_MS;
    for (;;) {
      try {
        return await send();
      } catch (error) {
        if (!isLoomError(error) || error.code !== 'TURN_RUNNING' || stopping.signal.aborted || clock.now() >= deadline) throw error;
        await clock.sleep(TURN_ELSEWHERE_RETRY_MS, { signal: stopping.signal });
      }
    }
  }

  /**
   * Runs a delivery to the platform, again after a wait while it fails (the platform away), until
   * the waits run out; a refusal the platform would repeat (`refusedForGood`) is not tried again.
   */
  async function deliver<T>(channel: string, action: () => Promise<T>): Promise<T> {
    const adapter = running.get(channel)?.adapter;
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await action();
      } catch (error) {
        const wait = DELIVERY_RETRY_MS[attempt];
        if (wait === undefined || stopping.signal.aborted || adapter?.refusedForGood?.(error) === true) throw error;
        logger.warn({ err: error, channel, attempt: attempt + 1, retryInMs: wait }, 'a reply could not be delivered; trying again');
        await clock.sleep(wait, { signal: stopping.signal });
      }
    }
  }

  /** Starts a channel's adapter; false when it could not start (shown failed). */
  async function openChannel(channel: RunningChannel): Promise<boolean> {
    const { config } = channel;
    try {
      const adapter = await adapterOf(config);
      const onChange = async (change: InboundChange): Promise<void> => {
        const applied = await store.channels.amend(config.name, change.platformId, change.kind === 'edit' ? { text: change.text } : { withdrawn: 'deleted on the platform before it was answered' }, clock.now());
        if (!applied) logger.debug({ channel: config.name, platformId: change.platformId, change: change.kind }, 'a message changed after it was answered; the answer stands');
      };
      const onChoice = async (choice: InboundChoice): Promise<void> => {
        const match = /^(approve|deny):(.+)$/.exec(choice.data);
        await choice.acknowledge(match === null ? 'That button is not one of mine.' : await decideApproval(config, choice.user, match[1] ?? '', match[2] ?? ''));
      };
      await adapter.start(async (inbound) => {
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
        const command = config.policy.approvers.length > 0 ? APPROVAL_COMMAND.exec(inbound.text) : null;
        if (stored && command !== null) await answerCommand(config, adapter, record, command[1] ?? '', command[2] ?? '');
        else if (stored) enqueue(channel, record);
        return { duplicate: !stored };
      }, onChoice, onChange);
      channel.adapter = adapter;
      channel.failure = null;
    } catch (error) {
      channel.failure = error instanceof Error ? error.message : String(error);
      logger.error({ channel: config.name, problem: channel.failure }, `channel "${config.name}" could not start`);
      return false;
    }
    // What a previous process (or the node that polled it before) stored but did not answer.
    for (const message of await store.channels.unsettled(config.name)) enqueue(channel, message);
    return true;
  }

  /**
   * Holds the polling lease of a channel that polls its platform, for as long as the service
   * runs: the channel runs here while this node holds it (renewed every third of the lease), and
   * waits, shown `standby`, while another node does; it starts here when that node stops renewing.
   */
  async function holdLease(channel: RunningChannel, lease: ChannelPollLease): Promise<void> {
    const { name } = channel.config;
    const everyMs = Math.max(1, Math.floor(lease.leaseMs / 3));
    while (!stopping.signal.aborted) {
      const held = await lease.acquire(name).catch((error: unknown) => {
        logger.warn({ err: error, channel: name }, `channel "${name}": could not take or renew its polling lease`);
        return false;
      });
      if (stopping.signal.aborted) return;
      if (held && channel.adapter === undefined) {
        logger.info({ channel: name }, `channel "${name}" is polled by this node now`);
        channel.standby = false;
        // One that cannot start here (its credentials missing) is shown failed, and left to another node.
        if (!(await openChannel(channel))) {
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
      await clock.sleep(everyMs, { signal: stopping.signal }).catch(() => undefined);
    }
  }

  /** The loops of channels held by lease, until the service stops. */
  const leaseLoops: Promise<void>[] = [];

  async function startAll(): Promise<void> {
    for (const config of options.channels) {
      if (stopping.signal.aborted) return;
      const channel: RunningChannel = { config, adapter: undefined, failure: null };
      running.set(config.name, channel);
      const lease = options.pollLease;
      if (lease !== undefined && pollsPlatform(config)) {
        leaseLoops.push(holdLease(channel, lease).catch((error: unknown) => logger.error({ err: error, channel: config.name }, `channel "${config.name}": its polling lease stopped being held`)));
        continue;
      }
      await openChannel(channel);
    }
  }

  return {
    start() {
      started ??= startAll().catch((error: unknown) => logger.error({ err: error }, 'channels could not start'));
      return started;
    },

    async stop() {
      stopping.abort();
      await started;
      await Promise.allSettled(leaseLoops);
      for (const channel of running.values()) {
        await channel.adapter?.stop();
        // Given up at once, so that another node polls it at its next look.
        if (channel.adapter !== undefined && options.pollLease !== undefined && pollsPlatform(channel.config)) await options.pollLease.release(channel.config.name).catch(() => undefined);
      }
    },

    async list() {
      const views: ChannelView[] = [];
      // Outside the daemon nothing runs: each channel is shown stopped, with where it would run.
      const notRunning = 'channels run in the daemon (loom start)';
      for (const channel of started === undefined ? options.channels.map((config): RunningChannel => ({ config, adapter: undefined, failure: null })) : running.values()) {
        const { config } = channel;
        const adapterState = channel.adapter?.state() ?? (started === undefined ? { state: 'stopped' as const, error: notRunning } : undefined);
        const [latest] = await store.channels.recent(config.name, 1);
        const pending = (await store.channels.pairings(config.name)).filter((pairing) => pairing.approvedAt === null);
        views.push({
          name: config.name,
          kind: config.kind,
          agent: config.agent,
          state: channel.failure !== null ? 'failed' : channel.standby === true && channel.adapter === undefined ? 'standby' : (adapterState?.state ?? 'stopped'),
          error: channel.failure ?? adapterState?.error ?? null,
          lastMessageAt: latest === undefined ? null : new Date(latest.receivedAt).toISOString(),
          policy: config.policy,
          pendingPairings: pending.map((pairing) => ({ code: pairing.code, userId: pairing.userId, userName: pairing.userName, requestedAt: new Date(pairing.createdAt).toISOString() })),
        });
      }
      return views;
    },

    async approve(code) {
      const normalized = code.trim().toUpperCase();
      const pairing = await store.channels.approvePairing(normalized, clock.now());
      if (pairing === undefined) throw new UsageError(`no one was given the pairing code "${normalized}"; the waiting codes are listed by \`loom channels list\``);
      const config = running.get(pairing.channel)?.config ?? options.channels.find((candidate) => candidate.name === pairing.channel);
      await kernel.publish({ type: 'channel-paired', at: clock.now(), agentId: config === undefined ? null : agentIdOf(config), name: config?.agent ?? '', channel: pairing.channel, userId: pairing.userId, userName: pairing.userName, code: pairing.code });
      return pairing;
    },

    inbound(name) {
      const adapter = running.get(name)?.adapter as (ChannelAdapter & Partial<InboundRequests>) | undefined;
      return adapter?.handle === undefined ? undefined : (adapter as InboundRequests);
    },

    async idle() {
      while (conversations.size > 0) await Promise.allSettled([...conversations.values()]);
    },
  };
}
