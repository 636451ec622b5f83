import { ButtonStyle, Client, ComponentType, DiscordAPIError, Events, GatewayIntentBits, type Message, MessageFlags, Partials, Routes } from 'discord.js';
import type { Logger } from '../contracts/index.ts';
import {
  isRefusalForGood,
  type ChangeSink,
  type ChannelAdapter,
  type ChannelState,
  type ChoiceSink,
  type InboundSink,
  type ReplyTarget,
} from './channel-adapter.ts';

/** Discord's limit on one message's content. */
const DISCORD_MAX_LENGTH = 2000;

/**
 * Discord through discord.js (the maintained library): the gateway to receive, its REST client to
 * reply (Discord renders Markdown itself). A direct message is a conversation; in a server's
 * channel, a message that mentions the bot is answered (each channel one conversation, and
 * each thread one of its own under its channel's policy). `apiBaseUrl` points discord.js at another API (a test's); the gateway's address
 * comes from its `GET /gateway/bot`. The gateway has no acknowledgement to hold back: a message
 * is stored before it is answered, and one that arrives twice is answered once.
 */
export function createDiscordChannel(options: { name: string; token: string; apiBaseUrl: string; logger: Logger }): ChannelAdapter {
  const { name, token, logger } = options;
  const client = new Client({
    intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent],
    partials: [Partials.Channel, Partials.Message],
    rest: { api: options.apiBaseUrl.replace(/\/+$/, '') },
  });
  let state: ChannelState = 'stopped';
  let error: string | null = null;

  client.on(Events.ShardDisconnect, () => {
    if (state !== 'stopped') state = 'reconnecting';
  });
  client.on(Events.ShardResume, () => {
    state = 'connected';
  });
  client.on(Events.ShardReady, () => {
    state = 'connected';
  });
  client.on(Events.Error, (caught) => {
    error = caught.message;
    logger.warn({ err: caught, channel: name }, `channel "${name}": Discord reported an error`);
  });

  const post = async (channelId: string, body: Record<string, unknown>): Promise<string> => {
    const sent = (await client.rest.post(Routes.channelMessages(channelId), { body })) as { id: string };
    return sent.id;
  };
  const channelOf = (target: ReplyTarget): string => target.thread ?? target.conversationId;
  const botId = (): string => client.user?.id ?? '';
  /** A message's text without the bot's mention (`<@id>`, or `<@!id>` as older clients write it). */
  const withoutMention = (text: string): string => text.replaceAll(`<@${botId()}>`, '').replaceAll(`<@!${botId()}>`, '').trim();

  return {
    kind: 'discord',
    maxMessageLength: DISCORD_MAX_LENGTH,

    async start(sink: InboundSink, choices?: ChoiceSink, changes?: ChangeSink) {
      client.on(Events.MessageUpdate, (_before, after) => {
        if (after.content === null || after.author?.id === botId()) return;
        changes?.({ platformId: after.id, kind: 'edit', text: withoutMention(after.content) }).catch((caught: unknown) =>
          logger.warn({ err: caught, channel: name }, `channel "${name}": an edit could not be handled`),
        );
      });
      client.on(Events.MessageDelete, (deleted) => {
        changes?.({ platformId: deleted.id, kind: 'delete' }).catch((caught: unknown) =>
          logger.warn({ err: caught, channel: name }, `channel "${name}": a deletion could not be handled`),
        );
      });
      const onMessage = async (message: Message): Promise<void> => {
        if (message.author.bot || message.author.id === client.user?.id || message.content === '') return;
        const direct = message.guildId === null;
        const mentioned = direct || message.mentions.users.has(botId());
        // A thread is a conversation of its own within its channel: the channel's policy applies,
        // the session is the thread's.
        const parent = message.channel.isThread() ? message.channel.parentId : null;
        await sink({
          platformId: message.id,
          user: { id: message.author.id, name: message.author.globalName ?? message.author.username },
          conversation:
            parent === null
              ? { id: message.channelId, kind: direct ? 'direct' : 'group', thread: null }
              : { id: parent, kind: 'group', thread: message.channelId },
          mentioned,
          text: withoutMention(message.content),
        });
      };
      client.on(Events.MessageCreate, (message) => {
        onMessage(message).catch((caught: unknown) => logger.warn({ err: caught, channel: name }, `channel "${name}": a message could not be handled`));
      });
      client.on(Events.InteractionCreate, (interaction) => {
        if (!interaction.isButton()) return;
        void choices?.({
          user: { id: interaction.user.id, name: interaction.user.globalName ?? interaction.user.username },
          conversationId: interaction.channelId,
          data: interaction.customId,
          acknowledge: async (text) => {
            // Only the presser sees a refusal; an outcome replaces the buttons for everyone.
            if (text.startsWith('Only')) await interaction.reply({ content: text, flags: MessageFlags.Ephemeral });
            else await interaction.update({ content: `${interaction.message.content}\n${text}`, components: [] });
          },
        });
      });
      const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
      try {
        await client.login(token);
        await ready;
      } catch (caught) {
        throw new Error(
          `channel "${name}": Discord refused the bot token or could not be reached: ${caught instanceof Error ? caught.message : String(caught)}`,
          { cause: caught },
        );
      }
      state = 'connected';
    },

    async stop() {
      state = 'stopped';
      await client.destroy();
    },

    refusedForGood: (error) => error instanceof DiscordAPIError && isRefusalForGood(error.status),

    async send(target, text) {
      return { messageId: await post(channelOf(target), { content: text }) };
    },

    async edit(target, messageId, text) {
      await client.rest.patch(Routes.channelMessage(channelOf(target), messageId), { body: { content: text } });
    },

    async sendChoices(target, text, choices) {
      const components = [
        {
          type: ComponentType.ActionRow,
          components: choices.map((choice, index) => ({
            type: ComponentType.Button,
            style: index === 0 ? ButtonStyle.Success : ButtonStyle.Danger,
            label: choice.label,
            custom_id: choice.data,
          })),
        },
      ];
      return { messageId: await post(channelOf(target), { content: text, components }) };
    },

    async typing(target) {
      await client.rest.post(Routes.channelTyping(channelOf(target)));
    },

    state: () => ({ state, error }),
  };
}
