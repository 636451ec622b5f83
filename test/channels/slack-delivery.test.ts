/**
 * A Slack reply Slack will not take as a Markdown block goes as the message's plain text; one it
 * refuses outright is recorded as failed, with its reason, in the store, the daemon's log and the
 * audit log.
 */
import { createServer, type Server } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeSlackServer, startFakeSlackServer } from '../support/fake-slack-server.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { waitFor } from '../support/wait-for.ts';
import { createJsonLogRecorder, openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let slack: FakeSlackServer;
let host: TestHost;
let log: ReturnType<typeof createJsonLogRecorder>;

/**
 * Slack's Web API in front of the fake one, on loopback: every call passes on, except a
 * `chat.postMessage` or `chat.update` the current `refuse` answers with Slack's error for it.
 */
interface RefusingWebApi {
  url: string;
  /** `blocks`: a message with blocks is refused as `invalid_blocks`; `all`: every message as `not_in_channel`. */
  refuse: 'none' | 'blocks' | 'all';
  close(): Promise<void>;
}

async function startRefusingWebApi(upstream: string): Promise<RefusingWebApi> {
  const api: RefusingWebApi = { url: '', refuse: 'none', close: () => Promise.resolve() };
  const server: Server = createServer((request, response) => {
    void (async () => {
      let body = '';
      for await (const chunk of request) body += (chunk as Buffer).toString('utf8');
      const path = (request.url ?? '/').replace(/^\/api\//, '');
      if (/^chat\.(postMessage|update)/.test(path) && (api.refuse === 'all' || (api.refuse === 'blocks' && body.includes('blocks')))) {
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ ok: false, error: api.refuse === 'all' ? 'not_in_channel' : 'invalid_blocks' }));
        return;
      }
      const headers: Record<string, string> = {};
      for (const name of ['content-type', 'authorization']) {
        const value = request.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const answer = await fetch(`${upstream}${path}`, { method: request.method ?? 'POST', headers, ...(body === '' ? {} : { body }) });
      response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(await answer.text());
    })().catch((error: unknown) => response.writeHead(502).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  api.url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/api/`;
  api.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return api;
}

let webApi: RefusingWebApi;

beforeEach(async () => {
  dir = await makeTempDir('loom-slack-delivery-');
  slack = await startFakeSlackServer();
  webApi = await startRefusingWebApi(slack.apiUrl);
  log = createJsonLogRecorder();
});
afterEach(async () => {
  await host.close();
  await webApi.close();
  await slack.close();
  await dir.remove();
});

async function start(): Promise<void> {
  const config = {
    channels: [
      {
        name: 'team',
        kind: 'slack',
        agent: 'helper',
        mode: 'socket',
        app_token_env: 'SLACK_APP_TOKEN',
        bot_token_env: 'SLACK_BOT_TOKEN',
        api_base_url: webApi.url,
        policy: { direct: 'allowlist', allow_users: ['U42'] },
      },
    ],
  };
  host = await openTestHost(dir.path, config, { ...TEST_KEYS, SLACK_APP_TOKEN: 'xapp-test', SLACK_BOT_TOKEN: 'xoxb-test' }, { logger: log.logger });
  await host.kernel.spawn(manifest(`name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
  await host.channels.start();
  await slack.connected();
}

/** The newest message's record once it is settled, the fake clock moved past any retries meanwhile. */
async function settled() {
  await waitFor('the message to be settled', async () => {
    const [latest] = await host.store.channels.recent('team', 1);
    if (latest !== undefined && latest.status !== 'received') return true;
    if (host.clock.pending() > 0) await host.clock.advance(1000);
    return false;
  });
  return (await host.store.channels.recent('team', 1))[0];
}

describe('a Slack reply', () => {
  it('goes as plain text when Slack refuses its Markdown block', async () => {
    await start();
    webApi.refuse = 'blocks';
    model.script([{ text: 'Still **here**.' }]);
    slack.message({ channel: 'D1', user: 'U42', text: 'Hi!' });
    expect(await settled()).toMatchObject({ status: 'answered' });
    expect(slack.posted).toMatchObject([{ channel: 'D1', text: 'Still **here**.', blocks: [] }]);
    expect(log.records.some((record) => record['msg'] === 'channel "team": Slack refused a reply\'s Markdown block; sent as plain text')).toBe(true);
  });

  it("Slack refuses outright is recorded as failed with its reason: in the store, the daemon's log and the audit log", async () => {
    await start();
    webApi.refuse = 'all';
    model.script([{ text: 'Nobody will read this.' }]);
    slack.message({ channel: 'D1', user: 'U42', text: 'Hi!' });
    const message = await settled();
    expect(message).toMatchObject({ status: 'failed', note: 'the reply could not be delivered: An API error occurred: not_in_channel' });
    expect(slack.posted).toEqual([]);
    expect(log.records.find((record) => record['level'] === 50 && record['kind'] === 'reply')).toMatchObject({
      channel: 'team',
      msg: `could not deliver the reply to message "${message?.platformId ?? ''}" on channel "team": An API error occurred: not_in_channel`,
    });
    const audited = await waitFor('the channel-reply-fail event', async () => {
      const events = await host.store.events.list({ type: 'channel-reply-fail' });
      return events.length > 0 && events;
    });
    expect(audited).toMatchObject([
      { data: { channel: 'team', kind: 'reply', conversationId: 'D1', userId: 'U42', reason: 'An API error occurred: not_in_channel' } },
    ]);
  });
});
