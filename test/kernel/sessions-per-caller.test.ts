import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/test-kernel.ts';
import { agentToml, type Api, startApi } from '../http/api-harness.ts';
import { connectClient } from '../mcp/server-harness.ts';
import { a2aClient, textMessage } from '../a2a/a2a-sdk-client.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

/**
 * Sessions belong to a caller's conversation: two keys that reach one agent each talk to it in a
 * session of their own, which the other neither reads nor has sent to the model; the owner's is
 * the agent's main session, and the owner sees every session.
 */

const KEYS = { owner: 'owner-secret', alice: 'alice-secret', bob: 'bob-secret' } as const;
const CONFIG = {
  rate_limit: { per_minute: 1_000_000 },
  auth: {
    keys: [
      { name: 'admin', role: 'owner', key_env: 'OWNER_KEY' },
      { name: 'alice', role: 'user', key_env: 'ALICE_KEY', agents: ['helper'] },
      { name: 'bob', role: 'user', key_env: 'BOB_KEY', agents: ['helper'] },
    ],
  },
};
const ENV = { OWNER_KEY: KEYS.owner, ALICE_KEY: KEYS.alice, BOB_KEY: KEYS.bob };

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

const as = (who: keyof typeof KEYS, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${KEYS[who]}` },
});
const post = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const getJson = async <T>(who: keyof typeof KEYS, path: string): Promise<T> => {
  const response = await api.request(path, as(who));
  expect(response.status).toBe(200);
  return (await response.json()) as T;
};

/** Sends as `who` and answers with `reply`. */
async function say(who: keyof typeof KEYS, message: string, reply: string, extra: Record<string, unknown> = {}): Promise<void> {
  model.script([{ text: reply }]);
  const response = await api.request('/api/agents/helper/messages', as(who, post({ message, ...extra })));
  expect(response.status).toBe(200);
}

/** Everything the model was sent in its last request, as text. */
const lastPrompt = (): string => JSON.stringify(model.requests.at(-1)?.body ?? {});

type Session = { id: string; conversation: string | null; messages: unknown[] };
type Summary = { id: string; conversation: string | null; messages: number };

beforeAll(async () => {
  dir = await makeTempDir('loom-sessions-per-caller-');
  api = await startApi(dir.path, { config: CONFIG, env: ENV });
  expect(
    (await api.request('/api/agents', as('owner', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('helper', model.url) })))
      .status,
  ).toBe(201);
});
afterAll(async () => {
  await api.close();
  await dir.remove();
});
beforeEach(() => {
  model.reset();
});

describe('sessions per caller', () => {
  it("keeps two keys of one agent apart: neither reads the other's session nor has it sent to the model", async () => {
    await say('alice', 'my password is swordfish', 'noted');
    await say('bob', 'what do you know?', 'nothing of yours');
    // Bob's turn went to the model without Alice's words.
    expect(lastPrompt()).toContain('what do you know?');
    expect(lastPrompt()).not.toContain('swordfish');

    const bobs = await getJson<Session>('bob', '/api/agents/helper/session');
    expect(JSON.stringify(bobs.messages)).not.toContain('swordfish');
    expect(JSON.stringify(bobs.messages)).toContain('what do you know?');
    const alices = await getJson<Session>('alice', '/api/agents/helper/session');
    expect(JSON.stringify(alices.messages)).toContain('swordfish');
    expect(alices.id).not.toBe(bobs.id);

    // Each lists only its own; Alice's session by id is, to Bob, no session at all.
    const bobList = await getJson<Summary[]>('bob', '/api/agents/helper/sessions');
    expect(bobList.map((session) => session.id)).toEqual([bobs.id]);
    const probe = await api.request(`/api/agents/helper/session?session=${alices.id}`, as('bob'));
    expect(probe.status).toBe(404);
    expect(await probe.json()).toMatchObject({ error: { code: 'SESSION_NOT_FOUND' } });
    const resume = await api.request('/api/agents/helper/messages', as('bob', post({ message: 'and now?', session: alices.id })));
    expect(resume.status).toBe(404);

    // Alice's next turn goes on with her own history.
    await say('alice', 'what is my password?', 'swordfish');
    expect(lastPrompt()).toContain('my password is swordfish');
    expect(lastPrompt()).not.toContain('what do you know?');
  });

  it("gives the owner the agent's main session, and every session to read and go on with by id", async () => {
    await say('owner', 'owner here', 'hello owner');
    const main = await getJson<Session>('owner', '/api/agents/helper/session');
    expect(main.conversation).toBeNull();
    expect(JSON.stringify(main.messages)).toContain('owner here');
    expect(JSON.stringify(main.messages)).not.toContain('swordfish');

    const all = await getJson<Summary[]>('owner', '/api/agents/helper/sessions');
    expect(all[0]).toMatchObject({ id: main.id, conversation: null });
    const alices = (await getJson<Session>('alice', '/api/agents/helper/session')).id;
    expect(all.map((session) => session.id)).toContain(alices);
    const read = await getJson<Session>('owner', `/api/agents/helper/session?session=${alices}`);
    expect(JSON.stringify(read.messages)).toContain('swordfish');

    // The owner may go on with a key's session: the model is sent that history.
    await say('owner', 'a word from the owner', 'understood', { session: alices });
    expect(lastPrompt()).toContain('swordfish');
    expect(JSON.stringify((await getJson<Session>('alice', '/api/agents/helper/session')).messages)).toContain('a word from the owner');
  });

  it("serves each key its own session over MCP: Bob's session resource holds none of Alice's words", async () => {
    const client = await connectClient(api.url, 'modern', { apiKey: KEYS.bob });
    try {
      const resource = await client.readResource({ uri: 'loom://agents/helper/session' });
      const text = JSON.stringify(resource.contents);
      expect(text).toContain('what do you know?');
      expect(text).not.toContain('swordfish');
    } finally {
      await client.close();
    }
  });

  it('gives each A2A context a session of its own, within the key', async () => {
    const client = await a2aClient(api.url, 'helper', KEYS.bob);
    model.script([{ text: 'first context' }]);
    const first = await client.sendMessage(textMessage('the blue door'));
    expect(JSON.stringify(first)).toContain('first context');
    model.script([{ text: 'second context' }]);
    await client.sendMessage(textMessage('which door?'));
    // A new context: the model hears nothing of the first, nor of Bob's own session.
    expect(lastPrompt()).toContain('which door?');
    expect(lastPrompt()).not.toContain('the blue door');
    expect(lastPrompt()).not.toContain('what do you know?');
    const bobList = await getJson<Summary[]>('bob', '/api/agents/helper/sessions');
    expect(bobList.filter((session) => session.conversation?.includes('/a2a:') === true)).toHaveLength(2);
  });

  it('gives a thread a key names over HTTP a session of its own, within the key, and refuses a bad name or both choices at once', async () => {
    await say('bob', 'said in the thread', 'thread reply', { thread: 'mcp:one' });
    expect(lastPrompt()).not.toContain('what do you know?');
    const thread = await getJson<Session>('bob', '/api/agents/helper/session?thread=mcp:one');
    expect(thread.conversation).toMatch(/^principal:.*\/mcp:one$/);
    expect(JSON.stringify(thread.messages)).toContain('said in the thread');
    expect(JSON.stringify((await getJson<Session>('bob', '/api/agents/helper/session')).messages)).not.toContain('said in the thread');

    const badName = await api.request('/api/agents/helper/messages', as('bob', post({ message: 'x', thread: '../main' })));
    expect(badName.status).toBe(400);
    expect(JSON.stringify(await badName.json())).toContain('thread');
    const both = await api.request(`/api/agents/helper/session?thread=mcp:one&session=${thread.id}`, as('bob'));
    expect(both.status).toBe(400);
    expect(JSON.stringify(await both.json())).toContain('give \\"session\\" or \\"thread\\", not both');
  });

  it('gives each /v1 user a session of its own', async () => {
    const complete = async (user: string, content: string): Promise<void> => {
      model.script([{ text: `re: ${content}` }]);
      const response = await api.request('/v1/chat/completions', as('alice', post({ model: 'helper', user, messages: [{ role: 'user', content }] })));
      expect(response.status).toBe(200);
    };
    await complete('ann', 'I am Ann');
    await complete('ben', 'I am Ben');
    expect(lastPrompt()).not.toContain('I am Ann');
    await complete('ann', 'who am I?');
    expect(lastPrompt()).toContain('I am Ann');
    expect(lastPrompt()).not.toContain('I am Ben');
  });
});
