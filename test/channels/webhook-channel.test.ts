import { createServer, type Server } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signWebhook, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from '../../src/channels/webhook-channel.ts';
import { type RunningHttpServer } from '../../src/http/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, serveHostApi, TEST_KEYS, type TestHost } from '../support/test-host.ts';
import { EVERYTHING_BIN, stdioEntry } from '../mcp/client-helpers.ts';

const model = useScriptedModelServer();
const SECRET = 'whsec-test-secret';

/** What the webhook's reply URL received: each POST's body, and whether its signature held. */
interface Received {
  body: { message_id: string; conversation: { id: string; thread: string | null }; text: string };
  signed: boolean;
}

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;
let api: RunningHttpServer;
let receiver: Server;
let received: Received[];

async function startReceiver(): Promise<string> {
  received = [];
  receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      const timestamp = String(request.headers[WEBHOOK_TIMESTAMP_HEADER]);
      received.push({ body: JSON.parse(body) as Received['body'], signed: request.headers[WEBHOOK_SIGNATURE_HEADER] === signWebhook(SECRET, timestamp, body) });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const address = receiver.address();
  return `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/replies`;
}

async function start(policy: Record<string, unknown> = {}, agentToml = ''): Promise<void> {
  const replyUrl = await startReceiver();
  const config = {
    channels: [
      {
        name: 'hooks',
        kind: 'webhook',
        agent: 'helper',
        secret_env: 'HOOK_SECRET',
        reply_url: replyUrl,
        policy: { direct: 'allowlist', allow_users: ['u-ada', 'u-bob'], ...policy },
      },
    ],
  };
  host = await openTestHost(dir.path, config, { ...TEST_KEYS, HOOK_SECRET: SECRET });
  await host.kernel.spawn(manifest(`name = "helper"\n${agentToml}\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
  await host.channels.start();
  api = await serveHostApi(host, config);
}

beforeEach(async () => {
  dir = await makeTempDir('loom-webhook-');
});
afterEach(async () => {
  await api.close();
  await host.close();
  await new Promise((resolve) => receiver.close(resolve));
  await dir.remove();
});

/** POSTs a message to the webhook (`hooks` unless `tamper.channel` names another), signed (or as `tamper` says). */
function post(message: Record<string, unknown>, tamper: { secret?: string; ageSeconds?: number; body?: string; channel?: string } = {}): Promise<Response> {
  const body = tamper.body ?? JSON.stringify(message);
  const timestamp = String(Math.floor(host.clock.now() / 1000) - (tamper.ageSeconds ?? 0));
  return fetch(`${api.url}/hooks/${tamper.channel ?? 'hooks'}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      [WEBHOOK_TIMESTAMP_HEADER]: timestamp,
      [WEBHOOK_SIGNATURE_HEADER]: signWebhook(tamper.secret ?? SECRET, timestamp, body),
    },
    body,
  });
}

const fromAda = (id: string, text: string, conversation = 'c-1'): Record<string, unknown> => ({
  id,
  user: { id: 'u-ada', name: 'Ada' },
  conversation: { id: conversation },
  text,
});

describe('a webhook channel', () => {
  it('answers a signed message from an allowed person with a signed reply, in a session of that conversation', async () => {
    await start();
    model.script([{ text: 'Hello Ada.' }, { text: 'Hello again.' }]);
    const response = await post(fromAda('m-1', 'Hi there'));
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ accepted: true, duplicate: false });
    await host.channels.idle();
    expect(received).toMatchObject([{ body: { conversation: { id: 'c-1', thread: null }, text: 'Hello Ada.' }, signed: true }]);

    await post(fromAda('m-2', 'Another thread', 'c-2'));
    await host.channels.idle();
    // Each conversation has its own session; the agent's main one is untouched. What Ada said in
    // the first is known in the second, as what the agent knows of her: context at the start of
    // the newest message, after the cached prefix, not a message of the history.
    const [, ...conversation] = model.requests[1]?.body['messages'] as { role: string; content: unknown }[];
    expect(conversation).toHaveLength(1);
    const parts = conversation[0]?.content as { type: string; text: string }[];
    expect(parts.at(-1)).toEqual({ type: 'text', text: 'Another thread' });
    expect(parts[0]?.text).toContain('What you know of this person (hooks:u-ada)');
    expect(parts[0]?.text).toContain('They said (channel:hooks:c-1) Hi there');
    expect((await host.kernel.session('helper')).messages).toEqual([]);
    const [stored] = await host.store.channels.recent('hooks', 1);
    expect(stored).toMatchObject({ platformId: 'm-2', status: 'answered', note: 'Hello again.' });
  });

  it('asks for an approval by reply command, takes "approve <id>" only from an approver, and goes on', async () => {
    await start({ approvers: ['u-ada'] }, '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]');
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'n.txt', content: 'x' } }] }, { text: 'Done.' }]);
    await post(fromAda('m-1', 'Write it'));
    await waitFor('the approval request reply', () => received.some((reply) => reply.body.text.includes('Reply "approve')));
    const short = /Reply "approve ([0-9a-f]{8})"/.exec(received[0]?.body.text ?? '')?.[1] ?? '';
    expect(received[0]?.body.text).toBe(`helper wants to run file_write {"path":"n.txt","content":"x"}\nReply "approve ${short}" or "deny ${short}".`);
    // A reply command is answered after the request that brought it (which it does not hold up).
    await post({ id: 'm-2', user: { id: 'u-bob' }, conversation: { id: 'c-1' }, text: `approve ${short}` });
    await waitFor("the answer to Bob's command", () => received.length === 2);
    expect(received[1]?.body.text).toBe('Only the approvers of this channel may decide that.');
    await post(fromAda('m-3', `approve ${short}`));
    await waitFor("the answer to Ada's command", () => received.length >= 3);
    expect(received[2]?.body.text).toBe('Approved: file_write runs.');
    await host.channels.idle();
    expect(received[3]?.body.text).toBe('Done.');
  });

  it("lets an approver decide only the channel's own agent's requests, not another agent's, whatever id they give", async () => {
    await start({ approvers: ['u-ada'] });
    await host.kernel.spawn(
      manifest(
        `name = "admin"\n[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`,
      ),
    );
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'owned.txt', content: 'x' } }] }, { text: 'Not written.' }]);
    const turn = host.kernel.send('admin', 'Write it');
    const [request] = await waitFor("the admin agent's approval request", async () => {
      const pending = await host.kernel.approvals.list('pending');
      return pending.length > 0 ? pending : undefined;
    });
    expect(request?.tool).toBe('file_write');
    await post(fromAda('m-1', `approve ${(request?.id ?? '').slice(0, 8)}`));
    await host.channels.idle();
    expect(received.at(-1)?.body.text).toBe('That request is no longer waiting.');
    expect((await host.kernel.approvals.list('pending')).map((approval) => approval.id)).toEqual([request?.id]);
    await host.kernel.approvals.decide(request?.id ?? '', { approved: false, by: 'local', reason: 'not now' });
    expect((await turn).text).toBe('Not written.');
  });

  it('tells the conversation that an approval waits for the owner when the channel has no approvers', async () => {
    await start({}, '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]');
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'n.txt', content: 'x' } }] }, { text: 'Done.' }]);
    await post(fromAda('m-1', 'Write it'));
    await waitFor('the reply saying the approval waits for the owner', () => received.length > 0);
    expect(received[0]?.body.text).toMatch(/^helper wants to run file_write .*\nIt waits for the owner's approval: loom approvals approve [0-9a-f]{8}$/);
    const [pending] = await host.kernel.approvals.list('pending');
    await host.kernel.approvals.decide(pending?.id ?? '', { approved: false, by: 'local', reason: 'not now' });
    await host.channels.idle();
    expect(received.at(-1)?.body.text).toBe('Done.');
  });

  it('answers a delivery it has seen before once', async () => {
    await start();
    model.script([{ text: 'Once.' }]);
    await post(fromAda('m-1', 'Hi'));
    const again = await post(fromAda('m-1', 'Hi'));
    expect(await again.json()).toEqual({ accepted: true, duplicate: true });
    await host.channels.idle();
    expect(received.map((reply) => reply.body.text)).toEqual(['Once.']);
    expect(model.requests).toHaveLength(1);
  });

  it('refuses a bad signature, a replayed timestamp and a malformed body, naming what is wrong', async () => {
    await start();
    const forged = await post(fromAda('m-1', 'Hi'), { secret: 'guess' });
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as { error: { message: string } }).error.message).toContain('the signature does not match the body');
    const replayed = await post(fromAda('m-2', 'Hi'), { ageSeconds: 600 });
    expect(replayed.status).toBe(401);
    expect(((await replayed.json()) as { error: { message: string } }).error.message).toContain("600 s from the daemon's clock, more than 300 s");
    const malformed = await post({ id: 'm-3', user: { id: 'u-ada' }, text: 'no conversation' });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({ error: { code: 'INVALID_REQUEST', message: expect.stringContaining('conversation') as string } });
    expect(await host.store.channels.recent('hooks', 10)).toEqual([]);
  });

  it('gives an unknown person a pairing code, refuses them (audited) until the owner approves it, then answers', async () => {
    await start({ direct: 'pairing', allow_users: [] });
    await post({ id: 'm-1', user: { id: 'u-bob', name: 'Bob' }, conversation: { id: 'c-bob' }, text: 'Hello?' });
    await host.channels.idle();
    const code = /loom channels approve ([A-Z2-9]{6})/.exec(received[0]?.body.text ?? '')?.[1];
    expect(code).toBeDefined();
    expect(model.requests).toHaveLength(0);
    expect(await host.store.events.list({ type: 'channel-refuse' })).toMatchObject([
      { data: { channel: 'hooks', userId: 'u-bob', reason: `not paired; pairing code ${code} issued` } },
    ]);
    // Asking again gives the same code.
    await post({ id: 'm-2', user: { id: 'u-bob', name: 'Bob' }, conversation: { id: 'c-bob' }, text: 'Still there?' });
    await host.channels.idle();
    expect(received[1]?.body.text).toContain(`loom channels approve ${code}`);

    const [view] = await host.channels.list();
    expect(view?.pendingPairings).toMatchObject([{ code, userId: 'u-bob', userName: 'Bob' }]);
    await expect(host.channels.approve('NOPE99')).rejects.toThrow('no one was given the pairing code "NOPE99"');
    await host.channels.approve((code ?? '').toLowerCase());
    expect(await host.store.events.list({ type: 'channel-pair' })).toMatchObject([{ data: { userId: 'u-bob', code } }]);
    model.script([{ text: 'Hi Bob.' }]);
    await post({ id: 'm-3', user: { id: 'u-bob', name: 'Bob' }, conversation: { id: 'c-bob' }, text: 'Now?' });
    await host.channels.idle();
    expect(received[2]?.body.text).toBe('Hi Bob.');
  });

  it('ignores a group message without a mention, answers one with, and tells a flooding person to wait once', async () => {
    await start({ groups: 'open', require_mention: true, messages_per_minute: 2, allow_users: [] });
    await post({ id: 'g-1', user: { id: 'u-1' }, conversation: { id: 'team', kind: 'group' }, text: 'chatter' });
    model.script([{ text: 'Yes?' }, { text: 'Again?' }]);
    await post({ id: 'g-2', user: { id: 'u-1' }, conversation: { id: 'team', kind: 'group' }, text: '@helper hi', mentioned: true });
    await post({ id: 'g-3', user: { id: 'u-1' }, conversation: { id: 'team', kind: 'group' }, text: '@helper again', mentioned: true });
    await post({ id: 'g-4', user: { id: 'u-1' }, conversation: { id: 'team', kind: 'group' }, text: '@helper and again', mentioned: true });
    await post({ id: 'g-5', user: { id: 'u-1' }, conversation: { id: 'team', kind: 'group' }, text: '@helper still here', mentioned: true });
    await host.channels.idle();
    // The first message past the rate is told to wait; the rest of the flood gets no answer.
    expect(received.map((reply) => reply.body.text)).toEqual(['Yes?', 'Again?', 'You are sending messages faster than 2 a minute; please wait a moment.']);
    const statuses = (await host.store.channels.recent('hooks', 10)).map((message) => [message.platformId, message.status]);
    expect(statuses).toEqual([
      ['g-5', 'ignored'],
      ['g-4', 'refused'],
      ['g-3', 'answered'],
      ['g-2', 'answered'],
      ['g-1', 'ignored'],
    ]);
  });

  it("holds back a stranger's flood: refusals, one notice, then silence", async () => {
    await start({ messages_per_minute: 2 });
    for (const id of ['s-1', 's-2', 's-3', 's-4', 's-5']) await post({ id, user: { id: 'u-eve' }, conversation: { id: 'c-eve' }, text: 'let me in' });
    await host.channels.idle();
    expect(received.map((reply) => reply.body.text)).toEqual([
      "Sorry, I can't talk with you here: not on the channel's allow_users.",
      "Sorry, I can't talk with you here: not on the channel's allow_users.",
      'You are sending messages faster than 2 a minute; please wait a moment.',
    ]);
    expect((await host.store.channels.recent('hooks', 2)).map((message) => message.status)).toEqual(['ignored', 'ignored']);
  });

  it('shows a question an MCP server asks during the turn, says where to answer it, and takes "deny <id>" as declining it', async () => {
    const replyUrl = await startReceiver();
    const config = {
      channels: [
        { name: 'hooks', kind: 'webhook', agent: 'helper', secret_env: 'HOOK_SECRET', reply_url: replyUrl, policy: { direct: 'open', approvers: ['u-ada'] } },
      ],
      mcp_servers: [stdioEntry('everything', [EVERYTHING_BIN, 'stdio'])],
    };
    host = await openTestHost(dir.path, config, { ...TEST_KEYS, HOOK_SECRET: SECRET }, { connectMcpServers: true });
    await waitFor('the everything server to connect', () => host.mcp?.servers()[0]?.status === 'connected');
    await host.kernel.spawn(
      manifest(`name = "helper"\n[capabilities]\ntools = ["mcp_everything_*"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`),
    );
    await host.channels.start();
    api = await serveHostApi(host, config);
    model.script([{ toolCalls: [{ name: 'mcp_everything_trigger_elicitation_request', input: {} }] }, { text: 'Maybe later, then.' }]);
    await post(fromAda('m-1', 'ask me'));
    await waitFor('the approval request reply', () => received.length > 0);
    const short = /approve ([0-9a-f]{8})/.exec(received[0]?.body.text ?? '')?.[1] ?? '';
    expect(received[0]?.body.text).toBe(
      `mcp_everything_elicitation asks, for helper: Please provide inputs for the following fields:\nFields: name (required), check, firstLine, email, homepage, birthdate, integer, number, untitledSingleSelectEnum, untitledMultipleSelectEnum, titledSingleSelectEnum, titledMultipleSelectEnum, legacyTitledEnum.\nAnswer it on the dashboard's Approvals page or with: loom approvals approve ${short} --answer field=value\nReply "deny ${short}" to decline it.`,
    );
    await post(fromAda('m-2', `deny ${short}`));
    await host.channels.idle();
    expect(received.map((reply) => reply.body.text).slice(1)).toEqual(['Declined: mcp_everything_elicitation gets no answer.', 'Maybe later, then.']);
    expect(JSON.stringify(model.requests[1]?.body['messages'])).toContain('User declined to provide the requested information');
  });

  it('knows a person named in [people] on each of their channels', async () => {
    const replyUrl = await startReceiver();
    const channel = (name: string): Record<string, unknown> => ({
      name,
      kind: 'webhook',
      agent: 'helper',
      secret_env: 'HOOK_SECRET',
      reply_url: replyUrl,
      policy: { direct: 'open' },
    });
    const config = { channels: [channel('hooks'), channel('desk')], people: { ada: ['hooks:u-ada', 'desk:ada@example.com'] } };
    host = await openTestHost(dir.path, config, { ...TEST_KEYS, HOOK_SECRET: SECRET });
    await host.kernel.spawn(manifest(`name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
    await host.channels.start();
    api = await serveHostApi(host, config);
    model.script([{ text: 'Noted.' }, { text: 'Tea.' }, { text: 'Who?' }]);
    await post(fromAda('m-1', 'I like tea'));
    await host.channels.idle();
    await post({ id: 'd-1', user: { id: 'ada@example.com' }, conversation: { id: 'desk-1' }, text: 'What do I like?' }, { channel: 'desk' });
    await post({ id: 'd-2', user: { id: 'bob@example.com' }, conversation: { id: 'desk-2' }, text: 'What do I like?' }, { channel: 'desk' });
    await host.channels.idle();
    // What the agent knows of the person comes with the newest message.
    const newestOf = (request: number): string => JSON.stringify((model.requests[request]?.body['messages'] as unknown[]).at(-1));
    expect(newestOf(1)).toContain('What you know of this person (ada)');
    expect(newestOf(1)).toContain('They said (channel:hooks:c-1) I like tea');
    // Someone not in [people] is one person per channel, and knows nothing of Ada.
    expect(JSON.stringify(model.requests[2]?.body['messages'])).not.toContain('like tea');
  });

  it('answers after a restart what was stored but not answered before a crash', async () => {
    const replyUrl = await startReceiver();
    const config = {
      channels: [{ name: 'hooks', kind: 'webhook', agent: 'helper', secret_env: 'HOOK_SECRET', reply_url: replyUrl, policy: { direct: 'open' } }],
    };
    host = await openTestHost(dir.path, config, { ...TEST_KEYS, HOOK_SECRET: SECRET });
    await host.kernel.spawn(manifest(`name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
    // Stored and acknowledged, then the process died before the turn.
    await host.store.channels.receive({
      channel: 'hooks',
      platformId: 'm-9',
      userId: 'u-1',
      userName: null,
      conversationId: 'c-9',
      conversationKind: 'direct',
      thread: null,
      mentioned: true,
      text: 'Are you there?',
      status: 'received',
      note: null,
      receivedAt: 1,
      updatedAt: 1,
    });
    model.script([{ text: 'I am.' }]);
    await host.channels.start();
    await host.channels.idle();
    expect(received.map((reply) => reply.body.text)).toEqual(['I am.']);
    api = await serveHostApi(host, config);
  });

  it('lists channels with their state over /api/channels, a missing secret shown as failed', async () => {
    const config = {
      channels: [{ name: 'nosecret', kind: 'webhook', agent: 'helper', secret_env: 'MISSING_SECRET', reply_url: 'http://127.0.0.1:9/replies' }],
    };
    host = await openTestHost(dir.path, config, TEST_KEYS);
    await host.channels.start();
    await startReceiver();
    api = await serveHostApi(host, config);
    const response = await fetch(`${api.url}/api/channels`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject([
      {
        name: 'nosecret',
        kind: 'webhook',
        agent: 'helper',
        state: 'failed',
        error: "MISSING_SECRET is not set in the daemon's environment",
        policy: { direct: 'pairing', groups: 'closed' },
      },
    ]);
    const hook = await fetch(`${api.url}/hooks/nosecret`, { method: 'POST', body: '{}' });
    expect(hook.status).toBe(404);
  });
});

describe('"approve <id>" and "deny <id>" meet the channel\'s policy and rate like any message (regression: they were decided and answered before either)', () => {
  const WAITS_FOR_APPROVAL = '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]';
  const groupMessage = (id: string, user: string, group: string, text: string, mentioned: boolean): Record<string, unknown> => ({
    id,
    user: { id: user },
    conversation: { id: group, kind: 'group' },
    text,
    mentioned,
  });

  it('ignores a stranger\'s "approve <id>" in a closed group without a word, as their chatter there', async () => {
    await start({ approvers: ['u-ada'] });
    await post(groupMessage('g-1', 'u-eve', 'closed-group', 'approve deadbeef', false));
    await post(groupMessage('g-2', 'u-eve', 'closed-group', 'hello bot', false));
    await host.channels.idle();
    expect(received).toEqual([]);
    expect((await host.store.channels.recent('hooks', 10)).map((message) => [message.platformId, message.status, message.note])).toEqual([
      ['g-2', 'ignored', 'groups are closed on this channel'],
      ['g-1', 'ignored', 'groups are closed on this channel'],
    ]);
    expect(await host.store.events.list({ type: 'channel-refuse' })).toMatchObject([
      { data: { userId: 'u-eve', reason: 'groups are closed on this channel' } },
      { data: { userId: 'u-eve', reason: 'groups are closed on this channel' } },
    ]);
  });

  it('holds an unpaired person\'s flood of "approve <id>" to messages_per_minute: pairing answers, one notice, then silence', async () => {
    await start({ approvers: ['u-ada'], direct: 'pairing', allow_users: [], messages_per_minute: 2 });
    for (let index = 1; index <= 10; index += 1)
      await post({ id: `d-${index}`, user: { id: 'u-eve' }, conversation: { id: 'c-eve' }, text: 'approve deadbeef' });
    await host.channels.idle();
    const code = (await host.store.channels.pairings('hooks'))[0]?.code ?? '';
    const pairingAnswer = `I can't talk with you here yet. Ask the owner of this Loom to run:\n\nloom channels approve ${code}`;
    expect(received.map((reply) => reply.body.text)).toEqual([
      pairingAnswer,
      pairingAnswer,
      'You are sending messages faster than 2 a minute; please wait a moment.',
    ]);
    expect((await host.store.channels.recent('hooks', 7)).map((message) => message.status)).toEqual(Array.from({ length: 7 }, () => 'ignored'));
    expect(model.requests).toEqual([]);
  });

  it('takes an approver\'s "approve <id>" only where the policy lets her talk: not in a group it closes, not in closed direct messages, not without a mention', async () => {
    await start({ approvers: ['u-ada'], direct: 'closed', groups: 'allowlist', allow_groups: ['team'] }, WAITS_FOR_APPROVAL);
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'n.txt', content: 'x' } }] }, { text: 'Done.' }]);
    const turn = host.kernel.send('helper', 'Write it');
    const id = await waitFor('the approval request', async () => (await host.kernel.approvals.list('pending'))[0]?.id);
    const command = `approve ${id.slice(0, 8)}`;
    const stillPending = async (): Promise<string[]> => (await host.kernel.approvals.list('pending')).map((approval) => approval.id);

    await post(groupMessage('g-1', 'u-ada', 'other-group', command, true));
    await host.channels.idle();
    expect(received).toEqual([]);
    expect(await stillPending()).toEqual([id]);

    await post(fromAda('d-1', command));
    await host.channels.idle();
    expect(received.map((reply) => [reply.body.conversation.id, reply.body.text])).toEqual([
      ['c-1', "Sorry, I can't talk with you here: direct messages are closed on this channel."],
    ]);
    expect(await stillPending()).toEqual([id]);

    await post(groupMessage('g-2', 'u-ada', 'team', command, false));
    await host.channels.idle();
    expect(received).toHaveLength(1);
    expect(await stillPending()).toEqual([id]);

    await post(groupMessage('g-3', 'u-ada', 'team', command, true));
    await host.channels.idle();
    expect(received.map((reply) => [reply.body.conversation.id, reply.body.text]).slice(1)).toEqual([['team', 'Approved: file_write runs.']]);
    expect((await turn).text).toBe('Done.');
    expect((await host.store.channels.recent('hooks', 4)).map((message) => [message.platformId, message.status, message.note])).toEqual([
      ['g-3', 'answered', 'Approved: file_write runs.'],
      ['g-2', 'ignored', 'a group message without a mention'],
      ['d-1', 'refused', 'direct messages are closed on this channel'],
      ['g-1', 'ignored', 'group "other-group" is not on the channel\'s allow_groups'],
    ]);
  });
});
