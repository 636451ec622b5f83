import { type Logger as SlackLogger, LogLevel, SocketModeClient } from '@slack/socket-mode';
import { WebClient } from '@slack/web-api';
import type { Logger } from '../contracts/index.ts';
import type { ChangeSink, ChannelAdapter, ChannelState, ChoiceSink, InboundSink, ReplyTarget } from './channel-adapter.ts';

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

/**
 * Slack through its official SDKs: Socket Mode (`@slack/socket-mode`) to receive, so the daemon
 * needs no public address, and the Web API (`@slack/web-api`) to reply. An event is acknowledged
 * (its envelope) only after it is stored. Direct messages are conversations of their own; in a
 * channel, each message that speaks to the bot starts a thread the bot answers in. Replies are
 * Markdown blocks (Slack renders standard Markdown in them); approvals get Block Kit buttons.
 */
export function createSlackChannel(options: { name: string; appToken: string; botToken: string; apiBaseUrl: string; logger: Logger }): ChannelAdapter {
  const { name, logger } = options;
  const tell = (problem: string): string => `channel "${name}": ${problem}`;
  const slackApiUrl = options.apiBaseUrl.endsWith('/') ? options.apiBaseUrl : `${options.apiBaseUrl}/`;
  const web = new WebClient(options.botToken, { slackApiUrl, logger: slackLogger(logger), retryConfig: { retries: 0 } });
  const socket = new SocketModeClient({ appToken: options.appToken, clientOptions: { slackApiUrl, retryConfig: { retries: 0 } }, logger: slackLogger(logger) });
  let botUserId = '';
  let state: ChannelState = 'stopped';
  let error: string | null = null;

  socket.on('connected', () => {
    state = 'connected';
    error = null;
  });
  socket.on('reconnecting', () => {
    state = 'reconnecting';
  });
  socket.on('disconnected', () => {
    if (state !== 'stopped') state = 'reconnecting';
  });

  const threadOf = (target: ReplyTarget): { thread_ts?: string } => (target.thread === null ? {} : { thread_ts: target.thread });

  return {
    kind: 'slack',
    maxMessageLength: SLACK_MAX_LENGTH,

    async start(sink: InboundSink, choices?: ChoiceSink, changes?: ChangeSink) {
      state = 'starting';
      try {
        botUserId = String((await web.auth.test()).user_id ?? '');
      } catch (caught) {
        state = 'failed';
        error = caught instanceof Error ? caught.message : String(caught);
        throw new Error(tell(`Slack refused the bot token or could not be reached at ${slackApiUrl}: ${error}`), { cause: caught });
      }
      const onMessage = async ({ event, ack }: { event: SlackMessageEvent; ack: () => Promise<void> }): Promise<void> => {
        if (event.subtype === 'message_changed' && event.message?.text !== undefined && event.message.user !== botUserId) {
          await changes?.({ platformId: `${event.channel}:${event.message.ts}`, kind: 'edit', text: event.message.text.replaceAll(`<@${botUserId}>`, '').trim() });
          await ack();
          return;
        }
        if (event.subtype === 'message_deleted' && event.deleted_ts !== undefined) {
          await changes?.({ platformId: `${event.channel}:${event.deleted_ts}`, kind: 'delete' });
          await ack();
          return;
        }
        // The bot's own messages and edits, joins and the like are not messages to answer.
        if (event.bot_id !== undefined || event.subtype !== undefined || event.user === undefined || event.user === botUserId || event.text === undefined) {
          await ack();
          return;
        }
        const direct = event.channel_type === 'im';
        const mentioned = direct || event.text.includes(`<@${botUserId}>`);
        await sink({
          platformId: `${event.channel}:${event.ts}`,
          user: { id: event.user, name: null },
          // A channel message starts a thread the bot answers in (or continues the one it is in).
          conversation: { id: event.channel, kind: direct ? 'direct' : 'group', thread: event.thread_ts ?? (direct ? null : event.ts) },
          mentioned,
          text: event.text.replaceAll(`<@${botUserId}>`, '').trim(),
        });
        await ack();
      };
      const onInteractive = async ({ body, ack }: { body: SlackBlockActions; ack: () => Promise<void> }): Promise<void> => {
        await ack();
        const value = body.actions?.[0]?.value;
        if (body.type !== 'block_actions' || value === undefined) return;
        const channel = body.channel?.id ?? body.container?.channel_id ?? '';
        const messageTs = body.message?.ts ?? body.container?.message_ts;
        await choices?.({
          user: { id: body.user.id, name: body.user.name ?? body.user.username ?? null },
          conversationId: channel,
          data: value,
          acknowledge: async (text) => {
            // No toast in Slack: the outcome goes under the question, for everyone in the conversation.
            if (messageTs !== undefined && !text.startsWith('Only')) await web.chat.update({ channel, ts: messageTs, text: `${body.message?.text ?? ''}\n${text}`, blocks: [] }).catch(() => undefined);
            else await web.chat.postEphemeral({ channel, user: body.user.id, text }).catch(() => undefined);
          },
        });
      };
      // An event that could not be stored is not acknowledged: Slack delivers it again.
      const report = (caught: unknown): void => {
        error = caught instanceof Error ? caught.message : String(caught);
        logger.warn({ err: caught, channel: name }, tell('an event could not be handled'));
      };
      socket.on('message', (args: Parameters<typeof onMessage>[0]) => void onMessage(args).catch(report));
      socket.on('interactive', (args: Parameters<typeof onInteractive>[0]) => void onInteractive(args).catch(report));
      try {
        await socket.start();
      } catch (caught) {
        state = 'failed';
        error = caught instanceof Error ? caught.message : String(caught);
        throw new Error(tell(`Slack Socket Mode could not connect: ${error}`), { cause: caught });
      }
      state = 'connected';
    },

    async stop() {
      state = 'stopped';
      await socket.disconnect();
    },

    async send(target, text) {
      const sent = await web.chat.postMessage({ channel: target.conversationId, text, blocks: [{ type: 'markdown', text }], ...threadOf(target) });
      return { messageId: String(sent.ts) };
    },

    async edit(target, messageId, text) {
      await web.chat.update({ channel: target.conversationId, ts: messageId, text, blocks: [{ type: 'markdown', text }] });
    },

    async sendChoices(target, text, choices) {
      const sent = await web.chat.postMessage({
        channel: target.conversationId,
        text,
        blocks: [
          { type: 'section', text: { type: 'plain_text', text } },
          { type: 'actions', elements: choices.map((choice) => ({ type: 'button' as const, text: { type: 'plain_text' as const, text: choice.label }, value: choice.data, action_id: choice.data })) },
        ],
        ...threadOf(target),
      });
      return { messageId: String(sent.ts) };
    },

    state: () => ({ state, error }),
  };
}
