import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CANONICAL_KEEP_MESSAGES, CANONICAL_MAX_MESSAGES } from '../../src/kernel/canonical-memory.ts';
import { conversationSessionId } from '../../src/kernel/conversation-session.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-conversations-');
  host = await openTestHost(dir.path);
  await host.kernel.spawn(manifest(`name = "friend"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`));
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const sentTo = (index: number): string => JSON.stringify(server.requests[index]?.body['messages']);

describe('conversations and what an agent knows of a person across them', () => {
  it('keeps each conversation in its own session, apart from the main one', async () => {
    server.script([{ text: 'one' }, { text: 'two' }, { text: 'three' }]);
    await host.kernel.send('friend', 'in thread A', { conversation: 'tg:1' });
    await host.kernel.send('friend', 'in thread B', { conversation: 'tg:2' });
    await host.kernel.send('friend', 'A again', { conversation: 'tg:1' });
    expect(sentTo(1)).not.toContain('in thread A');
    expect(sentTo(2)).toContain('in thread A');
    expect(sentTo(2)).not.toContain('in thread B');
    expect((await host.kernel.session('friend')).messages).toEqual([]);
    const agentId = host.kernel.get('friend').id;
    expect((await host.store.sessions.get(conversationSessionId(agentId, 'tg:1')))?.messages).toHaveLength(4);
  });

  it('tells the agent, on another channel, what the same person said on the first, and not its own conversation twice', async () => {
    server.script([{ text: 'Noted, you like tea.' }, { text: 'Tea, as you said.' }]);
    await host.kernel.send('friend', 'I like green tea', { conversation: 'telegram:42', person: 'ada' });
    expect(sentTo(0)).not.toContain('What you know of this person');
    await host.kernel.send('friend', 'What do I drink?', { conversation: 'slack:D1', person: 'ada' });
    expect(sentTo(1)).toContain('What you know of this person (ada) from your other conversations with them');
    expect(sentTo(1)).toContain('They said (telegram:42) I like green tea');
    expect(sentTo(1)).toContain('You said (telegram:42) Noted, you like tea.');
    // Another person knows nothing of it.
    server.script([{ text: 'Who are you?' }]);
    await host.kernel.send('friend', 'Hello', { conversation: 'slack:D2', person: 'bob' });
    expect(sentTo(2)).not.toContain('green tea');
  });

  it(`summarises the older exchanges once there are more than ${CANONICAL_MAX_MESSAGES} messages, as a session is compacted`, async () => {
    const exchanges = CANONICAL_MAX_MESSAGES / 2 + 1;
    server.script(Array.from({ length: exchanges - 1 }, (_, index) => ({ text: `reply ${index}` })));
    for (let index = 0; index < exchanges - 1; index += 1) await host.kernel.send('friend', `fact ${index}`, { conversation: `c${index}`, person: 'ada' });
    server.script([{ text: 'last reply' }, { text: 'Ada shared twenty facts.', usage: { inputTokens: 300, outputTokens: 10 } }]);
    await host.kernel.send('friend', 'one more', { conversation: 'c-last', person: 'ada' });
    expect(JSON.stringify(server.requests.at(-1)?.body['messages'])).toContain('fact 0');
    const agentId = host.kernel.get('friend').id;
    const canonical = (await host.store.sessions.get(conversationSessionId(agentId, 'person:ada')))?.messages ?? [];
    expect(canonical).toHaveLength(CANONICAL_KEEP_MESSAGES + 1);
    expect(JSON.stringify(canonical[0])).toContain('Ada shared twenty facts.');
    server.script([{ text: 'ok' }]);
    await host.kernel.send('friend', 'and now?', { conversation: 'c-new', person: 'ada' });
    expect(sentTo(server.requests.length - 1)).toContain('Summary of earlier conversations: Ada shared twenty facts.');
    // The summary was paid for as part of the turn.
    expect((await host.store.usage.list()).some((row) => row.inputTokens === 300)).toBe(true);
  });
});
