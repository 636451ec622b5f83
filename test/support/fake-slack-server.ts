import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type WebSocket, WebSocketServer } from 'ws';

/** A message the bot posted, as the fake server keeps it (updates replace its text and blocks). */
export interface PostedMessage {
  channel: string;
  ts: string;
  threadTs: string | undefined;
  text: string;
  blocks: { type: string; text?: unknown; elements?: { value?: string; text?: { text: string } }[] }[];
  updates: number;
}

/**
 * Slack on loopback, as its official SDKs talk to it: the Web API (`auth.test`,
 * `apps.connections.open`, `chat.postMessage`, `chat.update`, `chat.postEphemeral`) over HTTP, and
 * Socket Mode over a WebSocket (`hello`, `events_api` and `interactive` envelopes, acks).
 */
export interface FakeSlackServer {
  /** The Web API's base URL, ending in `/api/`. */
  apiUrl: string;
  readonly botUserId: string;
  /** Delivers a message event over Socket Mode; returns its envelope id. */
  message(event: { channel: string; user: string; text: string; ts?: string; thread_ts?: string; channel_type?: string; bot_id?: string }): string;
  /** Delivers `message_changed` for a message a person sent. */
  edit(channel: string, ts: string, user: string, text: string): string;
  /** Delivers `message_deleted` for a message a person sent. */
  remove(channel: string, ts: string): string;
  /** Delivers a button press (block_actions) on a posted message. */
  press(user: string, message: PostedMessage, value: string): string;
  /** Envelope ids the client acknowledged. */
  readonly acks: string[];
  readonly posted: PostedMessage[];
  readonly ephemeral: { channel: string; user: string; text: string }[];
  /** Resolves once a Socket Mode client is connected. */
  connected(): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeSlackServer(): Promise<FakeSlackServer> {
  const botUserId = 'UBOT';
  const posted: PostedMessage[] = [];
  const ephemeral: { channel: string; user: string; text: string }[] = [];
  const acks: string[] = [];
  let sockets: WebSocket[] = [];
  let nextTs = 1_700_000_000;
  let nextEnvelope = 1;
  const onConnect: (() => void)[] = [];

  /** A form field as text (Slack's SDK sends strings; anything else is JSON). */
  const field = (form: Record<string, unknown>, key: string): string => {
    const value = form[key];
    return typeof value === 'string' ? value : JSON.stringify(value);
  };

  async function readForm(request: IncomingMessage): Promise<Record<string, unknown>> {
    let text = '';
    for await (const chunk of request) text += (chunk as Buffer).toString('utf8');
    if ((request.headers['content-type'] ?? '').includes('application/json')) return JSON.parse(text === '' ? '{}' : text) as Record<string, unknown>;
    const form: Record<string, unknown> = {};
    for (const [key, value] of new URLSearchParams(text)) {
      form[key] = value.startsWith('[') || value.startsWith('{') ? JSON.parse(value) : value;
    }
    return form;
  }

  function reply(response: ServerResponse, body: Record<string, unknown>): void {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, ...body }));
  }

  const server: Server = createServer((request, response) => {
    const method = /^\/api\/([\w.]+)$/.exec(request.url ?? '')?.[1];
    readForm(request)
      .then((form) => {
        switch (method) {
          case 'auth.test':
            reply(response, { user_id: botUserId, bot_id: 'BBOT', team_id: 'T1', user: 'loom' });
            return;
          case 'apps.connections.open': {
            const address = server.address();
            reply(response, { url: `ws://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/socket` });
            return;
          }
          case 'chat.postMessage': {
            const message: PostedMessage = {
              channel: field(form, 'channel'),
              ts: `${nextTs++}.000100`,
              threadTs: form['thread_ts'] === undefined ? undefined : field(form, 'thread_ts'),
              text: field(form, 'text'),
              blocks: (form['blocks'] as PostedMessage['blocks'] | undefined) ?? [],
              updates: 0,
            };
            posted.push(message);
            reply(response, { channel: message.channel, ts: message.ts, message: { text: message.text } });
            return;
          }
          case 'chat.update': {
            const message = posted.find((candidate) => candidate.channel === field(form, 'channel') && candidate.ts === field(form, 'ts'));
            if (message === undefined) {
              response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, error: 'message_not_found' }));
              return;
            }
            message.text = field(form, 'text');
            message.blocks = (form['blocks'] as PostedMessage['blocks'] | undefined) ?? [];
            message.updates += 1;
            reply(response, { channel: message.channel, ts: message.ts });
            return;
          }
          case 'chat.postEphemeral':
            ephemeral.push({ channel: field(form, 'channel'), user: field(form, 'user'), text: field(form, 'text') });
            reply(response, { message_ts: `${nextTs++}.000200` });
            return;
          default:
            response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, error: 'unknown_method' }));
        }
      })
      .catch((error: unknown) => response.writeHead(500).end(String(error)));
  });
  const sockets$ = new WebSocketServer({ server, path: '/socket' });
  sockets$.on('connection', (socket) => {
    sockets.push(socket);
    socket.on('message', (data: Buffer) => {
      const parsed = JSON.parse(data.toString('utf8')) as { envelope_id?: string };
      if (parsed.envelope_id !== undefined) acks.push(parsed.envelope_id);
    });
    socket.on('close', () => {
      sockets = sockets.filter((open) => open !== socket);
    });
    socket.send(JSON.stringify({ type: 'hello', num_connections: 1, debug_info: { host: 'fake' }, connection_info: { app_id: 'A1' } }));
    for (const resolve of onConnect.splice(0)) resolve();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;

  function deliver(type: string, payload: Record<string, unknown>): string {
    const envelope_id = `env-${nextEnvelope++}`;
    for (const socket of sockets)
      socket.send(JSON.stringify({ envelope_id, type, payload, accepts_response_payload: false, retry_attempt: 0, retry_reason: '' }));
    return envelope_id;
  }

  return {
    apiUrl: `http://127.0.0.1:${port}/api/`,
    botUserId,
    message(event) {
      const ts = event.ts ?? `${nextTs++}.000300`;
      return deliver('events_api', { type: 'event_callback', event_id: `Ev${nextEnvelope}`, event: { type: 'message', channel_type: 'im', ...event, ts } });
    },
    edit(channel, ts, user, text) {
      return deliver('events_api', {
        type: 'event_callback',
        event: {
          type: 'message',
          subtype: 'message_changed',
          channel,
          channel_type: 'im',
          ts: `${nextTs++}.000400`,
          message: { type: 'message', user, text, ts },
        },
      });
    },
    remove(channel, ts) {
      return deliver('events_api', {
        type: 'event_callback',
        event: { type: 'message', subtype: 'message_deleted', channel, channel_type: 'im', ts: `${nextTs++}.000500`, deleted_ts: ts },
      });
    },
    press(user, message, value) {
      return deliver('interactive', {
        type: 'block_actions',
        user: { id: user, username: user },
        channel: { id: message.channel },
        container: { channel_id: message.channel, message_ts: message.ts },
        message: { ts: message.ts, text: message.text },
        actions: [{ value, action_id: value }],
      });
    },
    acks,
    posted,
    ephemeral,
    connected: () => (sockets.length > 0 ? Promise.resolve() : new Promise((resolve) => onConnect.push(resolve))),
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.terminate();
        sockets$.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
