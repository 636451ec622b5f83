import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newText } from '../../src/channels/email-channel.ts';
import { type FakeImapServer, type FakeSmtpServer, startFakeImapServer, startFakeSmtpServer } from '../support/fake-mail-servers.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../helpers/test-kernel.ts';
import { openTestHost, TEST_KEYS, type TestHost } from '../helpers/test-host.ts';

const model = useScriptedModelServer();
const ACCOUNT = { user: 'agent@loom.test', password: 'mail-secret' };
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let imap: FakeImapServer;
let smtp: FakeSmtpServer;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-email-');
  imap = await startFakeImapServer(ACCOUNT);
  smtp = await startFakeSmtpServer(ACCOUNT);
});
afterEach(async () => {
  await host.close();
  await imap.close();
  await smtp.close();
  await dir.remove();
});

async function start(policy: Record<string, unknown> = {}): Promise<void> {
  const config = {
    channels: [
      {
        name: 'mail',
        kind: 'email',
        agent: 'helper',
        address: 'agent@loom.test',
        imap_url: `imap://127.0.0.1:${imap.port}`,
        smtp_url: `smtp://127.0.0.1:${smtp.port}`,
        user_env: 'MAIL_USER',
        password_env: 'MAIL_PASSWORD',
        poll_seconds: 30,
        policy: { direct: 'allowlist', allow_users: ['ada@example.com'], ...policy },
      },
    ],
  };
  host = await openTestHost(dir.path, config, { ...TEST_KEYS, MAIL_USER: ACCOUNT.user, MAIL_PASSWORD: ACCOUNT.password });
  await host.kernel.spawn(manifest(`name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
  await host.channels.start();
}

function mail(options: { from: string; id: string; subject: string; body: string; inReplyTo?: string; headers?: string }): string {
  return [
    `From: ${options.from}`,
    'To: agent@loom.test',
    `Subject: ${options.subject}`,
    `Message-ID: ${options.id}`,
    ...(options.inReplyTo === undefined ? [] : [`In-Reply-To: ${options.inReplyTo}`, `References: ${options.inReplyTo}`]),
    ...(options.headers === undefined ? [] : [options.headers]),
    'Date: Thu, 1 Jan 2026 09:00:00 +0000',
    'Content-Type: text/plain; charset=utf-8',
    '',
    options.body,
  ].join('\r\n');
}

/** Moves the fake clock past a poll and waits (real time, bounded) until `done`. */
async function pollUntil(done: () => boolean | Promise<boolean>): Promise<void> {
  for (let round = 0; round < 100 && !(await done()); round += 1) {
    await host.clock.advance(30_000);
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
}

describe('an email channel (ImapFlow and Nodemailer against a local IMAP and SMTP server)', () => {
  it('reads new mail, answers in the same thread from the agent\'s address, and marks the mail seen once stored', async () => {
    await start();
    expect((await host.channels.list())[0]).toMatchObject({ kind: 'email', state: 'connected' });
    model.script([{ text: 'Your order ships **tomorrow**.' }, { text: 'Yes, as promised.' }]);
    const uid = imap.deliver(mail({ from: 'Ada <ada@example.com>', id: '<m1@example.com>', subject: 'Where is my order?', body: 'Hello,\nwhere is my order?\n\nAda' }));
    await pollUntil(() => smtp.received.length > 0);
    expect(imap.seen(uid)).toBe(true);
    const [reply] = smtp.received;
    expect(reply?.from?.text).toBe('agent@loom.test');
    expect(reply?.to).toMatchObject({ text: 'ada@example.com' });
    expect(reply?.subject).toBe('Re: Where is my order?');
    expect(reply?.inReplyTo).toBe('<m1@example.com>');
    expect(reply?.text?.trim()).toBe('Your order ships **tomorrow**.');

    // Her reply, quoting ours, continues the thread: the model sees the thread, not the quote twice.
    imap.deliver(mail({ from: 'Ada <ada@example.com>', id: '<m2@example.com>', subject: 'Re: Where is my order?', body: 'Really tomorrow?\n\nOn Thu, Jan 1, 2026 at 9:00 AM agent wrote:\n> Your order ships tomorrow.', inReplyTo: '<m1@example.com>' }));
    await pollUntil(() => smtp.received.length > 1);
    expect(smtp.received[1]?.inReplyTo).toBe('<m2@example.com>');
    expect(smtp.received[1]?.subject).toBe('Re: Where is my order?');
    const sent = JSON.stringify(model.requests[1]?.body['messages']);
    expect(sent).toContain('where is my order?');
    expect(sent).toContain('Really tomorrow?');
    expect(sent).not.toContain('> Your order ships');
  });

  it('answers a message delivered twice once, and never answers its own address or an automatic reply', async () => {
    await start({ direct: 'open' });
    model.script([{ text: 'Once.' }]);
    imap.deliver(mail({ from: 'ada@example.com', id: '<dup@example.com>', subject: 'Hi', body: 'Hi' }));
    imap.deliver(mail({ from: 'ada@example.com', id: '<dup@example.com>', subject: 'Hi', body: 'Hi' }));
    imap.deliver(mail({ from: 'agent@loom.test', id: '<self@loom.test>', subject: 'Loop?', body: 'from myself' }));
    imap.deliver(mail({ from: 'bot@example.com', id: '<ooo@example.com>', subject: 'Out of office', body: 'I am away', headers: 'Auto-Submitted: auto-replied' }));
    await pollUntil(() => smtp.received.length > 0);
    await host.channels.idle();
    expect(smtp.received.map((received) => received.text?.trim())).toEqual(['Once.']);
    expect(model.requests).toHaveLength(1);
  });

  it('refuses a sender not allowed with a reply, and audits it', async () => {
    await start();
    imap.deliver(mail({ from: 'eve@example.com', id: '<e1@example.com>', subject: 'Let me in', body: 'please' }));
    await pollUntil(() => smtp.received.length > 0);
    expect(smtp.received[0]?.text?.trim()).toBe('Sorry, I can\'t talk with you here: not on the channel\'s allow_users.');
    expect(await host.store.events.list({ type: 'channel-refused' })).toMatchObject([{ data: { channel: 'mail', userId: 'eve@example.com' } }]);
  });
});

describe('newText()', () => {
  it('keeps an email\'s own words and cuts the quoted message it replies to', () => {
    expect(newText('Sounds good.\r\n\r\nOn Mon, 5 Jan 2026, Ada wrote:\r\n> earlier')).toBe('Sounds good.');
    expect(newText('Yes\n> quoted\nmore')).toBe('Yes');
    expect(newText('No quote here.')).toBe('No quote here.');
  });
});
