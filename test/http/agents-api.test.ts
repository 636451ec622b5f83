import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { agentToml, type Api, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

beforeEach(async () => {
  dir = await makeTempDir('loom-http-');
  api = await startApi(dir.path);
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const toml = (text: string): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/toml' }, body: text });

async function spawn(name: string, extra = ''): Promise<Record<string, unknown>> {
  const response = await api.request('/api/agents', toml(agentToml(name, model.url, extra)));
  expect(response.status).toBe(201);
  return (await response.json()) as Record<string, unknown>;
}

describe('GET /api/health', () => {
  it('answers ok with the version and the number of agents', async () => {
    await spawn('one');
    const response = await api.request('/api/health');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok', version: '9.9.9-test', agents: 1 });
  });
});

describe('PUT /api/agents/{agent}', () => {
  it('replaces the manifest of a live agent, keeping its id and session; a manifest for another name is refused', async () => {
    const spawned = (await (await api.request('/api/agents', toml('name = "editor"\n'))).json()) as { id: string; session_id: string };
    const put = (text: string): RequestInit => ({ method: 'PUT', headers: { 'content-type': 'application/toml' }, body: text });
    const response = await api.request('/api/agents/editor', put('name = "editor"\ndescription = "now with a tool"\n[capabilities]\ntools = ["agent_list"]\n'));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      id: spawned.id,
      session_id: spawned.session_id,
      description: 'now with a tool',
      capabilities: [{ kind: 'tool_invoke', pattern: 'agent_list' }],
    });
    // No [model] and no [default_model]: updated all the same, with the warning that it cannot run.
    const unrunnable = (await (await api.request('/api/agents/editor', put('name = "editor"\n'))).json()) as { warnings: string[] };
    expect(unrunnable.warnings).toEqual([
      expect.stringContaining('agent "editor" cannot run: it has no [model] and config.toml has no [default_model]; run `loom init`'),
    ]);
    const renamed = await api.request('/api/agents/editor', put('name = "someone-else"\n'));
    expect(renamed.status).toBe(400);
    expect(((await renamed.json()) as { error: { code: string } }).error.code).toBe('AGENT_RENAME');
  });
});

describe('POST /api/agents', () => {
  it('spawns an agent from a TOML manifest and answers 201 with the show view and no warnings', async () => {
    const body = await spawn('researcher');
    expect(body).toMatchObject({ name: 'researcher', state: 'running', model: 'openai/gpt-4o', warnings: [] });
    expect(body['manifest']).toMatchObject({ name: 'researcher' });
    expect(api.host.kernel.get('researcher').id).toBe(body['id']);
  });

  it('warns when the new agent is served over MCP as the same tool as another (names differing only in case, "-" and "_")', async () => {
    expect((await spawn('front-desk'))['warnings']).toEqual([]);
    expect((await spawn('Front_Desk'))['warnings']).toEqual([
      'agent "Front_Desk" is served over MCP as the tool loom_agent_front_desk, as agent "front-desk" is: MCP clients reach only the one spawned first; rename one to reach both over MCP',
    ]);
  });

  it('spawns an agent from a JSON manifest', async () => {
    const response = await api.request('/api/agents', json({ name: 'from-json', model: { provider: 'openai', model: 'gpt-4o', base_url: model.url } }));
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ name: 'from-json', model: 'openai/gpt-4o' });
  });

  it("spawns a child under ?parent= and lists it among the parent's children", async () => {
    const parent = await spawn('parent');
    const response = await api.request('/api/agents?parent=parent', toml(agentToml('child', model.url)));
    expect(response.status).toBe(201);
    expect(await response.json()).toMatchObject({ name: 'child', parent: parent['id'] });
  });

  it('answers 400 MANIFEST_INVALID naming the field when the manifest is wrong', async () => {
    const response = await api.request('/api/agents', toml('name = "bad"\n[model]\nprovider = "nope"\nmodel = "x"\n'));
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('MANIFEST_INVALID');
    expect(body.error.message).toContain('provider');
    expect(api.host.kernel.list()).toEqual([]);
  });

  it('answers 400 naming the problem when a JSON manifest is malformed', async () => {
    const response = await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name": ' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'MANIFEST_INVALID', message: expect.stringContaining('JSON') as string } });
  });

  it('answers 409 AGENT_NAME_TAKEN when a live agent has the name', async () => {
    await spawn('twin');
    const response = await api.request('/api/agents', toml(agentToml('twin', model.url)));
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ error: { code: 'AGENT_NAME_TAKEN' } });
  });

  it('answers 415 when the manifest is neither TOML nor JSON', async () => {
    const response = await api.request('/api/agents', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'name = "x"' });
    expect(response.status).toBe(415);
    expect(await response.json()).toMatchObject({ error: { code: 'UNSUPPORTED_MEDIA_TYPE' } });
  });

  it('answers 415 for a media type named like what every object inherits ("constructor", "toString")', async () => {
    for (const type of ['constructor', 'tostring', '__proto__']) {
      const response = await api.request('/api/agents', { method: 'POST', headers: { 'content-type': type }, body: 'name = "x"' });
      expect(response.status).toBe(415);
      expect(await response.json()).toMatchObject({ error: { code: 'UNSUPPORTED_MEDIA_TYPE' } });
    }
  });

  it('answers 404 when ?parent= names no agent', async () => {
    const response = await api.request('/api/agents?parent=ghost', toml(agentToml('orphan', model.url)));
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { code: 'AGENT_NOT_FOUND' } });
  });
});

describe('agent routes', () => {
  it('GET /api/agents lists the live agents in spawn order', async () => {
    await spawn('a');
    await spawn('b');
    const response = await api.request('/api/agents');
    expect(response.status).toBe(200);
    expect(((await response.json()) as { name: string }[]).map((agent) => agent.name)).toEqual(['a', 'b']);
  });

  it('GET /api/agents/:agent shows the agent with its manifest, by name or id', async () => {
    const spawned = await spawn('shown');
    for (const reference of ['shown', String(spawned['id'])]) {
      const response = await api.request(`/api/agents/${reference}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ id: spawned['id'], name: 'shown', manifest: { name: 'shown' } });
    }
  });

  it('answers 404 AGENT_NOT_FOUND for an unknown agent', async () => {
    const response = await api.request('/api/agents/ghost');
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      error: { code: 'AGENT_NOT_FOUND', message: expect.stringContaining('"ghost"') as string, details: expect.any(Object) as object },
    });
  });

  it('suspends and resumes an agent', async () => {
    await spawn('sleepy');
    const suspended = await api.request('/api/agents/sleepy/suspend', { method: 'POST' });
    expect(suspended.status).toBe(200);
    expect(await suspended.json()).toMatchObject({ name: 'sleepy', state: 'suspended' });
    expect(api.host.kernel.get('sleepy').state).toBe('suspended');
    const resumed = await api.request('/api/agents/sleepy/resume', { method: 'POST' });
    expect(await resumed.json()).toMatchObject({ name: 'sleepy', state: 'running' });
  });

  it('DELETE /api/agents/:agent kills the agent and its children and returns them', async () => {
    await spawn('root');
    await api.request('/api/agents?parent=root', toml(agentToml('leaf', model.url)));
    const response = await api.request('/api/agents/root', { method: 'DELETE' });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { name: string }[]).map((agent) => agent.name)).toEqual(['root', 'leaf']);
    expect(api.host.kernel.list()).toEqual([]);
  });
});

describe('POST /api/agents/:agent/messages', () => {
  it('answers with the turn view and keeps the exchange in the session', async () => {
    await spawn('echo');
    model.script([{ text: 'Hello there.', usage: { inputTokens: 100, outputTokens: 20 } }]);
    const response = await api.request('/api/agents/echo/messages', json({ message: 'Hi' }));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      text: 'Hello there.',
      usage: { input_tokens: 100, output_tokens: 20 },
      iterations: 1,
      cost_usd: expect.any(Number) as number,
      model: 'openai/gpt-4o',
    });

    const session = await api.request('/api/agents/echo/session');
    expect(session.status).toBe(200);
    expect(await session.json()).toMatchObject({ messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant' }] });
  });

  it('answers 400 naming the problem when the body is malformed JSON', async () => {
    await spawn('echo');
    const response = await api.request('/api/agents/echo/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"message": "Hi"',
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('INVALID_REQUEST');
    expect(body.error.message).toContain('malformed JSON');
    expect(model.requests).toHaveLength(0);
  });

  it('answers 400 naming the field when the body has the wrong shape', async () => {
    await spawn('echo');
    const wrongType = await api.request('/api/agents/echo/messages', json({ message: 42 }));
    expect(wrongType.status).toBe(400);
    expect(((await wrongType.json()) as { error: { message: string } }).error.message).toContain('message');
    const unknownKey = await api.request('/api/agents/echo/messages', json({ message: 'Hi', temperature: 2 }));
    expect(unknownKey.status).toBe(400);
    expect(((await unknownKey.json()) as { error: { message: string } }).error.message).toContain('temperature');
  });

  it('answers 404 for a message to an unknown agent', async () => {
    const response = await api.request('/api/agents/ghost/messages', json({ message: 'Hi' }));
    expect(response.status).toBe(404);
  });

  it('answers 409 AGENT_STATE for a message to a suspended agent', async () => {
    await spawn('paused');
    await api.host.kernel.suspend('paused');
    const response = await api.request('/api/agents/paused/messages', json({ message: 'Hi' }));
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ error: { code: 'AGENT_STATE' } });
  });
});

describe('session, usage and audit', () => {
  it('DELETE /api/agents/:agent/session empties the history', async () => {
    await spawn('forgetful');
    model.script([{ text: 'noted' }]);
    await api.request('/api/agents/forgetful/messages', json({ message: 'remember this' }));
    const reset = await api.request('/api/agents/forgetful/session', { method: 'DELETE' });
    expect(reset.status).toBe(204);
    expect(await (await api.request('/api/agents/forgetful/session')).json()).toMatchObject({ messages: [] });
  });

  it('GET /api/usage reports tokens by agent, and ?agent= narrows it', async () => {
    await spawn('spender');
    await spawn('saver');
    model.script([{ text: 'ok', usage: { inputTokens: 7, outputTokens: 3 } }]);
    await api.request('/api/agents/spender/messages', json({ message: 'go' }));
    const all = await api.request('/api/usage');
    expect(all.status).toBe(200);
    expect(await all.json()).toMatchObject([{ agent: 'spender', input_tokens: 7, output_tokens: 3, calls: 1 }]);
    expect(await (await api.request('/api/usage?agent=saver')).json()).toEqual([]);
  });

  it('GET /api/audit lists kernel events, filtered by ?agent= and limited by ?limit=', async () => {
    await spawn('first');
    await spawn('second');
    await api.request('/api/agents/second/suspend', { method: 'POST' });
    const all = (await (await api.request('/api/audit')).json()) as { type: string }[];
    expect(all.map((event) => event.type)).toEqual(['agent-spawn', 'agent-spawn', 'agent-suspend']);
    const second = (await (await api.request('/api/audit?agent=second')).json()) as { type: string }[];
    expect(second.map((event) => event.type)).toEqual(['agent-spawn', 'agent-suspend']);
    expect(await (await api.request('/api/audit?limit=1')).json()).toHaveLength(1);
  });

  it('answers 400 naming the parameter for a bad audit query', async () => {
    const response = await api.request('/api/audit?limit=lots');
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain('limit');
  });
});

describe('requests the API refuses', () => {
  it('answers 404 ROUTE_NOT_FOUND as JSON for an unknown route', async () => {
    const response = await api.request('/api/nothing-here');
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { code: 'ROUTE_NOT_FOUND', message: expect.stringContaining('/api/nothing-here') as string } });
  });
});

/** A JSON POST whose body is streamed in two chunks, cut at byte `at`: sent chunked, without Content-Length. */
function postedInTwoChunks(value: unknown, at: number): RequestInit {
  const payload = new TextEncoder().encode(JSON.stringify(value));
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(payload.slice(0, at));
      controller.enqueue(payload.slice(at));
      controller.close();
    },
  });
  return { method: 'POST', headers: { 'content-type': 'application/json' }, body, duplex: 'half' };
}

describe('body size limit', () => {
  it('answers 413 BODY_TOO_LARGE for a body over daemon.body_limit_bytes, and serves the next request', async () => {
    await api.close();
    api = await startApi(dir.path, { config: { daemon: { body_limit_bytes: 1024 } } });
    await spawn('small');
    const response = await api.request('/api/agents/small/messages', json({ message: 'x'.repeat(4096) }));
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: 'BODY_TOO_LARGE' } });
    expect(model.requests).toHaveLength(0);
    expect((await api.request('/api/health')).status).toBe(200);
  });

  it('answers 413 for a chunked body (no Content-Length) that grows over the limit', async () => {
    await api.close();
    api = await startApi(dir.path, { config: { daemon: { body_limit_bytes: 1024 } } });
    await spawn('chunked');
    const response = await api.request('/api/agents/chunked/messages', postedInTwoChunks({ message: 'y'.repeat(4096) }, 2000));
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: 'BODY_TOO_LARGE' } });
    expect(model.requests).toHaveLength(0);
  });

  it('takes a chunked body (no Content-Length) under the limit, as one of declared length', async () => {
    await api.close();
    api = await startApi(dir.path, { config: { daemon: { body_limit_bytes: 1024 } } });
    await spawn('chunked-small');
    model.script([{ text: 'two chunks read' }]);
    const response = await api.request('/api/agents/chunked-small/messages', postedInTwoChunks({ message: 'hello in two chunks' }, 10));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ text: 'two chunks read' });
    expect(JSON.stringify(model.requests)).toContain('hello in two chunks');
  });
});
