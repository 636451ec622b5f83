import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signWebhook, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from '../../src/channels/webhook-channel.ts';
import { type RunningHttpServer } from '../../src/http/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, serveHostApi, TEST_KEYS, type TestHost } from '../support/test-host.ts';
import { type ReplyReceiver, startReplyReceiver } from '../support/reply-receiver.ts';

const model = useScriptedModelServer();
const SECRET = 'whsec-test-secret';
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;
let api: RunningHttpServer;
let receiver: ReplyReceiver;
let replies: string[];

beforeEach(async () => {
  dir = await makeTempDir('loom-channel-taint-');
});

async function start(taint: Record<string, unknown>): Promise<void> {
  receiver = await startReplyReceiver();
  replies = receiver.replies;
  const replyUrl = receiver.url;
  // Ada is the owner on this channel ([taint].trusted); Bob is allowed to talk, not trusted.
  const config = {
    taint: { ...taint, trusted: ['hooks:u-ada'] },
    channels: [
      {
        name: 'hooks',
        kind: 'webhook',
        agent: 'helper',
        secret_env: 'HOOK_SECRET',
        reply_url: replyUrl,
        policy: { direct: 'allowlist', allow_users: ['u-ada', 'u-bob'] },
      },
    ],
  };
  host = await openTestHost(dir.path, config, { ...TEST_KEYS, HOOK_SECRET: SECRET });
  await host.kernel.spawn(
    manifest(
      `name = "helper"\n[capabilities]\ntools = ["shell_exec"]\nshell = ["touch *"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`,
    ),
  );
  await host.channels.start();
  api = await serveHostApi(host, config);
}
afterEach(async () => {
  await api.close();
  await host.close();
  await receiver.close();
  await dir.remove();
});

/** POSTs a signed webhook message from `user`. */
async function post(id: string, user: string, text: string): Promise<void> {
  const body = JSON.stringify({ id, user: { id: user, name: user }, conversation: { id: `c-${user}` }, text });
  const timestamp = String(Math.floor(host.clock.now() / 1000));
  const response = await fetch(`${api.url}/hooks/hooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [WEBHOOK_TIMESTAMP_HEADER]: timestamp, [WEBHOOK_SIGNATURE_HEADER]: signWebhook(SECRET, timestamp, body) },
    body,
  });
  expect(response.status).toBeLessThan(300);
}

const marker = (): string => join(host.home.workspacesDir, 'helper', 'from-chat.txt');

describe('taint tracking of channel messages', () => {
  it("refuses a command a channel stranger wrote, and runs the one the channel's owner wrote", async () => {
    await start({ sinks: { shell_exec: 'refuse' } });
    model.script([{ toolCalls: [{ name: 'shell_exec', input: { command: 'touch from-chat.txt' } }] }, { text: 'I may not.' }]);
    await post('m-1', 'u-bob', 'run touch from-chat.txt please');
    await waitFor('the reply to Bob', () => replies.length === 1);
    expect(existsSync(marker())).toBe(false);
    const [refused] = await host.kernel.audit({ agent: 'helper', types: ['tool-deny'] });
    expect(refused?.data['reason']).toBe(
      'shell_exec carries untrusted text from message (message from channel sender "hooks:u-bob"): "touch from-chat.txt"; [taint] refuses it',
    );

    model.script([{ toolCalls: [{ name: 'shell_exec', input: { command: 'touch from-chat.txt' } }] }, { text: 'Done.' }]);
    await post('m-2', 'u-ada', 'run touch from-chat.txt please');
    await waitFor('the reply to Ada', () => replies.length === 2);
    expect(existsSync(marker())).toBe(true);
  });

  it('asks for approval by default, telling the chat why the call waits', async () => {
    await start({});
    model.script([{ toolCalls: [{ name: 'shell_exec', input: { command: 'touch from-chat.txt' } }] }, { text: 'It was not approved.' }]);
    await post('m-1', 'u-bob', 'run touch from-chat.txt please');
    const request = await waitFor('the approval request', async () => (await host.kernel.approvals.list('pending'))[0]);
    await waitFor('the approval request in the chat', () => replies.length === 1);
    expect(replies[0]).toContain(
      'helper wants to run shell_exec {"command":"touch from-chat.txt"}\n(shell_exec carries untrusted text from message (message from channel sender "hooks:u-bob"): "touch from-chat.txt")',
    );
    await host.kernel.approvals.decide(request.id, { approved: false, by: 'owner', reason: null });
    await waitFor('the reply to Bob', () => replies.length === 2);
    expect(existsSync(marker())).toBe(false);
  });
});
