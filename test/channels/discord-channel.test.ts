import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type FakeDiscordServer, startFakeDiscordServer } from '../support/fake-discord-server.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { waitFor } from '../support/wait-for.ts';
import { openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let discord: FakeDiscordServer;
let host: TestHost;
const ADA = { id: '500000000000000042', username: 'ada' };

beforeEach(async () => {
  dir = await makeTempDir('loom-discord-');
  discord = await startFakeDiscordServer();
});
afterEach(async () => {
  await host.close();
  await discord.close();
  await dir.remove();
});

async function start(policy: Record<string, unknown> = {}, agentToml = ''): Promise<void> {
  const config = {
    channels: [
      {
        name: 'guild',
        kind: 'discord',
        agent: 'helper',
        token_env: 'DISCORD_TOKEN',
        api_base_url: discord.apiUrl,
        policy: { direct: 'allowlist', allow_users: [ADA.id], ...policy },
      },
    ],
  };
  host = await openTestHost(dir.path, config, { ...TEST_KEYS, DISCORD_TOKEN: 'discord-test-token' });
  await host.kernel.spawn(manifest(`name = "helper"\n${agentToml}\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
  await host.channels.start();
}

const settled = async (count: number): Promise<boolean> => {
  const recent = await host.store.channels.recent('guild', count);
  return recent.length === count && recent.every((message) => message.status !== 'received');
};

describe('a Discord channel (discord.js against a local gateway and REST API)', () => {
  it('answers a direct message', async () => {
    await start();
    expect((await host.channels.list())[0]).toMatchObject({ kind: 'discord', state: 'connected' });
    model.script([{ text: 'Hello **Ada**.' }]);
    discord.message({ channelId: '300000000000000001', author: ADA, content: 'Hi!' });
    await waitFor('the message to settle', () => settled(1));
    expect(discord.created.map((message) => [message.channelId, message.content])).toEqual([['300000000000000001', 'Hello **Ada**.']]);
  });

  it('answers a mention in a server channel, and ignores the rest', async () => {
    await start({ groups: 'open', allow_users: [], direct: 'closed' });
    discord.message({ channelId: discord.guild.channelId, author: ADA, content: 'just chatting', guild: true });
    model.script([{ text: 'Here.' }]);
    discord.message({ channelId: discord.guild.channelId, author: ADA, content: `<@${discord.bot.id}> are you there?`, guild: true, mentionsBot: true });
    await waitFor('both messages to settle', () => settled(2));
    expect(discord.created.map((message) => message.content)).toEqual(['Here.']);
    expect(JSON.stringify(model.requests[0]?.body['messages'])).toContain('are you there?');
  });

  it("keeps a thread a conversation of its own, under its channel's allowlist", async () => {
    await start({ groups: 'allowlist', allow_groups: [discord.guild.channelId], allow_users: [], direct: 'closed' });
    model.script([{ text: 'In the channel.' }, { text: 'In the thread.' }]);
    discord.message({ channelId: discord.guild.channelId, author: ADA, content: `<@${discord.bot.id}> my name is Ada`, guild: true, mentionsBot: true });
    await waitFor('the first message to settle', () => settled(1));
    discord.message({ channelId: discord.guild.threadId, author: ADA, content: `<@${discord.bot.id}> what is my name?`, guild: true, mentionsBot: true });
    await waitFor('the second message to settle', () => settled(2));
    expect(discord.created.map((message) => [message.channelId, message.content])).toEqual([
      [discord.guild.channelId, 'In the channel.'],
      [discord.guild.threadId, 'In the thread.'],
    ]);
    // The thread's turn is a session of its own; what Ada said in the channel reaches it only as
    // what the agent knows of her from other conversations.
    const [, ...conversation] = model.requests[1]?.body['messages'] as { role: string; content: { type: string; text: string }[] }[];
    expect(conversation).toHaveLength(1);
    expect(conversation[0]?.content.at(-1)).toEqual({ type: 'text', text: 'what is my name?' });
    expect(conversation[0]?.content[0]?.text).toContain(`They said (channel:guild:${discord.guild.channelId}) my name is Ada`);
    expect(await host.store.channels.recent('guild', 2)).toEqual(
      expect.arrayContaining([expect.objectContaining({ conversationId: discord.guild.channelId, thread: discord.guild.threadId })]),
    );
  });

  it('answers a waiting message as it was edited, and does not answer one deleted before its turn', async () => {
    await start();
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    model.script([{ text: 'First answer.', gate }, { text: 'Second answer.' }]);
    const dm = '300000000000000001';
    discord.message({ channelId: dm, author: ADA, content: 'first', id: '400000000000000010' });
    discord.message({ channelId: dm, author: ADA, content: 'second, with a typo', id: '400000000000000011' });
    discord.message({ channelId: dm, author: ADA, content: 'third, never mind', id: '400000000000000012' });
    await waitFor('three stored messages', async () => (await host.store.channels.recent('guild', 3)).length === 3);
    discord.edit({ channelId: dm, author: ADA, content: 'second, corrected', id: '400000000000000011' });
    discord.remove({ channelId: dm, id: '400000000000000012' });
    await waitFor(
      'the deleted message ignored and the edited one corrected',
      async () =>
        (await host.store.channels.get('guild', '400000000000000012'))?.status === 'ignored' &&
        (await host.store.channels.get('guild', '400000000000000011'))?.text === 'second, corrected',
    );
    release();
    await waitFor('the three messages to settle', () => settled(3));
    await host.channels.idle();
    expect(discord.created.map((message) => message.content)).toEqual(['First answer.', 'Second answer.']);
    expect(JSON.stringify(model.requests[1]?.body['messages'])).toContain('second, corrected');
    expect(JSON.stringify(model.requests[1]?.body['messages'])).not.toContain('typo');
    expect(await host.store.channels.get('guild', '400000000000000012')).toMatchObject({
      status: 'ignored',
      note: 'deleted on the platform before it was answered',
    });
  });

  it('answers a message dispatched twice once', async () => {
    await start();
    model.script([{ text: 'Once.' }]);
    discord.message({ channelId: '300000000000000001', author: ADA, content: 'Ping', id: '400000000000000001' });
    discord.message({ channelId: '300000000000000001', author: ADA, content: 'Ping', id: '400000000000000001' });
    await waitFor('the message to settle', () => settled(1));
    await host.channels.idle();
    expect(discord.created.map((message) => message.content)).toEqual(['Once.']);
  });

  it('asks for an approval with buttons and takes the press of an approver', async () => {
    await start({ approvers: [ADA.id] }, '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]');
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'n.txt', content: 'x' } }] }, { text: 'Saved.' }]);
    discord.message({ channelId: '300000000000000001', author: ADA, content: 'Save it' });
    await waitFor('the approval buttons', () => discord.created.some((message) => message.components.length > 0));
    const question = discord.created.find((message) => message.components.length > 0) as (typeof discord.created)[number];
    const approve = question.components[0]?.components?.[0]?.custom_id ?? '';
    discord.press({ id: '500000000000000099', username: 'mallory' }, question, approve);
    await waitFor("the button's answer", () => discord.answers.length > 0);
    expect(discord.answers[0]).toEqual({ type: 4, content: 'Only the approvers of this channel may decide that.', ephemeral: true });
    discord.press(ADA, question, approve);
    await waitFor('the message to settle', () => settled(1));
    expect(question.content).toContain('Approved: file_write runs.');
    expect(discord.created.at(-1)?.content).toBe('Saved.');
  });
});
