import { createServer, type IncomingMessage, type Server } from 'node:http';
import { type WebSocket, WebSocketServer } from 'ws';

/** A message the bot created, as the fake server keeps it (edits replace its content). */
export interface DiscordMessage {
  id: string;
  channelId: string;
  content: string;
  components: { components?: { label?: string; custom_id?: string }[] }[];
  edits: number;
}

/** What the bot answered to a button press (the interaction callback's type and data). */
export interface InteractionAnswer {
  type: number;
  content: string | undefined;
  ephemeral: boolean;
}

/**
 * Discord on loopback, as discord.js talks to it: the REST API under `/api/v10` (`gateway/bot`,
 * channel messages, typing, interaction callbacks) and the gateway over a WebSocket (HELLO,
 * IDENTIFY → READY and one server's GUILD_CREATE with a channel and a thread, heartbeats,
 * MESSAGE_CREATE, MESSAGE_UPDATE, MESSAGE_DELETE and INTERACTION_CREATE dispatches).
 */
export interface FakeDiscordServer {
  apiUrl: string;
  readonly bot: { id: string; username: string };
  /** The server (guild), its text channel the bot is in, and a thread under that channel. */
  readonly guild: { id: string; channelId: string; threadId: string };
  /** Dispatches a message; a direct message has no guild. */
  message(options: {
    channelId: string;
    author: { id: string; username: string };
    content: string;
    guild?: boolean;
    id?: string;
    mentionsBot?: boolean;
  }): string;
  /** Dispatches an edit of a message dispatched earlier. */
  edit(options: { channelId: string; id: string; author: { id: string; username: string }; content: string; guild?: boolean }): void;
  /** Dispatches the deletion of a message. */
  remove(options: { channelId: string; id: string; guild?: boolean }): void;
  /** Dispatches a button press on one of the bot's messages. */
  press(user: { id: string; username: string }, message: DiscordMessage, customId: string): void;
  readonly created: DiscordMessage[];
  readonly answers: InteractionAnswer[];
  ready(): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeDiscordServer(): Promise<FakeDiscordServer> {
  const bot = { id: '900000000000000001', username: 'loom' };
  const guild = { id: '800000000000000001', channelId: '700000000000000001', threadId: '700000000000000002' };
  const created: DiscordMessage[] = [];
  const answers: InteractionAnswer[] = [];
  let sockets: WebSocket[] = [];
  let sequence = 1;
  let nextId = 600_000_000_000_000_000n;
  const onReady: (() => void)[] = [];
  let identified = false;
  const snowflake = (): string => String(nextId++);
  const now = (): string => new Date().toISOString();

  async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
    let text = '';
    for await (const chunk of request) text += (chunk as Buffer).toString('utf8');
    if ((request.headers['content-type'] ?? '').includes('multipart/form-data')) {
      const json = /name="payload_json"\r\n(?:Content-Type: application\/json\r\n)?\r\n([\s\S]*?)\r\n--/.exec(text)?.[1];
      return json === undefined ? {} : (JSON.parse(json) as Record<string, unknown>);
    }
    return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  }

  const botUser = { ...bot, discriminator: '0', global_name: null, avatar: null, bot: true };
  /** A message object as Discord sends it: who wrote what, where, and when it was last edited. */
  const messageBody = (fields: {
    id: string;
    channelId: string;
    author: Record<string, unknown>;
    content: string;
    editedAt: string | null;
    mentions: unknown[];
  }): Record<string, unknown> => ({
    id: fields.id,
    channel_id: fields.channelId,
    author: fields.author,
    content: fields.content,
    timestamp: now(),
    edited_timestamp: fields.editedAt,
    tts: false,
    mention_everyone: false,
    mentions: fields.mentions,
    mention_roles: [],
    attachments: [],
    embeds: [],
    pinned: false,
    type: 0,
    flags: 0,
  });
  const messageObject = (message: DiscordMessage): Record<string, unknown> => ({
    ...messageBody({ id: message.id, channelId: message.channelId, author: botUser, content: message.content, editedAt: null, mentions: [] }),
    components: message.components,
  });

  /** A person's message as the gateway carries it (created, or edited at `editedAt`). */
  const userMessage = (
    options: { channelId: string; id: string; author: { id: string; username: string }; content: string; guild?: boolean; mentionsBot?: boolean },
    editedAt: string | null,
  ): Record<string, unknown> => ({
    ...messageBody({
      id: options.id,
      channelId: options.channelId,
      author: { ...options.author, discriminator: '0', global_name: options.author.username, avatar: null, bot: false },
      content: options.content,
      editedAt,
      mentions: options.mentionsBot === true ? [botUser] : [],
    }),
    ...(options.guild === true ? { guild_id: guild.id, member: { roles: [], joined_at: now(), deaf: false, mute: false, flags: 0 } } : { channel_type: 1 }),
  });

  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').replace(/\?.*$/, '');
    const json = (status: number, body: unknown): void => {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    readJson(request)
      .then((body) => {
        if (path === '/api/v10/gateway/bot') {
          const address = server.address();
          json(200, {
            url: `ws://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/gateway`,
            shards: 1,
            session_start_limit: { total: 1000, remaining: 1000, reset_after: 0, max_concurrency: 1 },
          });
          return;
        }
        const messages = /^\/api\/v10\/channels\/(\d+)\/messages(?:\/(\d+))?$/.exec(path);
        if (messages !== null && request.method === 'POST') {
          const message: DiscordMessage = {
            id: snowflake(),
            channelId: messages[1] ?? '',
            content: typeof body['content'] === 'string' ? body['content'] : '',
            components: (body['components'] as DiscordMessage['components'] | undefined) ?? [],
            edits: 0,
          };
          created.push(message);
          json(200, messageObject(message));
          return;
        }
        if (messages !== null && request.method === 'PATCH') {
          const message = created.find((candidate) => candidate.id === messages[2]);
          if (message === undefined) {
            json(404, { message: 'Unknown Message', code: 10008 });
            return;
          }
          if (typeof body['content'] === 'string') message.content = body['content'];
          if (body['components'] !== undefined) message.components = body['components'] as DiscordMessage['components'];
          message.edits += 1;
          json(200, messageObject(message));
          return;
        }
        if (/^\/api\/v10\/channels\/\d+\/typing$/.test(path)) {
          response.writeHead(204).end();
          return;
        }
        if (/^\/api\/v10\/interactions\/\d+\/[^/]+\/callback$/.test(path)) {
          const data = (body['data'] ?? {}) as { content?: string; flags?: number; components?: unknown };
          answers.push({ type: Number(body['type']), content: data.content, ephemeral: ((data.flags ?? 0) & 64) !== 0 });
          const original = created.find((candidate) => candidate.id === pressedMessage.get(path));
          if (original !== undefined && Number(body['type']) === 7) {
            original.content = data.content ?? original.content;
            original.components = (data.components as DiscordMessage['components'] | undefined) ?? original.components;
            original.edits += 1;
          }
          response.writeHead(204).end();
          return;
        }
        json(404, { message: `no route ${request.method ?? ''} ${path}`, code: 0 });
      })
      .catch((error: unknown) => json(500, { message: String(error), code: 0 }));
  });
  /** Interaction callback path → the message whose button was pressed. */
  const pressedMessage = new Map<string, string>();

  const gateway = new WebSocketServer({ server, path: '/gateway' });
  const dispatch = (type: string, data: unknown): void => {
    for (const socket of sockets) socket.send(JSON.stringify({ op: 0, t: type, s: sequence++, d: data }));
  };
  gateway.on('connection', (socket) => {
    sockets.push(socket);
    socket.on('close', () => {
      sockets = sockets.filter((open) => open !== socket);
    });
    socket.on('message', (raw: Buffer) => {
      const payload = JSON.parse(raw.toString('utf8')) as { op: number };
      if (payload.op === 1) socket.send(JSON.stringify({ op: 11, d: null, s: null, t: null }));
      if (payload.op === 2) {
        identified = true;
        const address = server.address();
        const port = typeof address === 'object' && address !== null ? address.port : 0;
        dispatch('READY', {
          v: 10,
          user: botUser,
          guilds: [{ id: guild.id, unavailable: true }],
          session_id: 'session-1',
          resume_gateway_url: `ws://127.0.0.1:${port}/gateway`,
          application: { id: bot.id, flags: 0 },
        });
        dispatch('GUILD_CREATE', {
          id: guild.id,
          name: 'Team',
          icon: null,
          owner_id: '1',
          roles: [{ id: guild.id, name: '@everyone', permissions: '2048', position: 0, color: 0, hoist: false, managed: false, mentionable: false, flags: 0 }],
          emojis: [],
          stickers: [],
          features: [],
          member_count: 2,
          members: [],
          channels: [{ id: guild.channelId, type: 0, name: 'general', position: 0, permission_overwrites: [], guild_id: guild.id }],
          threads: [
            {
              id: guild.threadId,
              type: 11,
              name: 'a question',
              parent_id: guild.channelId,
              guild_id: guild.id,
              owner_id: '1',
              message_count: 1,
              member_count: 1,
              thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: now(), locked: false },
            },
          ],
          presences: [],
          voice_states: [],
          stage_instances: [],
          guild_scheduled_events: [],
          joined_at: now(),
          large: false,
          unavailable: false,
          premium_tier: 0,
          preferred_locale: 'en-US',
        });
        for (const resolve of onReady.splice(0)) resolve();
      }
    });
    socket.send(JSON.stringify({ op: 10, d: { heartbeat_interval: 60_000 }, s: null, t: null }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;

  return {
    apiUrl: `http://127.0.0.1:${port}/api`,
    bot,
    guild,
    message(options) {
      const id = options.id ?? snowflake();
      dispatch('MESSAGE_CREATE', userMessage({ ...options, id }, null));
      return id;
    },
    edit(options) {
      dispatch('MESSAGE_UPDATE', userMessage(options, now()));
    },
    remove(options) {
      dispatch('MESSAGE_DELETE', { id: options.id, channel_id: options.channelId, ...(options.guild === true ? { guild_id: guild.id } : {}) });
    },
    press(user, message, customId) {
      const id = snowflake();
      pressedMessage.set(`/api/v10/interactions/${id}/token-${id}/callback`, message.id);
      dispatch('INTERACTION_CREATE', {
        id,
        application_id: bot.id,
        type: 3,
        token: `token-${id}`,
        version: 1,
        channel_id: message.channelId,
        channel: { id: message.channelId, type: 1 },
        user: { ...user, discriminator: '0', global_name: user.username, avatar: null },
        data: { custom_id: customId, component_type: 2 },
        message: messageObject(message),
        locale: 'en-US',
        app_permissions: '0',
        entitlements: [],
        authorizing_integration_owners: {},
        context: 1,
      });
    },
    created,
    answers,
    ready: () => (identified ? Promise.resolve() : new Promise((resolve) => onReady.push(resolve))),
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.terminate();
        gateway.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
