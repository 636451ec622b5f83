import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { agentToml, type Api, OWNER_AND_HELPER_KEYS, readSse, readSseUntil as readUntil, sseText as textOf, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;
let release: () => void;
let held: Promise<void>;

const KEYS = {
  config: { auth: { keys: [...OWNER_AND_HELPER_KEYS.config.auth.keys, { name: 'watcher', role: 'viewer', key_env: 'VIEWER_KEY' }] } },
  env: { ...OWNER_AND_HELPER_KEYS.env, VIEWER_KEY: 'viewer-secret' },
};
const as = (key: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${key}` },
});
const post = (text: string, accept = 'text/event-stream'): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', accept },
  body: JSON.stringify({ message: text }),
});

beforeEach(async () => {
  dir = await makeTempDir('loom-http-turn-');
  api = await startApi(dir.path, KEYS);
  held = new Promise((resolve) => (release = resolve));
  for (const name of ['helper-teller', 'private']) {
    const response = await api.request(
      '/api/agents',
      as('admin-secret', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml(name, model.url) }),
    );
    expect(response.status).toBe(201);
  }
});
afterEach(async () => {
  release();
  await api.close();
  await dir.remove();
});

describe('the running turn over HTTP', () => {
  it('shows in the session view and at GET /turn, and GET /turn with SSE replays it and follows it to its end', async () => {
    model.script([{ text: 'Chapter one. ', stall: held }]);
    const started = await api.request('/api/agents/helper-teller/messages', as('admin-secret', post('Tell me a story')));
    const first = readSse(started);
    await readUntil(first, 'text-delta');

    const session = (await (await api.request('/api/agents/helper-teller/session', as('admin-secret'))).json()) as {
      messages: unknown[];
      running: Record<string, unknown> | null;
    };
    expect(session.messages).toEqual([]);
    expect(session.running).toMatchObject({ message: 'Tell me a story', state: 'running', run_id: expect.any(String) as string });
    const shown = await api.request('/api/agents/helper-teller/turn', as('admin-secret'));
    expect(await shown.json()).toEqual(session.running);
    // Another key has a session of its own: the owner's turn is not in it.
    const others = (await (await api.request('/api/agents/helper-teller/session', as('helper-secret'))).json()) as { running: unknown };
    expect(others.running).toBeNull();
    expect((await api.request('/api/agents/helper-teller/turn', as('helper-secret'))).status).toBe(409);

    const follower = readSse(await api.request('/api/agents/helper-teller/turn', as('admin-secret', { headers: { accept: 'text/event-stream' } })));
    const replayed = await readUntil(follower, 'text-delta');
    expect(replayed[0]?.event).toBe('run-start');
    expect(textOf(replayed)).toBe('Chapter one. ');
    release();
    const rest = await readUntil(follower, 'run-finish');
    expect(JSON.parse(rest.at(-1)?.data ?? '{}')).toMatchObject({ type: 'run-finish', result: { text: 'Chapter one. ', usage: { input_tokens: 10 } } });
    await readUntil(first, 'run-finish');

    const after = (await (await api.request('/api/agents/helper-teller/session', as('admin-secret'))).json()) as { messages: unknown[]; running: unknown };
    expect(after.running).toBeNull();
    expect(after.messages).toHaveLength(2);
    const none = await api.request('/api/agents/helper-teller/turn', as('admin-secret'));
    expect(none.status).toBe(409);
    expect(await none.json()).toMatchObject({ error: { code: 'TURN_NOT_RUNNING', message: 'agent "helper-teller" has no turn running; nothing to show' } });
  });

  it('POST /turn/cancel cancels it once committed: the stream ends with TURN_CANCELLED, a JSON sender gets 409, and the session keeps the text marked cancelled', async () => {
    model.script([{ text: 'It was a dark ', stall: held }]);
    const streamed = readSse(await api.request('/api/agents/helper-teller/messages', as('helper-secret', post('Tell me a story'))));
    const before = await readUntil(streamed, 'text-delta');

    const cancelled = await api.request('/api/agents/helper-teller/turn/cancel', as('helper-secret', { method: 'POST' }));
    expect(cancelled.status).toBe(200);
    const view = (await cancelled.json()) as { agent: string; run_id: string; status: string };
    expect(view).toMatchObject({ agent: 'helper-teller', status: 'cancelled' });
    expect(JSON.parse(before[0]?.data ?? '{}')).toMatchObject({ runId: view.run_id });
    const end = await readUntil(streamed, 'error');
    expect(JSON.parse(end.at(-1)?.data ?? '{}')).toMatchObject({
      code: 'TURN_CANCELLED',
      message: expect.stringContaining('cancelled by "helper-bot"') as string,
    });

    // The key's turn is in its own session, which the owner reads by its id.
    const [own] = (await (await api.request('/api/agents/helper-teller/sessions', as('helper-secret'))).json()) as { id: string }[];
    const session = (await (await api.request(`/api/agents/helper-teller/session?session=${own?.id ?? ''}`, as('admin-secret'))).json()) as {
      messages: Record<string, unknown>[];
    };
    expect(session.messages).toMatchObject([
      { role: 'user', content: 'Tell me a story', providerOptions: { loom: { turn: { id: view.run_id, status: 'cancelled' } } } },
      { role: 'assistant', content: [{ type: 'text', text: 'It was a dark ' }, { providerOptions: { loom: { note: 'cancelled' } } }] },
    ]);

    // A sender waiting for JSON is told its turn was cancelled.
    const second = new Promise<void>((resolve) => (release = resolve));
    model.script([{ text: 'Another ', stall: second }]);
    const waiting = api.request('/api/agents/helper-teller/messages', as('admin-secret', post('Again', 'application/json')));
    await waitFor("the second turn's model call", () => model.requests.length >= 2);
    expect((await api.request('/api/agents/helper-teller/turn/cancel', as('admin-secret', { method: 'POST' }))).status).toBe(200);
    const refused = await waiting;
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ error: { code: 'TURN_CANCELLED', message: expect.stringContaining('cancelled by "admin"') as string } });
  });

  it("answers 409 TURN_NOT_RUNNING when nothing runs, 404 for an unknown agent, 403 for an agent out of the key's reach and for a viewer", async () => {
    const idle = await api.request('/api/agents/helper-teller/turn/cancel', as('admin-secret', { method: 'POST' }));
    expect(idle.status).toBe(409);
    expect(await idle.json()).toEqual({
      error: { code: 'TURN_NOT_RUNNING', message: 'agent "helper-teller" has no turn running; nothing to cancel', details: { agent: 'helper-teller' } },
    });
    const unknown = await api.request('/api/agents/nobody/turn/cancel', as('admin-secret', { method: 'POST' }));
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'AGENT_NOT_FOUND' } });
    expect((await api.request('/api/agents/private/turn/cancel', as('helper-secret', { method: 'POST' }))).status).toBe(403);
    const viewer = await api.request('/api/agents/helper-teller/turn/cancel', as('viewer-secret', { method: 'POST' }));
    expect(viewer.status).toBe(403);
    expect(await viewer.json()).toMatchObject({ error: { code: 'ACCESS_DENIED', message: expect.stringContaining('may not cancel turns') as string } });
  });
});
