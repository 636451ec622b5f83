import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** A message the bot sent, as the fake server keeps it (edits replace its text). */
export interface SentMessage {
  chatId: number;
  messageId: number;
  text: string;
  threadId: number | undefined;
  edits: number;
  /** The buttons under it (`[label, data]`), if any. */
  buttons: [string, string][];
  /** `HTML` when it was sent (or last edited) with Telegram's HTML formatting. */
  parseMode: string | undefined;
}

/** A user or a group as updates carry them. */
export interface FakeChat {
  id: number;
  type: 'private' | 'group' | 'supergroup';
  title?: string;
}

/**
 * A Telegram Bot API server on loopback, as grammY talks to it: `getMe`, long-polling
 * `getUpdates` with offsets (an update stays until acknowledged), `sendMessage`,
 * `editMessageText`, `sendChatAction`, `deleteWebhook`. `failSends` makes the next sends fail
 * with 502, as a platform going away does.
 */
export interface FakeTelegramServer {
  url: string;
  readonly token: string;
  readonly bot: { id: number; username: string };
  /** Adds a text message from `from` in `chat`; returns its update id. */
  push(
    chat: FakeChat,
    from: { id: number; first_name: string },
    text: string,
    options?: { messageId?: number; entities?: { type: string; offset: number; length: number }[] },
  ): number;
  /** Edits a message a person sent (an `edited_message` update); returns the update id. */
  edit(chat: FakeChat, from: { id: number; first_name: string }, messageId: number, text: string): number;
  /** Presses a button under one of the bot's messages, as `from`; returns the update id. */
  press(from: { id: number; first_name: string }, message: SentMessage, data: string): number;
  /** What the bot answered to button presses (`answerCallbackQuery` texts), in order. */
  readonly answers: string[];
  /** What the bot sent, in order. */
  readonly sent: SentMessage[];
  /** Every API call, by method. */
  readonly calls: string[];
  /** The bodies of `setWebhook` calls. */
  readonly webhooks: Record<string, unknown>[];
  /** A message update as Telegram would POST it to a webhook. */
  update(chat: FakeChat, from: { id: number; first_name: string }, text: string): Record<string, unknown>;
  /** The highest update id grammY acknowledged (offset − 1). */
  acknowledged(): number;
  failSends(count: number): void;
  /** Refuses the markup of the next `count` HTML sends or edits ("can't parse entities"), as Telegram does with entities it will not take. */
  refuseMarkup(count: number): void;
  /** Resolves with the next message the bot sends. */
  nextSend(): Promise<SentMessage>;
  close(): Promise<void>;
}

export async function startFakeTelegramServer(token = '123456:test-token'): Promise<FakeTelegramServer> {
  const bot = { id: 999, username: 'loom_test_bot' };
  const updates: ({ update_id: number } & Record<string, unknown>)[] = [];
  const answers: string[] = [];
  const webhooks: Record<string, unknown>[] = [];
  const sent: SentMessage[] = [];
  const calls: string[] = [];
  const waiting = new Set<() => void>();
  let nextUpdate = 1;
  let nextMessage = 1000;
  let offset = 0;
  let failing = 0;
  let refusingMarkup = 0;
  const sendWaiters: ((message: SentMessage) => void)[] = [];
  const now = (): number => Math.floor(Date.now() / 1000);

  async function readBody(request: IncomingMessage): Promise<Record<string, unknown>> {
    let text = '';
    for await (const chunk of request) text += (chunk as Buffer).toString('utf8');
    return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
  }

  function answer(response: ServerResponse, result: unknown): void {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, result }));
  }

  /** Telegram's HTML mode takes only its own tags, balanced; anything else is a 400 "can't parse entities". */
  function refuseHtml(text: string, response: ServerResponse): boolean {
    if (refusingMarkup > 0) {
      refusingMarkup -= 1;
      response
        .writeHead(400, { 'content-type': 'application/json' })
        .end(JSON.stringify({ ok: false, error_code: 400, description: "Bad Request: can't parse entities: too many entities" }));
      return true;
    }
    const allowed = new Set(['b', 'strong', 'i', 'em', 'u', 's', 'del', 'code', 'pre', 'a', 'blockquote', 'tg-spoiler', 'span']);
    const open: string[] = [];
    for (const match of text.matchAll(/<(\/?)([a-z-]+)[^>]*>/g)) {
      const [, closing, tag = ''] = match;
      const ok = allowed.has(tag) && (closing === '' ? (open.push(tag), true) : open.pop() === tag);
      if (!ok) {
        response
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ ok: false, error_code: 400, description: `Bad Request: can't parse entities: unsupported start tag "${tag}"` }));
        return true;
      }
    }
    return false;
  }

  async function handle(method: string, body: Record<string, unknown>, response: ServerResponse): Promise<void> {
    calls.push(method);
    if (['sendMessage', 'editMessageText'].includes(method) && failing > 0) {
      failing -= 1;
      response.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, error_code: 502, description: 'Bad Gateway' }));
      return;
    }
    switch (method) {
      case 'getMe':
        answer(response, {
          id: bot.id,
          is_bot: true,
          first_name: 'Loom',
          username: bot.username,
          can_join_groups: true,
          can_read_all_group_messages: false,
          supports_inline_queries: false,
        });
        return;
      case 'getUpdates': {
        offset = Math.max(offset, Number(body['offset'] ?? 0));
        const pending = (): typeof updates => updates.filter((update) => update.update_id >= offset);
        if (pending().length === 0 && Number(body['timeout'] ?? 0) > 0) {
          // Long poll, shortened: at most a second, so stopping never waits long.
          await new Promise<void>((resolve) => {
            const wake = (): void => {
              waiting.delete(wake);
              resolve();
            };
            waiting.add(wake);
            setTimeout(wake, 1000);
          });
        }
        answer(response, pending());
        return;
      }
      case 'sendMessage': {
        const markup = body['reply_markup'] as { inline_keyboard?: { text: string; callback_data: string }[][] } | undefined;
        const buttons = (markup?.inline_keyboard ?? []).flat().map((button): [string, string] => [button.text, button.callback_data]);
        const parseMode = typeof body['parse_mode'] === 'string' ? body['parse_mode'] : undefined;
        const text = String(body['text']);
        if (parseMode === 'HTML' && refuseHtml(text, response)) return;
        const message: SentMessage = {
          chatId: Number(body['chat_id']),
          messageId: nextMessage++,
          text,
          threadId: body['message_thread_id'] === undefined ? undefined : Number(body['message_thread_id']),
          edits: 0,
          buttons,
          parseMode,
        };
        sent.push(message);
        for (const waiter of sendWaiters.splice(0)) waiter(message);
        answer(response, { message_id: message.messageId, date: now(), chat: { id: message.chatId, type: 'private' }, text: message.text });
        return;
      }
      case 'editMessageText': {
        const message = sent.find((candidate) => candidate.chatId === Number(body['chat_id']) && candidate.messageId === Number(body['message_id']));
        if (message === undefined) {
          response
            .writeHead(400, { 'content-type': 'application/json' })
            .end(JSON.stringify({ ok: false, error_code: 400, description: 'Bad Request: message to edit not found' }));
          return;
        }
        const parseMode = typeof body['parse_mode'] === 'string' ? body['parse_mode'] : undefined;
        if (parseMode === 'HTML' && refuseHtml(String(body['text']), response)) return;
        message.text = String(body['text']);
        message.parseMode = parseMode;
        message.edits += 1;
        answer(response, { message_id: message.messageId, date: now(), chat: { id: message.chatId, type: 'private' }, text: message.text });
        return;
      }
      case 'setWebhook':
        webhooks.push(body);
        answer(response, true);
        return;
      case 'answerCallbackQuery':
        answers.push(typeof body['text'] === 'string' ? body['text'] : '');
        answer(response, true);
        return;
      default:
        // sendChatAction, deleteWebhook, close…
        answer(response, true);
    }
  }

  const server: Server = createServer((request, response) => {
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(request.url ?? '');
    if (match?.[1] !== token) {
      response.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, error_code: 401, description: 'Unauthorized' }));
      return;
    }
    readBody(request)
      .then((body) => handle(match[2] ?? '', body, response))
      .catch((error: unknown) => response.writeHead(500).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;

  return {
    url: `http://127.0.0.1:${port}`,
    token,
    bot,
    push(chat, from, text, options = {}) {
      const update_id = nextUpdate++;
      const message_id = options.messageId ?? nextMessage++;
      updates.push({
        update_id,
        message: {
          message_id,
          date: now(),
          chat,
          from: { ...from, is_bot: false },
          text,
          ...(options.entities === undefined ? {} : { entities: options.entities }),
        },
      });
      for (const wake of waiting) wake();
      return update_id;
    },
    edit(chat, from, messageId, text) {
      const update_id = nextUpdate++;
      updates.push({ update_id, edited_message: { message_id: messageId, date: now(), edit_date: now(), chat, from: { ...from, is_bot: false }, text } });
      for (const wake of waiting) wake();
      return update_id;
    },
    press(from, message, data) {
      const update_id = nextUpdate++;
      updates.push({
        update_id,
        callback_query: {
          id: `cq-${update_id}`,
          from: { ...from, is_bot: false },
          chat_instance: 'ci',
          data,
          message: { message_id: message.messageId, date: now(), chat: { id: message.chatId, type: 'private' }, text: message.text },
        },
      });
      for (const wake of waiting) wake();
      return update_id;
    },
    answers,
    webhooks,
    update: (chat, from, text) => ({
      update_id: nextUpdate++,
      message: { message_id: nextMessage++, date: now(), chat, from: { ...from, is_bot: false }, text },
    }),
    sent,
    calls,
    acknowledged: () => offset - 1,
    refuseMarkup(count) {
      refusingMarkup = count;
    },
    failSends(count) {
      failing = count;
    },
    nextSend: () => new Promise((resolve) => sendWaiters.push(resolve)),
    close: () =>
      new Promise((resolve) => {
        for (const wake of waiting) wake();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
