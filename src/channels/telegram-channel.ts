import { Bot, GrammyError, InlineKeyboard, webhookCallback } from 'grammy';
import type { Message, User } from 'grammy/types';
import type { Logger } from '../contracts/index.ts';
import { HttpRequestError, messageOf } from '../errors/index.ts';
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
import { toTelegramHtml } from './telegram-format.ts';

/** Telegram's limit on one message's text. */
const TELEGRAM_MAX_LENGTH = 4096;

/** How a Telegram user is named: first and last name, else the username. */
function nameOf(user: User): string | null {
  return [user.first_name, user.last_name].filter(Boolean).join(' ') || (user.username ?? null);
}

/**
 * Telegram through grammY (the maintained Bot API framework): long polling, so no public URL is
 * needed, or a webhook Telegram POSTs to. An update is acknowledged (the next `getUpdates`
 * offset, or the webhook's 200) only after its handler, which stores the message first, has
 * returned. `apiBaseUrl` points grammY at another Bot API server
 * (a local one, or a test's).
 */
export function createTelegramChannel(options: {
  name: string;
  token: string;
  apiBaseUrl: string;
  /** Receive by webhook instead of long polling: Telegram POSTs to `url` (this channel's `/hooks/<name>`) with `secretToken`. */
  webhook?: { url: string; secretToken: string };
  logger: Logger;
}): ChannelAdapter & InboundRequests {
  const { name, token, apiBaseUrl, logger, webhook } = options;
  const bot = new Bot(token, { client: { apiRoot: apiBaseUrl.replace(/\/+$/, '') } });
  const ALLOWED_UPDATES = ['message', 'edited_message', 'callback_query'] as const;
  // grammY's own webhook handler: checks the secret token, runs the handlers (which store the
  // message) and only then answers 200, so an update is acknowledged once it is stored.
  const onWebhook =
    webhook === undefined ? undefined : webhookCallback(bot, 'std/http', { secretToken: webhook.secretToken, onTimeout: 'throw', timeoutMilliseconds: 30_000 });
  let state: ChannelState = 'stopped';
  let error: string | null = null;
  let polling: Promise<void> | undefined;

  /** Whether a group message speaks to the bot: an @mention of it, or a reply to one of its messages. */
  function mentions(message: Message): boolean {
    const username = bot.botInfo.username.toLowerCase();
    const text = message.text ?? '';
    const named = (message.entities ?? []).some(
      (entity) => entity.type === 'mention' && text.slice(entity.offset + 1, entity.offset + entity.length).toLowerCase() === username,
    );
    return named || message.reply_to_message?.from?.id === bot.botInfo.id;
  }

  /**
   * Sends a reply's Markdown as Telegram's HTML; should the formatter fail or refuse it (too long,
   * nested too deep), or Telegram refuse the markup ("can't parse entities"), the same words go as
   * plain text. A formatting problem never keeps a reply from being sent.
   */
  async function formatted<T>(markdown: string, call: (text: string, options: { parse_mode?: 'HTML' }) => Promise<T>): Promise<T> {
    let html: string;
    try {
      html = toTelegramHtml(markdown);
    } catch (caught) {
      logger.warn({ channel: name, problem: messageOf(caught) }, `channel "${name}": a reply could not be formatted; sent as plain text`);
      return call(markdown, {});
    }
    try {
      return await call(html, { parse_mode: 'HTML' });
    } catch (caught) {
      if (!(caught instanceof GrammyError && caught.error_code === 400 && /parse entities/i.test(caught.description))) throw caught;
      logger.warn({ channel: name, problem: caught.description }, `channel "${name}": Telegram refused a reply's formatting; sent as plain text`);
      return call(markdown, {});
    }
  }

  const chatOf = (target: ReplyTarget): number | string => (/^-?\d+$/.test(target.conversationId) ? Number(target.conversationId) : target.conversationId);
  const threadOf = (target: ReplyTarget): { message_thread_id?: number } => (target.thread === null ? {} : { message_thread_id: Number(target.thread) });

  return {
    kind: 'telegram',
    refusedForGood: (error) => error instanceof GrammyError && isRefusalForGood(error.error_code),
    maxMessageLength: TELEGRAM_MAX_LENGTH,

    async start(sink: InboundSink, choices?: ChoiceSink, changes?: ChangeSink) {
      // Telegram tells bots of edits (not of deletions).
      bot.on('edited_message:text', async (context) => {
        const edited = context.editedMessage;
        await changes?.({ platformId: `${edited.chat.id}:${edited.message_id}`, kind: 'edit', text: edited.text });
      });
      bot.on('callback_query:data', async (context) => {
        const query = context.callbackQuery;
        const from = query.from;
        const answered = { done: false };
        await choices?.({
          user: { id: String(from.id), name: nameOf(from) },
          conversationId: String(query.message?.chat.id ?? from.id),
          data: query.data,
          acknowledge: async (text) => {
            answered.done = true;
            await context.answerCallbackQuery({ text });
            // The question shows what became of it, and its buttons go.
            if (query.message !== undefined && 'text' in query.message && !text.startsWith('Only'))
              await context.editMessageText(`${query.message.text ?? ''}\n${text}`).catch(() => undefined);
          },
        });
        if (!answered.done) await context.answerCallbackQuery();
      });
      bot.on('message:text', async (context) => {
        const message = context.message;
        const direct = message.chat.type === 'private';
        await sink({
          platformId: `${message.chat.id}:${message.message_id}`,
          user: { id: String(message.from.id), name: nameOf(message.from) },
          conversation: {
            id: String(message.chat.id),
            kind: direct ? 'direct' : 'group',
            thread: message.is_topic_message === true && message.message_thread_id !== undefined ? String(message.message_thread_id) : null,
          },
          mentioned: direct || mentions(message),
          text: message.text,
        });
      });
      bot.catch((caught) => {
        error = caught.message;
        logger.warn({ err: caught.error, channel: name }, `channel "${name}": an update could not be handled`);
      });
      try {
        await bot.init();
      } catch (caught) {
        throw new Error(
          `Telegram refused the bot token or could not be reached at ${apiBaseUrl}: ${caught instanceof Error ? caught.message : String(caught)}`,
          { cause: caught },
        );
      }
      if (webhook !== undefined) {
        try {
          await bot.api.setWebhook(webhook.url, { secret_token: webhook.secretToken, allowed_updates: [...ALLOWED_UPDATES], drop_pending_updates: false });
        } catch (caught) {
          throw new Error(`Telegram refused the webhook ${webhook.url}: ${caught instanceof Error ? caught.message : String(caught)}`, { cause: caught });
        }
        state = 'connected';
        return;
      }
      await new Promise<void>((resolve) => {
        polling = bot
          .start({
            drop_pending_updates: false,
            allowed_updates: [...ALLOWED_UPDATES],
            onStart: () => {
              state = 'connected';
              resolve();
            },
          })
          .catch((caught: unknown) => {
            state = 'failed';
            error = caught instanceof Error ? caught.message : String(caught);
            logger.error({ err: caught, channel: name }, `channel "${name}" stopped polling Telegram`);
            resolve();
          });
      });
    },

    async handle(request) {
      if (onWebhook === undefined) throw new HttpRequestError('ROUTE_NOT_FOUND', `channel "${name}" polls Telegram; it takes no webhook`);
      if (state !== 'connected') throw new HttpRequestError('CHANNEL_STOPPED', `channel "${name}" is not running`);
      return onWebhook(request);
    },

    async stop() {
      if (bot.isRunning()) await bot.stop();
      await polling;
      state = 'stopped';
    },

    async send(target, text) {
      const sent = await formatted(text, (body, options) => bot.api.sendMessage(chatOf(target), body, { ...threadOf(target), ...options }));
      return { messageId: String(sent.message_id) };
    },

    async edit(target, messageId, text) {
      await formatted(text, (body, options) => bot.api.editMessageText(chatOf(target), Number(messageId), body, options));
    },

    async sendChoices(target, text, choices) {
      const keyboard = new InlineKeyboard();
      for (const choice of choices) keyboard.text(choice.label, choice.data);
      const sent = await bot.api.sendMessage(chatOf(target), text, { ...threadOf(target), reply_markup: keyboard });
      return { messageId: String(sent.message_id) };
    },

    async typing(target) {
      await bot.api.sendChatAction(chatOf(target), 'typing', threadOf(target));
    },

    state: () => ({ state, error }),
  };
}
