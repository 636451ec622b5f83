import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeTelegramServer, startFakeTelegramServer } from '../support/fake-telegram-server.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { waitFor } from '../support/wait-for.ts';
import { openTestHost, serveHostApi, TEST_KEYS, type TestHost } from '../support/test-host.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let telegram: FakeTelegramServer;
let host: TestHost;

const ADA = { id: 42, first_name: 'Ada' };
const ADA_CHAT = { id: 42, type: 'private' as const };
const TEAM = { id: -1001, type: 'supergroup' as const, title: 'Team' };

beforeEach(async () => {
  dir = await makeTempDir('loom-telegram-');
  telegram = await startFakeTelegramServer();
});
afterEach(async () => {
  await host.close();
  await telegram.close();
  await dir.remove();
});

async function start(policy: Record<string, unknown> = {}, agentToml = ''): Promise<void> {
  const config = {
    channels: [
      {
        name: 'tg',
        kind: 'telegram',
        agent: 'helper',
        token_env: 'TELEGRAM_BOT_TOKEN',
        api_base_url: telegram.url,
        policy: { direct: 'allowlist', allow_users: ['42', '77'], ...policy },
      },
    ],
  };
  host = await openTestHost(dir.path, config, { ...TEST_KEYS, TELEGRAM_BOT_TOKEN: telegram.token });
  await host.kernel.spawn(manifest(`name = "helper"\n${agentToml}\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
  await host.channels.start();
}

/** A check for waitFor that moves the fake clock a second (past a retry's backoff) each time `done` does not hold yet. */
function pastRetries(done: () => boolean | Promise<boolean>): () => Promise<boolean> {
  return async () => {
    if (await done()) return true;
    await host.clock.advance(1000);
    return false;
  };
}

describe('a Telegram channel (grammY against a local Bot API server)', () => {
  it('answers a direct message from an allowed person, typing first, and acknowledges the update only once stored', async () => {
    await start();
    expect((await host.channels.list())[0]).toMatchObject({ name: 'tg', kind: 'telegram', state: 'connected', error: null });
    model.script([{ text: 'Hello Ada, nice to meet you.' }]);
    const update = telegram.push(ADA_CHAT, ADA, 'Hi!');
    await waitFor('the message to be answered', async () => (await host.store.channels.recent('tg', 1))[0]?.status === 'answered');
    expect(telegram.sent.map((message) => [message.chatId, message.text])).toEqual([[42, 'Hello Ada, nice to meet you.']]);
    expect(telegram.calls).toContain('sendChatAction');
    await waitFor('the update to be acknowledged', () => telegram.acknowledged() >= update);
    expect(telegram.acknowledged()).toBeGreaterThanOrEqual(update);
    expect(await host.store.channels.recent('tg', 1)).toMatchObject([
      { platformId: expect.stringMatching(/^42:\d+$/) as unknown, userName: 'Ada', conversationKind: 'direct', status: 'answered' },
    ]);
  });

  it('ignores a group message that does not mention the bot and answers one that does', async () => {
    await start({ groups: 'open', allow_users: [], direct: 'closed' });
    telegram.push(TEAM, ADA, 'talking among ourselves');
    model.script([{ text: 'At your service.' }]);
    const mention = `@${telegram.bot.username} can you help?`;
    telegram.push(TEAM, ADA, mention, { entities: [{ type: 'mention', offset: 0, length: telegram.bot.username.length + 1 }] });
    await waitFor(
      'both group messages to settle',
      async () =>
        (await host.store.channels.recent('tg', 2)).every((message) => message.status !== 'received') &&
        (await host.store.channels.recent('tg', 2)).length === 2,
    );
    expect(telegram.sent.map((message) => [message.chatId, message.text])).toEqual([[-1001, 'At your service.']]);
    expect((await host.store.channels.recent('tg', 2)).map((message) => message.status)).toEqual(['answered', 'ignored']);
  });

  it('answers a message edited while it waited as it was edited', async () => {
    await start();
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    model.script([{ text: 'One.', gate }, { text: 'Two.' }]);
    telegram.push(ADA_CHAT, ADA, 'first', { messageId: 11 });
    telegram.push(ADA_CHAT, ADA, 'secnod', { messageId: 12 });
    await waitFor('two stored messages', async () => (await host.store.channels.recent('tg', 2)).length === 2);
    const edit = telegram.edit(ADA_CHAT, ADA, 12, 'second');
    await waitFor('the edit to be acknowledged', () => telegram.acknowledged() >= edit);
    release();
    await waitFor('both messages to be answered', async () => (await host.store.channels.recent('tg', 2)).every((message) => message.status === 'answered'));
    expect(JSON.stringify(model.requests[1]?.body['messages'])).toContain('"second"');
    expect(JSON.stringify(model.requests[1]?.body['messages'])).not.toContain('secnod');
  });

  it('answers a message delivered twice once', async () => {
    await start();
    model.script([{ text: 'Only once.' }]);
    telegram.push(ADA_CHAT, ADA, 'Ping', { messageId: 7 });
    telegram.push(ADA_CHAT, ADA, 'Ping', { messageId: 7 });
    await waitFor('two updates acknowledged', () => telegram.acknowledged() >= 2);
    await host.channels.idle();
    expect(telegram.sent.map((message) => message.text)).toEqual(['Only once.']);
    expect(model.requests).toHaveLength(1);
  });

  it("asks for a tool call's approval with buttons, takes the decision only from an approver, and then answers", async () => {
    await start({ approvers: ['42'] }, '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]');
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'note.txt', content: 'from the chat' } }] }, { text: 'Written.' }]);
    telegram.push(ADA_CHAT, ADA, 'Write a note');
    await waitFor('the approval buttons', () => telegram.sent.some((message) => message.buttons.length > 0));
    const question = telegram.sent.find((message) => message.buttons.length > 0);
    expect(question?.text).toBe('helper wants to run file_write {"path":"note.txt","content":"from the chat"}');
    expect(question?.buttons.map(([label]) => label)).toEqual(['Approve', 'Deny']);
    const approve = question?.buttons[0]?.[1] ?? '';
    telegram.press({ id: 77, first_name: 'Mallory' }, question as NonNullable<typeof question>, approve);
    await waitFor("the button's answer", () => telegram.answers.length > 0);
    expect(telegram.answers[0]).toBe('Only the approvers of this channel may decide that.');
    telegram.press(ADA, question as NonNullable<typeof question>, approve);
    await waitFor('the message to be answered', async () => (await host.store.channels.recent('tg', 1))[0]?.status === 'answered');
    expect(telegram.answers[1]).toBe('Approved: file_write runs.');
    expect(telegram.sent.at(-1)?.text).toBe('Written.');
    expect(await readFile(join(dir.path, 'home', 'workspaces', 'helper', 'note.txt'), 'utf8')).toBe('from the chat');
    expect(await host.store.events.list({ type: 'approval-decide' })).toMatchObject([{ data: { status: 'approved', by: 'tg:42' } }]);
  });

  it('refuses a person not allowed, in their chat, and audits it', async () => {
    await start();
    telegram.push({ id: 78, type: 'private' }, { id: 78, first_name: 'Mallory' }, 'let me in');
    await waitFor('the refusal to be sent', () => telegram.sent.length > 0);
    expect(telegram.sent[0]).toMatchObject({ chatId: 78, text: "Sorry, I can't talk with you here: not on the channel's allow_users." });
    await waitFor('the channel-refuse event', async () => (await host.store.events.list({ type: 'channel-refuse' })).length > 0);
    expect(await host.store.events.list({ type: 'channel-refuse' })).toMatchObject([
      { data: { channel: 'tg', userId: '78', userName: 'Mallory', name: 'helper' } },
    ]);
    expect(model.requests).toHaveLength(0);
  });

  it('delivers the reply once the platform comes back after failing mid-reply', async () => {
    await start();
    model.script([{ text: 'Worth the wait.' }]);
    telegram.failSends(3);
    telegram.push(ADA_CHAT, ADA, 'Are you there?');
    await waitFor(
      'the reply, once sends work again',
      pastRetries(() => telegram.sent.length > 0),
    );
    expect(telegram.sent.map((message) => message.text)).toEqual(['Worth the wait.']);
    expect(telegram.calls.filter((call) => call === 'sendMessage').length).toBeGreaterThanOrEqual(4);
    await waitFor('the message to be answered', async () => (await host.store.channels.recent('tg', 1))[0]?.status === 'answered');
    expect((await host.store.channels.recent('tg', 1))[0]?.status).toBe('answered');
  });

  it("sends the agent's Markdown as Telegram's HTML", async () => {
    await start();
    model.script([{ text: '**Done**: see `notes.txt` <here>' }]);
    telegram.push(ADA_CHAT, ADA, 'Status?');
    await waitFor('the message to be answered', async () => (await host.store.channels.recent('tg', 1))[0]?.status === 'answered');
    expect(telegram.sent.map((message) => [message.text, message.parseMode])).toEqual([['<b>Done</b>: see <code>notes.txt</code> &lt;here&gt;', 'HTML']]);
  });

  it('sends the same words as plain text when Telegram refuses the markup', async () => {
    await start();
    model.script([{ text: '**Done**: see `notes.txt`' }]);
    telegram.refuseMarkup(100);
    telegram.push(ADA_CHAT, ADA, 'Status?');
    await waitFor('the message to be answered', async () => (await host.store.channels.recent('tg', 1))[0]?.status === 'answered');
    expect(telegram.sent.map((message) => [message.text, message.parseMode])).toEqual([['**Done**: see `notes.txt`', undefined]]);
  });

  it('splits a reply longer than Telegram allows into several messages', async () => {
    await start();
    const long = `${'a'.repeat(3000)}\n\n${'b'.repeat(3000)}`;
    model.script([{ text: long }]);
    telegram.push(ADA_CHAT, ADA, 'Write a lot');
    await waitFor('the message to be answered', async () => (await host.store.channels.recent('tg', 1))[0]?.status === 'answered');
    expect(telegram.sent.map((message) => message.text)).toEqual(['a'.repeat(3000), 'b'.repeat(3000)]);
  });
});

describe('a Telegram channel on a webhook', () => {
  it('registers its address and secret with Telegram, answers an update POSTed with the secret, and refuses one without', async () => {
    const config = {
      channels: [
        {
          name: 'tg',
          kind: 'telegram',
          agent: 'helper',
          token_env: 'TELEGRAM_BOT_TOKEN',
          api_base_url: telegram.url,
          mode: 'webhook',
          webhook_url: 'https://loom.example.com/hooks/tg',
          secret_token_env: 'TELEGRAM_SECRET',
          policy: { direct: 'open' },
        },
      ],
    };
    host = await openTestHost(dir.path, config, { ...TEST_KEYS, TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_SECRET: 'hook-secret' });
    await host.kernel.spawn(manifest(`name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
    await host.channels.start();
    expect(telegram.webhooks).toMatchObject([{ url: 'https://loom.example.com/hooks/tg', secret_token: 'hook-secret' }]);
    expect(telegram.calls).not.toContain('getUpdates');
    const api = await serveHostApi(host, config);
    try {
      const update = JSON.stringify(telegram.update(ADA_CHAT, ADA, 'via the webhook'));
      const forged = await fetch(`${api.url}/hooks/tg`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 'guess' },
        body: update,
      });
      expect(forged.status).toBe(401);
      model.script([{ text: 'Got it.' }]);
      const genuine = await fetch(`${api.url}/hooks/tg`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': 'hook-secret' },
        body: update,
      });
      expect(genuine.status).toBe(200);
      // Stored before Telegram got its 200.
      expect(await host.store.channels.recent('tg', 1)).toMatchObject([{ text: 'via the webhook' }]);
      await host.channels.idle();
      expect(telegram.sent.map((message) => message.text)).toEqual(['Got it.']);
    } finally {
      await api.close();
    }
  });
});
