import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { waitFor } from '../support/wait-for.ts';
import { agentToml, type Api, OWNER_AND_HELPER_KEYS, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;
let release: () => void;
let held: Promise<void>;

const as = (key: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${key}` },
});
const message = (text: string, key?: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
  body: JSON.stringify({ message: text }),
});
const completion = (text: string, key: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', 'idempotency-key': key },
  body: JSON.stringify({ model: 'helper-teller', messages: [{ role: 'user', content: text }] }),
});

beforeEach(async () => {
  dir = await makeTempDir('loom-http-idempotency-');
  api = await startApi(dir.path, OWNER_AND_HELPER_KEYS);
  held = new Promise((resolve) => (release = resolve));
  const response = await api.request(
    '/api/agents',
    as('admin-secret', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('helper-teller', model.url) }),
  );
  expect(response.status).toBe(201);
});
afterEach(async () => {
  release();
  await api.close();
  await dir.remove();
});

type Session = { messages: { role: string; content: unknown }[] };
const userMessages = async (key: string): Promise<number> =>
  ((await (await api.request('/api/agents/helper-teller/session', as(key))).json()) as Session).messages.filter((entry) => entry.role === 'user').length;

describe('Idempotency-Key on a message', () => {
  it('gives a retry the reply of the turn the first request started, running it once', async () => {
    model.script([{ text: 'One answer.' }, { text: 'A second answer nobody should get.' }]);
    const first = await api.request('/api/agents/helper-teller/messages', as('admin-secret', message('Hello', 'retry-1')));
    expect(first.status).toBe(200);
    const again = await api.request('/api/agents/helper-teller/messages', as('admin-secret', message('Hello', 'retry-1')));
    expect(again.status).toBe(200);
    expect(((await again.json()) as { text: string }).text).toBe('One answer.');
    expect(((await first.json()) as { text: string }).text).toBe('One answer.');
    expect(model.requests).toHaveLength(1);
    expect(await userMessages('admin-secret')).toBe(1);
    // One record of the turn in the audit log, not one per request.
    const audit = (await (await api.request('/api/audit?type=turn-finish', as('admin-secret'))).json()) as unknown[];
    expect(audit).toHaveLength(1);
  });

  it('gives a retry made while the turn runs the same reply once it ends', async () => {
    model.script([{ text: 'Slow answer.', gate: held }]);
    const first = api.request('/api/agents/helper-teller/messages', as('admin-secret', message('Hello', 'retry-2')));
    // The retry is sent while the first request's turn waits for the model.
    await waitFor("the first turn's model call", () => model.requests.length === 1);
    const again = api.request('/api/agents/helper-teller/messages', as('admin-secret', message('Hello', 'retry-2')));
    release();
    const replies = await Promise.all([first, again]);
    expect(await Promise.all(replies.map(async (reply) => ((await reply.json()) as { text: string }).text))).toEqual(['Slow answer.', 'Slow answer.']);
    expect(model.requests).toHaveLength(1);
    expect(await userMessages('admin-secret')).toBe(1);
  });

  it('keeps keys apart by caller, and a message without a key always starts a turn', async () => {
    model.script([{ text: 'for the owner' }, { text: 'for the helper' }, { text: 'again' }]);
    expect(((await (await api.request('/api/agents/helper-teller/messages', as('admin-secret', message('Hi', 'same')))).json()) as { text: string }).text).toBe(
      'for the owner',
    );
    expect(
      ((await (await api.request('/api/agents/helper-teller/messages', as('helper-secret', message('Hi', 'same')))).json()) as { text: string }).text,
    ).toBe('for the helper');
    expect(((await (await api.request('/api/agents/helper-teller/messages', as('admin-secret', message('Hi')))).json()) as { text: string }).text).toBe(
      'again',
    );
    expect(model.requests).toHaveLength(3);
  });

  it('tells a retry of a turn that was cancelled what the first request was told: who cancelled it, said once', async () => {
    model.script([{ text: 'Half a reply', gate: held }]);
    const first = api.request('/api/agents/helper-teller/messages', as('admin-secret', message('Hello', 'cancelled-1')));
    await waitFor("the first turn's model call", () => model.requests.length === 1);
    const cancel = await api.request('/api/agents/helper-teller/turn/cancel', as('admin-secret', { method: 'POST' }));
    expect(cancel.status).toBe(200);
    const told = await first;
    expect(told.status).toBe(409);
    const expected = { error: { code: 'TURN_CANCELLED', message: 'the turn was cancelled by "admin"; what it said before is kept in the session' } };
    expect(await told.json()).toMatchObject(expected);

    // Once the turn is over, the retry reads how it ended from its journal.
    const again = await api.request('/api/agents/helper-teller/messages', as('admin-secret', message('Hello', 'cancelled-1')));
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject(expected);
    expect(model.requests).toHaveLength(1);
  });

  it('works on /v1/chat/completions', async () => {
    model.script([{ text: 'Once.' }, { text: 'Twice.' }]);
    const texts: string[] = [];
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const response = await api.request('/v1/chat/completions', as('admin-secret', completion('Hello', 'v1-key')));
      expect(response.status).toBe(200);
      texts.push(((await response.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content ?? '');
    }
    expect(texts).toEqual(['Once.', 'Once.']);
    expect(model.requests).toHaveLength(1);
  });

  it('refuses a key that is not printable ASCII or is too long, naming the header', async () => {
    for (const key of ['has space', 'x'.repeat(256)]) {
      const response = await api.request('/api/agents/helper-teller/messages', as('admin-secret', message('Hi', key)));
      expect(response.status).toBe(400);
      expect(await response.text()).toContain('Idempotency-Key');
    }
    expect(model.requests).toHaveLength(0);
  });
});
