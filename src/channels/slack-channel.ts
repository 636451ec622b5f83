import { type Logger as SlackLogger, LogLevel, SocketModeClient } from '@slack/socket-mode';
import { WebAPIHTTPError, WebAPIPlatformError, WebClient } from '@slack/web-api';
import { createHmac } from 'node:crypto';
import type { Clock, Logger } from '../contracts/index.ts';
import { HttpRequestError, UnauthorizedError } from '../errors/index.ts';
import { safeParseJson } from '../validation/index.ts';
import {
  isRefusalForGood,
  type ChangeSink,
  type ChannelAdapter,
  type ChannelState,
  type ChoiceSink,
  type InboundRequests,
  type InboundSink,
  type ReplyTarget,
} from './channel-adapter.ts';
import { signatureMatches } from './signature-matches.ts';

/** Slack's limit on a markdown block's text. */
const SLACK_MAX_LENGTH = 12_000;

/** A Slack message event, as Socket Mode delivers it (the fields Loom reads). */
interface SlackMessageEvent {
  type: string;
  subtype?: string;
  /** `message_changed`: the message as it is now. */
  message?: { ts: string; text?: string; user?: string };
  /** `message_deleted`: which one. */
  deleted_ts?: string;
  bot_id?: string;
  user?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  channel: string;
  channel_type?: string;
}

/** A button press (`block_actions`), as Socket Mode delivers it. */
interface SlackBlockActions {
  type: string;
  user: { id: string; name?: string; username?: string };
  channel?: { id: string };
  container?: { channel_id?: string; message_ts?: string };
  message?: { ts: string; text?: string };
  actions?: { value?: string; action_id?: string }[];
}

/** The Slack SDK's log lines, into Loom's log (its debug chatter left out). */
function slackLogger(logger: Logger): SlackLogger {
  let level = LogLevel.WARN;
  const text = (parts: unknown[]): string => parts.map((part) => (typeof part === 'string' ? part : JSON.stringify(part))).join(' ');
  return {
    debug: () => undefined,
    info: () => undefined,
    warn: (...parts: unknown[]) => logger.warn({ sdk: 'slack' }, text(parts)),
    error: (...parts: unknown[]) => logger.error({ sdk: 'slack' }, text(parts)),
    setLevel: (next: LogLevel) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}

/** How Slack reaches Loom: Socket Mode (an app token), or the Events API over HTTP (a signing secret). */
export type SlackReceiver = { mode: 'socket'; appToken: string } | { mode: 'events'; signingSecret: string; clock: Clock };

/** How far an Events API request's timestamp may be from the clock (Slack's own advice: five minutes). */
const SLACK_MAX_SKEW_SECONDS = 300;

/** `v0=<hex>` of `v0:<timestamp>:<body>` under the signing secret: Slack's request signature. */
export function signSlackRequest(secret: string, timestamp: string, body: string): string {
  return `v0=${createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
}

/**
 * Slack through its official SDKs: Socket Mode (`@slack/socket-mode`) or the Events API (POSTs
 * to `/hooks/<name>`, signed with the app's signing secret) to receive, and the Web API
 * (`@slack/web-api`) to reply. An event is acknowledged (its envelope, or the HTTP 200) only
 * after it is stored. Direct messages are conversations of their own; in a channel, each message
 * that speaks to the bot starts a thread the bot answers in. Replies are Markdown blocks (Slack
 * renders standard Markdown in them); approvals get Block Kit buttons.
 */
export function createSlackChannel(options: {
  name: string;
  botToken: string;
  apiBaseUrl: string;
  receiver: SlackReceiver;
  logger: Logger;
}): ChannelAdapter & InboundRequests {
  const { name, logger, receiver } = options;
  const tell = (problem: string): string => `channel "${name}": ${problem}`;
  const slackApiUrl = options.apiBaseUrl.endsWith('/') ? options.apiBaseUrl : `${options.apiBaseUrl}/`;
  const web = new WebClient(options.botToken, { slackApiUrl, logger: slackLogger(logger), retryConfig: { retries: 0 } });
  const socket =
    receiver.mode === 'socket'
      ? new SocketModeClient({ appToken: receiver.appToken, clientOptions: { slackApiUrl, retryConfig: { retries: 0 } }, logger: slackLogger(logger) })
      : undefined;
  let botUserId = '';
  let state: ChannelState = 'stopped';
  let error: string | null = null;
  let handlers: { sink: InboundSink; choices: ChoiceSink | undefined; changes: ChangeSink | undefined } | undefined;

  /**
   * Sends a reply as a Markdown block (Slack renders it); should Slack refuse the block
   * (`invalid_blocks`), the same words go as the message's plain text, so a reply is never lost
   * to its formatting.
   */
  async function formatted<T>(text: string, call: (blocks: { blocks?: { type: 'markdown'; text: string }[] }) => Promise<T>): Promise<T> {
    try {
      return await call({ blocks: [{ type: 'markdown', text }] });
    } catch (caught) {
      const refusal = (caught as { data?: { error?: unknown } } | undefined)?.data?.error;
      if (refusal !== 'invalid_blocks' && refusal !== 'invalid_blocks_format') throw caught;
      logger.warn({ channel: name, problem: refusal }, `channel "${name}": Slack refused a reply's Markdown block; sent as plain text`);
      return call({});
    }
  }

  socket?.on('connected', () => {
    state = 'connected';
    error = null;
  });
  socket?.on('reconnecting', () => {
    state = 'reconnecting';
  });
  socket?.on('disconnected', () => {
    if (state !== 'stopped') state = 'reconnecting';
  });

  const threadOf = (target: ReplyTarget): { thread_ts?: string } => (target.thread === null ? {} : { thread_ts: target.thread });
  const withoutMention = (text: string): string => text.replaceAll(`<@${botUserId}>`, '').trim();

  /** A message event: stored through the sink (or an edit, a deletion), then `ack` (Slack's acknowledgement). */
  async function onMessage(event: SlackMessageEvent, ack: () => Promise<void>): Promise<void> {
    const { sink, changes } = handlers ?? {};
    if (sink === undefined) return;
    if (event.subtype === 'message_changed' && event.message?.text !== undefined && event.message.user !== botUserId) {
      await changes?.({ platformId: `${event.channel}:${event.message.ts}`, kind: 'edit', text: withoutMention(event.message.text) });
    } else if (event.subtype === 'message_deleted' && event.deleted_ts !== undefined) {
      await changes?.({ platformId: `${event.channel}:${event.deleted_ts}`, kind: 'delete' });
    } else if (event.bot_id === undefined && event.subtype === undefined && event.user !== undefined && event.user !== botUserId && event.text !== undefined) {
      // The bot's own messages, joins and the like are not messages to answer.
      const direct = event.channel_type === 'im';
      await sink({
        platformId: `${event.channel}:${event.ts}`,
        user: { id: event.user, name: null },
        // A channel message starts a thread the bot answers in (or continues the one it is in).
        conversation: { id: event.channel, kind: direct ? 'direct' : 'group', thread: event.thread_ts ?? (direct ? null : event.ts) },
        mentioned: direct || event.text.includes(`<@${botUserId}>`),
        text: withoutMention(event.text),
      });
    }
    await ack();
  }

  /** A button press (block_actions). */
  async function onInteractive(body: SlackBlockActions): Promise<void> {
    const value = body.actions?.[0]?.value;
    if (body.type !== 'block_actions' || value === undefined) return;
    const channel = body.channel?.id ?? body.container?.channel_id ?? '';
    const messageTs = body.message?.ts ?? body.container?.message_ts;
    await handlers?.choices?.({
      user: { id: body.user.id, name: body.user.name ?? body.user.username ?? null },
      conversationId: channel,
      data: value,
      acknowledge: async (text) => {
        // No toast in Slack: the outcome goes under the question, for everyone in the conversation.
        if (messageTs !== undefined && !text.startsWith('Only'))
          await web.chat.update({ channel, ts: messageTs, text: `${body.message?.text ?? ''}\n${text}`, blocks: [] }).catch(() => undefined);
        else await web.chat.postEphemeral({ channel, user: body.user.id, text }).catch(() => undefined);
      },
    });
  }

  /** An event that could not be stored is not acknowledged: Slack delivers it again. */
  const report = (caught: unknown): void => {
    error = caught instanceof Error ? caught.message : String(caught);
    logger.warn({ err: caught, channel: name }, tell('an event could not be handled'));
  };
  socket?.on('message', ({ event, ack }: { event: SlackMessageEvent; ack: () => Promise<void> }) => void onMessage(event, ack).catch(report));
  socket?.on('interactive', ({ body, ack }: { body: SlackBlockActions; ack: () => Promise<void> }) => {
    void ack()
      .then(() => onInteractive(body))
      .catch(report);
  });

  /** The Events API's POSTs: the signature and the timestamp checked, the URL verification answered, events taken in. */
  async function handle(request: Request): Promise<Response> {
    if (receiver.mode !== 'events') throw new HttpRequestError('ROUTE_NOT_FOUND', tell('receives over Socket Mode, not HTTP'));
    const body = await request.text();
    const timestamp = request.headers.get('x-slack-request-timestamp') ?? '';
    const signature = request.headers.get('x-slack-signature') ?? '';
    const skew = Math.abs(receiver.clock.now() / 1000 - Number(timestamp));
    if (!(skew <= SLACK_MAX_SKEW_SECONDS) || !signatureMatches(signSlackRequest(receiver.signingSecret, timestamp, body), signature)) {
      throw new UnauthorizedError(tell("the Slack signature or timestamp does not hold (signed with the app's signing secret, within five minutes)"));
    }
    // Interactivity comes as a form with a JSON payload; events as JSON.
    const form = (request.headers.get('content-type') ?? '').includes('application/x-www-form-urlencoded') ? new URLSearchParams(body).get('payload') : null;
    const parsed = safeParseJson(form ?? body);
    if (!parsed.ok) throw new HttpRequestError('INVALID_REQUEST', tell(`the body is not JSON: ${parsed.message}`));
    const payload = parsed.value as { type?: string; challenge?: string; event?: SlackMessageEvent };
    if (payload.type === 'url_verification') return Response.json({ challenge: payload.challenge ?? '' });
    if (form !== null) {
      void onInteractive(payload as SlackBlockActions).catch(report);
      return new Response(null, { status: 200 });
    }
    if (payload.type === 'event_callback' && payload.event?.type === 'message') await onMessage(payload.event, () => Promise.resolve());
    return new Response(null, { status: 200 });
  }

  return {
    kind: 'slack',
    maxMessageLength: SLACK_MAX_LENGTH,

    async start(sink: InboundSink, choices?: ChoiceSink, changes?: ChangeSink) {
      handlers = { sink, choices, changes };
      try {
        botUserId = String((await web.auth.test()).user_id ?? '');
      } catch (caught) {
        throw new Error(
          tell(`Slack refused the bot token or could not be reached at ${slackApiUrl}: ${caught instanceof Error ? caught.message : String(caught)}`),
          { cause: caught },
        );
      }
      if (socket !== undefined) {
        try {
          await socket.start();
        } catch (caught) {
          throw new Error(tell(`Slack Socket Mode could not connect: ${caught instanceof Error ? caught.message : String(caught)}`), { cause: caught });
        }
      }
      state = 'connected';
    },

    async stop() {
      state = 'stopped';
      handlers = undefined;
      await socket?.disconnect();
    },

    handle,

    refusedForGood: (error) => isSlackRefusalForGood(error),

    async send(target, text) {
      const sent = await formatted(text, (blocks) => web.chat.postMessage({ channel: target.conversationId, text, ...blocks, ...threadOf(target) }));
      return { messageId: String(sent.ts) };
    },

    async edit(target, messageId, text) {
      await formatted(text, (blocks) => web.chat.update({ channel: target.conversationId, ts: messageId, text, ...blocks }));
    },

    async sendChoices(target, text, choices) {
      const sent = await web.chat.postMessage({
        channel: target.conversationId,
        text,
        blocks: [
          { type: 'section', text: { type: 'plain_text', text } },
          {
            type: 'actions',
            elements: choices.map((choice) => ({
              type: 'button' as const,
              text: { type: 'plain_text' as const, text: choice.label },
              value: choice.data,
              action_id: choice.data,
            })),
          },
        ],
        ...threadOf(target),
      });
      return { messageId: String(sent.ts) };
    },

    state: () => ({ state, error }),
  };
}

/** Slack's platform errors that mean "not now" rather than "never": these are tried again. */
const SLACK_TRANSIENT_ERRORS = new Set(['internal_error', 'fatal_error', 'service_unavailable', 'request_timeout', 'ratelimited']);

/** Whether Slack refused a call for good: a platform error (`channel_not_found`, `not_in_channel`…) but for the transient few, or an HTTP 4xx. */
function isSlackRefusalForGood(error: unknown): boolean {
  if (error instanceof WebAPIPlatformError) return !SLACK_TRANSIENT_ERRORS.has(error.data.error);
  return error instanceof WebAPIHTTPError && isRefusalForGood(error.statusCode);
}
