/**
 * A reply on Telegram is delivered, or recorded as failed with its reason: a reply the formatter
 * cannot format (a few thousand nested quotes or list markers) goes as plain text, and one the
 * Bot API refuses is in the store, the daemon's log and the audit log.
 */
import { createServer, type Server } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeTelegramServer, startFakeTelegramServer } from '../support/fake-telegram-server.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { waitFor } from '../support/wait-for.ts';
import { createJsonLogRecorder, openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let telegram: FakeTelegramServer;
let host: TestHost;
let log: ReturnType<typeof createJsonLogRecorder>;

const ADA = { id: 42, first_name: 'Ada' };
const ADA_CHAT = { id: 42, type: 'private' as const };

/**
 * A Bot API in front of the fake one, on loopback: it passes every call on, except that while
 * `refusing` is set it refuses sends and edits as Telegram does a bot the person blocked, and
 * while `away` is above 0 it answers that many sends 502 Bad Gateway (Telegram down for a while).
 * `sendAttempts` counts the sends that reached it.
 */
interface RefusingBotApi {
  url: string;
  refusing: boolean;
  away: number;
  sendAttempts: number;
  close(): Promise<void>;
}

async function startRefusingBotApi(upstream: string): Promise<RefusingBotApi> {
  const api = { url: '', refusing: false, away: 0, sendAttempts: 0, close: (): Promise<void> => Promise.resolve() };
  const server: Server = createServer((request, response) => {
    void (async () => {
      let body = '';
      for await (const chunk of request) body += (chunk as Buffer).toString('utf8');
      if (/\/sendMessage$/.test(request.url ?? '')) api.sendAttempts += 1;
      if (api.away > 0 && /\/sendMessage$/.test(request.url ?? '')) {
        api.away -= 1;
        response.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, error_code: 502, description: 'Bad Gateway' }));
        return;
      }
      if (api.refusing && /\/(sendMessage|editMessageText)$/.test(request.url ?? '')) {
        response
          .writeHead(403, { 'content-type': 'application/json' })
          .end(JSON.stringify({ ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' }));
        return;
      }
      const answer = await fetch(`${upstream}${request.url ?? ''}`, {
        method: request.method ?? 'POST',
        headers: { 'content-type': request.headers['content-type'] ?? 'application/json' },
        ...(body === '' ? {} : { body }),
      });
      response.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
    })().catch((error: unknown) => response.writeHead(502).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  api.url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  api.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return api;
}

let botApi: RefusingBotApi;

beforeEach(async () => {
  dir = await makeTempDir('loom-telegram-delivery-');
  telegram = await startFakeTelegramServer();
  botApi = await startRefusingBotApi(telegram.url);
  log = createJsonLogRecorder();
});
afterEach(async () => {
  await host.close();
  await botApi.close();
  await telegram.close();
  await dir.remove();
});

async function start(): Promise<void> {
  const config = {
    channels: [
      {
        name: 'tg',
        kind: 'telegram',
        agent: 'helper',
        token_env: 'TELEGRAM_BOT_TOKEN',
        api_base_url: botApi.url,
        policy: { direct: 'allowlist', allow_users: ['42'] },
      },
    ],
  };
  host = await openTestHost(dir.path, config, { ...TEST_KEYS, TELEGRAM_BOT_TOKEN: telegram.token }, { logger: log.logger });
  await host.kernel.spawn(manifest(`name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
  await host.channels.start();
}

/**
 * A check for waitFor that moves the fake clock a second (past a retry's backoff) each time `done`
 * does not hold yet and something sleeps on the clock: a reply being streamed, which reads the
 * clock without sleeping, is not hurried into an edit each time.
 */
function pastRetries(done: () => boolean | Promise<boolean>): () => Promise<boolean> {
  return async () => {
    if (await done()) return true;
    if (host.clock.pending() > 0) await host.clock.advance(1000);
    return false;
  };
}

/** The newest message's record once it is settled (answered, failed…), the clock moved past any retries meanwhile. */
async function settled() {
  await waitFor(
    'the message to be settled',
    pastRetries(async () => ['answered', 'failed', 'refused', 'ignored'].includes((await host.store.channels.recent('tg', 1))[0]?.status ?? 'none')),
  );
  return (await host.store.channels.recent('tg', 1))[0];
}

describe('a Telegram reply the formatter cannot format', () => {
  const replies: Record<string, string> = {
    'a few thousand nested quotes': `${'>'.repeat(4000)} the bottom of it`,
    'a few thousand nested "> " quotes, over two messages': `${'> '.repeat(3000)}the bottom of it`,
    'a few thousand nested list markers': `${'- '.repeat(2000)}the bottom of it`,
  };
  for (const [name, reply] of Object.entries(replies)) {
    it(`sends ${name} as plain text, every word of it`, async () => {
      await start();
      model.script([{ text: reply }]);
      telegram.push(ADA_CHAT, ADA, 'Go deep');
      expect(await settled()).toMatchObject({ status: 'answered' });
      // Split at Telegram's limit, at a space: the parts put back together are the reply.
      expect(telegram.sent.map((message) => message.text).join(' ')).toBe(reply);
      expect(telegram.sent.map((message) => message.parseMode)).toEqual(telegram.sent.map(() => undefined));
      expect(
        log.records.some(
          (record) =>
            record['msg'] === 'channel "tg": a reply could not be formatted; sent as plain text' &&
            String(record['problem']).includes('nest deeper than 16 levels'),
        ),
      ).toBe(true);
    });
  }

  it('still formats the next reply', async () => {
    await start();
    model.script([{ text: `${'>'.repeat(4000)} deep` }, { text: '**Back** to normal' }]);
    telegram.push(ADA_CHAT, ADA, 'Go deep');
    await settled();
    telegram.push(ADA_CHAT, ADA, 'And now?');
    await waitFor('the second reply', async () => (await host.store.channels.recent('tg', 2)).filter((message) => message.status === 'answered').length === 2);
    expect(telegram.sent.at(-1)).toMatchObject({ text: '<b>Back</b> to normal', parseMode: 'HTML' });
  });
});

describe('a long Telegram reply streamed word by word', () => {
  it('is sent with its first words and edited at most once a second, not once a word while the first send is under way', async () => {
    await start();
    const reply = Array.from({ length: 400 }, (_, index) => `word${index}`).join(' ');
    model.script([{ text: reply }]);
    telegram.push(ADA_CHAT, ADA, 'Talk a lot');
    expect(await settled()).toMatchObject({ status: 'answered' });
    // The clock did not move: the first words, then the whole reply at the end.
    expect(telegram.sent).toMatchObject([{ text: reply, edits: 1 }]);
  });
});

describe('a Telegram reply the Bot API refuses', () => {
  it("is recorded as failed with its reason: in the store, the daemon's log and the audit log", async () => {
    await start();
    model.script([{ text: 'You will never read this.' }]);
    botApi.refusing = true;
    telegram.push(ADA_CHAT, ADA, 'Hello?');
    const message = await settled();
    expect(message).toMatchObject({
      status: 'failed',
      note: "the reply could not be delivered: Call to 'sendMessage' failed! (403: Forbidden: bot was blocked by the user)",
    });
    expect(telegram.sent).toEqual([]);
    // A blocked bot stays blocked: the refusal is taken at its word, not tried again for a minute
    // (two sends: the streamed reply's first words, then the whole reply, each once).
    expect(botApi.sendAttempts).toBe(2);
    expect(log.records.filter((record) => record['msg'] === 'a reply could not be delivered; trying again')).toEqual([]);

    const logged = log.records.find((record) => record['level'] === 50 && record['kind'] === 'reply');
    expect(logged).toMatchObject({
      channel: 'tg',
      platformId: message?.platformId,
      conversationId: '42',
      msg: `could not deliver the reply to message "${message?.platformId ?? ''}" on channel "tg": Call to 'sendMessage' failed! (403: Forbidden: bot was blocked by the user)`,
    });

    const audited = await waitFor('the channel-reply-fail event', async () => {
      const events = await host.store.events.list({ type: 'channel-reply-fail' });
      return events.length > 0 && events;
    });
    expect(audited).toMatchObject([
      {
        type: 'channel-reply-fail',
        data: {
          channel: 'tg',
          name: 'helper',
          kind: 'reply',
          platformId: message?.platformId,
          conversationId: '42',
          thread: null,
          userId: '42',
          reason: "Call to 'sendMessage' failed! (403: Forbidden: bot was blocked by the user)",
        },
      },
    ]);
    expect(audited[0]?.agentId).toBe(host.kernel.get('helper').id);
  });

  it('is tried again while Telegram is away (502), and delivered once it is back', async () => {
    await start();
    model.script([{ text: 'Here at last.' }]);
    botApi.away = 3;
    telegram.push(ADA_CHAT, ADA, 'Hello?');
    expect(await settled()).toMatchObject({ status: 'answered' });
    expect(telegram.sent.map((sent) => sent.text)).toEqual(['Here at last.']);
    // The streamed first words meet the first 502; the whole reply is tried again past two more.
    expect(botApi.sendAttempts).toBe(4);
    expect(log.records.filter((record) => record['msg'] === 'a reply could not be delivered; trying again')).toHaveLength(2);
  });

  it('records a refusal the person could not be sent, and still settles their message as refused', async () => {
    await start();
    botApi.refusing = true;
    telegram.push({ id: 78, type: 'private' }, { id: 78, first_name: 'Mallory' }, 'let me in');
    expect(await settled()).toMatchObject({ status: 'refused', note: "not on the channel's allow_users" });
    const audited = await waitFor('the channel-reply-fail event', async () => {
      const events = await host.store.events.list({ type: 'channel-reply-fail' });
      return events.length > 0 && events;
    });
    expect(audited).toMatchObject([
      { data: { kind: 'refusal', userId: '78', reason: "Call to 'sendMessage' failed! (403: Forbidden: bot was blocked by the user)" } },
    ]);
    expect(model.requests).toHaveLength(0);
  });
});

describe('a Telegram reply delivered while the store cannot record it', () => {
  it('reaches the person once, with no apology after it, and the failure is logged', async () => {
    await start();
    model.script([{ text: 'Here you are.' }]);
    // The database refuses the one write that records the message answered (a disk full, a lost connection).
    const { channels } = host.store;
    const settle = channels.settle.bind(channels);
    channels.settle = (channel, platformId, status, note, at) =>
      status === 'answered' ? Promise.reject(new Error('disk I/O error')) : settle(channel, platformId, status, note, at);
    telegram.push(ADA_CHAT, ADA, 'Hello?');
    const logged = await waitFor('the failed record to be logged', () =>
      log.records.find((record) => String(record['msg']).includes('but could not record it as answered')),
    );
    expect(logged).toMatchObject({ level: 50, channel: 'tg' });
    // Its answer done: nothing more goes to the chat after the reply.
    await host.channels.idle();
    expect(telegram.sent.map((sent) => sent.text)).toEqual(['Here you are.']);
    // Unanswered in the store: a restart answers it again rather than never.
    expect((await host.store.channels.recent('tg', 1))[0]).toMatchObject({ status: 'received' });
  });
});
