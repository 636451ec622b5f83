import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ENDED_TURN_WINDOW_MS } from '../../src/kernel/ended-turns.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { type Api, readSse, readSseUntil as readUntil, sseText as textOf, useHelperTellerApi } from './api-harness.ts';

const model = useScriptedModelServer();
const teller = useHelperTellerApi('loom-http-replay-', () => model.url);
let api: Api;
let release: () => void;
let held: Promise<void>;

const as = (key: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${key}` },
});
const streamed = (headers: Record<string, string> = {}): RequestInit => ({ headers: { accept: 'text/event-stream', ...headers } });
const post = (text: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
  body: JSON.stringify({ message: text }),
});

beforeEach(() => {
  api = teller.api();
  held = new Promise((resolve) => (release = resolve));
});
afterEach(() => release());

describe('GET /api/agents/{agent}/turn with Last-Event-ID', () => {
  it('gives a client that lost its stream the events after its last one, then the rest, once each', async () => {
    model.script([{ text: 'Chapter one. ', stall: held }]);
    const first = readSse(await api.request('/api/agents/helper-teller/messages', as('admin-secret', post('Tell me a story'))));
    const [start] = await readUntil(first, 'run-start');
    expect(start?.id).toMatch(/^.+:.+:\d+$/);
    // The connection breaks after the first event (the client cancels the body: its socket closes).
    await first.return(undefined);

    // The turn went on meanwhile: a follower from the start sees its text, each event with the id the first client had.
    const all = readSse(await api.request('/api/agents/helper-teller/turn', as('admin-secret', streamed())));
    const sofar = await readUntil(all, 'text-delta');
    expect(sofar[0]).toMatchObject({ event: 'run-start', id: start?.id });
    await all.return(undefined);

    const back = readSse(await api.request('/api/agents/helper-teller/turn', as('admin-secret', streamed({ 'last-event-id': start?.id ?? '' }))));
    const missed = await readUntil(back, 'text-delta');
    expect(missed.map((event) => event.event)).not.toContain('run-start');
    expect(textOf(missed)).toBe('Chapter one. ');
    const text = missed.at(-1);
    // A client without the header (no EventSource) gives the id in the query; it has the text already.
    const query = readSse(
      await api.request(`/api/agents/helper-teller/turn?last_event_id=${encodeURIComponent(text?.id ?? '')}`, as('admin-secret', streamed())),
    );
    release();
    const rest = await readUntil(back, 'run-finish');
    expect(JSON.parse(rest.at(-1)?.data ?? '{}')).toMatchObject({ type: 'run-finish', result: { text: 'Chapter one. ' } });
    const tail = await readUntil(query, 'run-finish');
    expect(textOf(tail)).toBe('');
    expect(tail.map((event) => event.event)).toEqual(['run-finish']);
    // Ids grow along the stream.
    const seqs = [start, ...missed, ...rest].map((event) => Number(event?.id?.split(':').at(-1)));
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);

    // A client that comes back just after the end gets the rest of the turn and its end; two minutes on, the reply is in the session only.
    const late = await readUntil(
      readSse(await api.request('/api/agents/helper-teller/turn', as('admin-secret', streamed({ 'last-event-id': start?.id ?? '' })))),
      'run-finish',
    );
    expect(textOf(late)).toBe('Chapter one. ');
    await api.host.clock.advance(ENDED_TURN_WINDOW_MS);
    const ended = await api.request('/api/agents/helper-teller/turn', as('admin-secret', streamed({ 'last-event-id': start?.id ?? '' })));
    expect(ended.status).toBe(409);
    expect(await ended.json()).toMatchObject({
      error: { code: 'TURN_NOT_RUNNING', message: expect.stringContaining('has ended; its reply is in the session') as string },
    });
  });

  it('tells a client whose Last-Event-ID is of a turn that ended long ago that its reply is in the session, and refuses an id that is not one', async () => {
    model.script([{ text: 'First.' }, { text: 'Second ', stall: held }]);
    const first = await readUntil(readSse(await api.request('/api/agents/helper-teller/messages', as('admin-secret', post('One')))), 'run-finish');
    await api.host.clock.advance(ENDED_TURN_WINDOW_MS);
    const second = readSse(await api.request('/api/agents/helper-teller/messages', as('admin-secret', post('Two'))));
    await readUntil(second, 'text-delta');
    const old = first.at(-2)?.id ?? '';
    const stale = await api.request('/api/agents/helper-teller/turn', as('admin-secret', streamed({ 'last-event-id': old })));
    expect(stale.status).toBe(409);
    expect(await stale.json()).toMatchObject({
      error: {
        code: 'TURN_NOT_RUNNING',
        message: `the turn of agent "helper-teller" that event "${old}" belongs to has ended; its reply is in the session (GET /api/agents/helper-teller/session)`,
      },
    });
    const bad = await api.request('/api/agents/helper-teller/turn', as('admin-secret', streamed({ 'last-event-id': 'seven' })));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({
      error: { code: 'INVALID_REQUEST', message: expect.stringContaining('Last-Event-ID "seven" is not an event id') as string },
    });
  });
});

describe('the running turn of a session chosen by id', () => {
  it("is followed and cancelled by the owner on another key's session with ?session=, and is unknown to a key that does not hold it", async () => {
    model.script([{ text: 'Once.' }, { text: 'A helper story ', stall: held }]);
    // The helper's session is there once its first turn is committed.
    await readUntil(readSse(await api.request('/api/agents/helper-teller/messages', as('helper-secret', post('Hello')))), 'run-finish');
    const helper = readSse(await api.request('/api/agents/helper-teller/messages', as('helper-secret', post('Tell me a story'))));
    await readUntil(helper, 'text-delta');
    const [session] = (await (await api.request('/api/agents/helper-teller/sessions', as('helper-secret'))).json()) as { id: string }[];
    const chosen = `?session=${encodeURIComponent(session?.id ?? '')}`;

    // Not on the owner's main session: that has no turn.
    expect((await api.request('/api/agents/helper-teller/turn/cancel', as('admin-secret', { method: 'POST' }))).status).toBe(409);
    expect(await (await api.request(`/api/agents/helper-teller/turn${chosen}`, as('admin-secret'))).json()).toMatchObject({
      message: 'Tell me a story',
      state: 'running',
    });
    const follower = readSse(await api.request(`/api/agents/helper-teller/turn${chosen}`, as('admin-secret', streamed())));
    expect(textOf(await readUntil(follower, 'text-delta'))).toBe('A helper story ');

    const cancelled = await api.request(`/api/agents/helper-teller/turn/cancel${chosen}`, as('admin-secret', { method: 'POST' }));
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toMatchObject({ agent: 'helper-teller', status: 'cancelled' });
    const end = await readUntil(follower, 'error');
    expect(JSON.parse(end.at(-1)?.data ?? '{}')).toMatchObject({ code: 'TURN_CANCELLED', message: expect.stringContaining('cancelled by "admin"') as string });
    await readUntil(helper, 'error');
  });

  it('answers 404 SESSION_NOT_FOUND to a key that chooses a session it does not hold', async () => {
    model.script([{ text: 'The owner story ', stall: held }]);
    const owner = readSse(await api.request('/api/agents/helper-teller/messages', as('admin-secret', post('Tell me a story'))));
    await readUntil(owner, 'text-delta');
    const sessions = (await (await api.request('/api/agents/helper-teller/sessions', as('admin-secret'))).json()) as {
      id: string;
      conversation: string | null;
    }[];
    const main = sessions.find((session) => session.conversation === null);
    const chosen = `?session=${encodeURIComponent(main?.id ?? '')}`;
    for (const path of [`/api/agents/helper-teller/turn/cancel${chosen}`, `/api/agents/helper-teller/turn${chosen}`]) {
      const response = await api.request(path, as('helper-secret', path.includes('cancel') ? { method: 'POST' } : {}));
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ error: { code: 'SESSION_NOT_FOUND' } });
    }
  });
});
