import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signSlackRequest } from '../../src/channels/slack-channel.ts';
import { type RunningHttpServer } from '../../src/http/index.ts';
import { type FakeSlackServer, startFakeSlackServer } from '../support/fake-slack-server.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { waitFor } from '../support/wait-for.ts';
import { openTestHost, serveHostApi, TEST_KEYS, type TestHost } from '../support/test-host.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let slack: FakeSlackServer;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-slack-');
  slack = await startFakeSlackServer();
});
afterEach(async () => {
  await host.close();
  await slack.close();
  await dir.remove();
});

async function start(policy: Record<string, unknown> = {}, agentToml = ''): Promise<void> {
  const config = {
    channels: [
      {
        name: 'team',
        kind: 'slack',
        agent: 'helper',
        mode: 'socket',
        app_token_env: 'SLACK_APP_TOKEN',
        bot_token_env: 'SLACK_BOT_TOKEN',
        api_base_url: slack.apiUrl,
        policy: { direct: 'allowlist', allow_users: ['U42'], ...policy },
      },
    ],
  };
  host = await openTestHost(dir.path, config, { ...TEST_KEYS, SLACK_APP_TOKEN: 'xapp-test', SLACK_BOT_TOKEN: 'xoxb-test' });
  await host.kernel.spawn(manifest(`name = "helper"\n${agentToml}\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
  await host.channels.start();
  await slack.connected();
}

const settled = async (count: number, channel = 'team'): Promise<boolean> => {
  const recent = await host.store.channels.recent(channel, count);
  return recent.length === count && recent.every((message) => message.status !== 'received');
};

describe('a Slack channel (Socket Mode and the Web API against a local Slack)', () => {
  it('answers a direct message as Markdown and acknowledges the envelope once the message is stored', async () => {
    await start();
    expect((await host.channels.list())[0]).toMatchObject({ kind: 'slack', state: 'connected' });
    model.script([{ text: 'Hello **Ada**.' }]);
    const envelope = slack.message({ channel: 'D1', user: 'U42', text: 'Hi!' });
    await waitFor('the message to settle', () => settled(1));
    expect(slack.acks).toContain(envelope);
    expect(slack.posted).toMatchObject([
      { channel: 'D1', threadTs: undefined, text: 'Hello **Ada**.', blocks: [{ type: 'markdown', text: 'Hello **Ada**.' }] },
    ]);
  });

  it('answers a mention in a channel in a thread of its own, ignores the rest and its own messages', async () => {
    await start({ groups: 'open', allow_users: [], direct: 'closed' });
    slack.message({ channel: 'C1', user: 'U7', text: 'just chatting', channel_type: 'channel' });
    slack.message({ channel: 'C1', user: slack.botUserId, text: 'my own words', channel_type: 'channel', bot_id: 'BBOT' });
    model.script([{ text: 'On it.' }]);
    slack.message({ channel: 'C1', user: 'U7', text: `<@${slack.botUserId}> summarise the thread`, channel_type: 'channel', ts: '1700.0001' });
    await waitFor('both messages to settle', () => settled(2));
    expect(slack.posted).toMatchObject([{ channel: 'C1', threadTs: '1700.0001', text: 'On it.' }]);
    expect(JSON.stringify(model.requests[0]?.body['messages'])).toContain('summarise the thread');
    expect(JSON.stringify(model.requests[0]?.body['messages'])).not.toContain(`<@${slack.botUserId}>`);
    expect(slack.acks).toHaveLength(3);
  });

  it('answers a message Slack delivers twice once', async () => {
    await start();
    model.script([{ text: 'Once.' }]);
    slack.message({ channel: 'D1', user: 'U42', text: 'Ping', ts: '1700.0002' });
    slack.message({ channel: 'D1', user: 'U42', text: 'Ping', ts: '1700.0002' });
    await waitFor('two acknowledgements', () => slack.acks.length === 2);
    await host.channels.idle();
    expect(slack.posted.map((message) => message.text)).toEqual(['Once.']);
  });

  it('answers a waiting message as it was edited, does not answer one deleted before its turn, and keeps an answer given', async () => {
    await start();
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    model.script([{ text: 'First answer.', gate }, { text: 'Second answer.' }]);
    slack.message({ channel: 'D1', user: 'U42', text: 'first', ts: '1700.0010' });
    slack.message({ channel: 'D1', user: 'U42', text: 'second, with a typo', ts: '1700.0011' });
    slack.message({ channel: 'D1', user: 'U42', text: 'third, never mind', ts: '1700.0012' });
    await waitFor('three acknowledgements', () => slack.acks.length === 3);
    slack.edit('D1', '1700.0011', 'U42', 'second, corrected');
    slack.remove('D1', '1700.0012');
    await waitFor('five acknowledgements', () => slack.acks.length === 5);
    release();
    await waitFor('the three messages to settle', () => settled(3));
    await host.channels.idle();
    expect(slack.posted.map((message) => message.text)).toEqual(['First answer.', 'Second answer.']);
    expect(JSON.stringify(model.requests[1]?.body['messages'])).toContain('second, corrected');
    expect(JSON.stringify(model.requests[1]?.body['messages'])).not.toContain('typo');
    expect(await host.store.channels.get('team', 'D1:1700.0012')).toMatchObject({ status: 'ignored', note: 'deleted on the platform before it was answered' });
    // An edit after the answer changes nothing.
    slack.edit('D1', '1700.0010', 'U42', 'first, edited late');
    await waitFor('six acknowledgements', () => slack.acks.length === 6);
    expect(await host.store.channels.get('team', 'D1:1700.0010')).toMatchObject({ status: 'answered', text: 'first' });
  });

  it('asks for an approval with Block Kit buttons and takes the press of an approver', async () => {
    await start({ approvers: ['U42'] }, '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]');
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'n.txt', content: 'x' } }] }, { text: 'Saved.' }]);
    slack.message({ channel: 'D1', user: 'U42', text: 'Save it' });
    await waitFor('the approval buttons', () => slack.posted.some((message) => message.blocks.some((block) => block.type === 'actions')));
    const question = slack.posted.find((message) => message.blocks.some((block) => block.type === 'actions'));
    const values = question?.blocks.find((block) => block.type === 'actions')?.elements?.map((element) => element.value) ?? [];
    expect(values).toHaveLength(2);
    slack.press('U9', question as NonNullable<typeof question>, values[0] ?? '');
    await waitFor('the ephemeral answer', () => slack.ephemeral.length > 0);
    expect(slack.ephemeral[0]).toEqual({ channel: 'D1', user: 'U9', text: 'Only the approvers of this channel may decide that.' });
    slack.press('U42', question as NonNullable<typeof question>, values[0] ?? '');
    await waitFor('the message to settle', () => settled(1));
    expect(question?.text).toContain('Approved: file_write runs.');
    expect(slack.posted.at(-1)?.text).toBe('Saved.');
  });
});

describe('a Slack channel on the Events API (signed POSTs to /hooks/<name>)', () => {
  const SECRET = 'slack-signing-secret';
  let api: RunningHttpServer;

  async function startEvents(): Promise<void> {
    const config = {
      channels: [
        {
          name: 'events',
          kind: 'slack',
          mode: 'events',
          agent: 'helper',
          signing_secret_env: 'SLACK_SIGNING_SECRET',
          bot_token_env: 'SLACK_BOT_TOKEN',
          api_base_url: slack.apiUrl,
          policy: { direct: 'open' },
        },
      ],
    };
    host = await openTestHost(dir.path, config, { ...TEST_KEYS, SLACK_SIGNING_SECRET: SECRET, SLACK_BOT_TOKEN: 'xoxb-test' });
    await host.kernel.spawn(manifest(`name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
    await host.channels.start();
    api = await serveHostApi(host, config);
  }
  afterEach(async () => {
    await api.close();
  });

  function post(payload: unknown, options: { secret?: string; ageSeconds?: number } = {}): Promise<Response> {
    const body = JSON.stringify(payload);
    const timestamp = String(Math.floor(host.clock.now() / 1000) - (options.ageSeconds ?? 0));
    return fetch(`${api.url}/hooks/events`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-slack-request-timestamp': timestamp,
        'x-slack-signature': signSlackRequest(options.secret ?? SECRET, timestamp, body),
      },
      body,
    });
  }

  it('answers the URL verification, refuses a bad signature or a stale timestamp, and answers a message event once', async () => {
    await startEvents();
    const verification = await post({ type: 'url_verification', challenge: 'c-123' });
    expect(await verification.json()).toEqual({ challenge: 'c-123' });
    expect((await post({ type: 'url_verification', challenge: 'x' }, { secret: 'guess' })).status).toBe(401);
    expect((await post({ type: 'url_verification', challenge: 'x' }, { ageSeconds: 600 })).status).toBe(401);
    model.script([{ text: 'Via the Events API.' }]);
    const event = {
      type: 'event_callback',
      event_id: 'Ev1',
      event: { type: 'message', channel: 'D9', channel_type: 'im', user: 'U42', text: 'hello', ts: '1700.0100' },
    };
    expect((await post(event)).status).toBe(200);
    // Slack retries when it is not sure: the same message is answered once.
    expect((await post(event)).status).toBe(200);
    await waitFor('the Events API message to settle', () => settled(1, 'events'));
    await host.channels.idle();
    expect(slack.posted.map((message) => [message.channel, message.text])).toEqual([['D9', 'Via the Events API.']]);
  });
});
