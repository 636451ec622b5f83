import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { TaskState } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { a2aClient as sdkClient, textMessage } from '../a2a/a2a-sdk-client.ts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { agentToml, type Api, OWNER_AND_HELPER_KEYS, readSse, startApi } from './api-harness.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Every read is filtered by what the caller's key covers: a user key limited to `helper-*` sees
 * nothing of the agent "private" (its tasks, audit rows, usage, events, approvals), and not the
 * tasks another key created even on an agent both reach.
 */

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

const KEYS = {
  config: { auth: { keys: [...OWNER_AND_HELPER_KEYS.config.auth.keys, { name: 'other-bot', role: 'user', key_env: 'OTHER_KEY', agents: ['helper-*'] }] } },
  env: { ...OWNER_AND_HELPER_KEYS.env, OTHER_KEY: 'other-secret' },
};

const as = (key: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string> | undefined), authorization: `Bearer ${key}` },
});

beforeEach(async () => {
  dir = await makeTempDir('loom-caller-scope-');
  api = await startApi(dir.path, KEYS);
  for (const name of ['helper-one', 'private']) {
    const response = await api.request(
      '/api/agents',
      as('admin-secret', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml(name, model.url) }),
    );
    expect(response.status).toBe(201);
  }
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

/** The official A2A client for an agent of the daemon under test, sending `key` (its card too: with keys, a card is shown only to a key that reaches its agent). */
const a2aClient = (agent: string, key: string, transport: 'JSONRPC' | 'HTTP+JSON' = 'JSONRPC'): Promise<Client> => sdkClient(api.url, agent, key, transport);
const message = textMessage;

async function taskOf(client: Client, text: string): Promise<string> {
  model.script([{ text: `re: ${text}` }]);
  const result = await client.sendMessage(message(text));
  if (!('status' in result)) throw new Error('expected a task');
  expect(result.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  return result.id;
}

const listIds = async (client: Client): Promise<string[]> =>
  (await client.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined })).tasks.map(
    (task) => task.id,
  );

describe('A2A tasks by key', () => {
  it("a user key cannot read another agent's A2A task by id: 404 as for an unknown task, through every door", async () => {
    const secret = await taskOf(await a2aClient('private', 'admin-secret'), 'the private plan');

    const legacy = await api.request(`/a2a/tasks/${secret}`, as('helper-secret'));
    expect(legacy.status).toBe(404);
    expect(await legacy.json()).toEqual({ error: { code: 'TASK_NOT_FOUND', message: `no task "${secret}" (unknown, or evicted)` } });
    expect((await api.request(`/a2a/tasks/${secret}/cancel`, as('helper-secret', { method: 'POST' }))).status).toBe(404);

    for (const transport of ['JSONRPC', 'HTTP+JSON'] as const) {
      const helper = await a2aClient('helper-one', 'helper-secret', transport);
      await expect(helper.getTask({ tenant: '', id: secret, historyLength: undefined })).rejects.toThrow(/not found/i);
      await expect(helper.cancelTask({ tenant: '', id: secret, metadata: {} })).rejects.toThrow(/not found/i);
      expect(await listIds(helper)).not.toContain(secret);
    }
    // The owner still reads it, and it was never changed.
    const owner = await a2aClient('private', 'admin-secret');
    expect((await owner.getTask({ tenant: '', id: secret, historyLength: undefined })).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('a user key sees the tasks it created, not those another key created on the same agent; the owner sees both', async () => {
    const mine = await taskOf(await a2aClient('helper-one', 'helper-secret'), 'mine');
    const theirs = await taskOf(await a2aClient('helper-one', 'other-secret'), 'theirs');

    const helper = await a2aClient('helper-one', 'helper-secret');
    expect(await listIds(helper)).toEqual([mine]);
    await expect(helper.getTask({ tenant: '', id: theirs, historyLength: undefined })).rejects.toThrow(/not found/i);
    expect((await api.request(`/a2a/tasks/${theirs}`, as('helper-secret'))).status).toBe(404);
    expect((await api.request(`/a2a/tasks/${mine}`, as('helper-secret'))).status).toBe(200);
    expect((await listIds(await a2aClient('helper-one', 'admin-secret'))).sort()).toEqual([mine, theirs].sort());
  });
});

describe('A2A without a key', () => {
  it('reaches no agent, no task and no card, even through an agent named like the card list', async () => {
    const spawned = await api.request(
      '/api/agents',
      as('admin-secret', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml('agents', model.url) }),
    );
    expect(spawned.status).toBe(201);
    const secret = await taskOf(await a2aClient('private', 'admin-secret'), 'the private plan');
    const rpc = (method: string, params: unknown, headers: Record<string, string> = {}): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const send = await api.request(
      '/a2a/agents',
      rpc('message/send', { message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'hello' }] } }),
    );
    expect(send.status).toBe(401);
    expect(await send.text()).toContain('needs an API key');
    const list = await api.request('/a2a/agents/', rpc('ListTasks', {}, { 'a2a-version': '1.0' }));
    expect(list.status).toBe(401);
    expect(await list.text()).not.toContain(secret);
    expect((await api.request(`/a2a/tasks/${secret}`)).status).toBe(401);
    // No turn ran for the agent named "agents".
    const audit = (await (await api.request('/api/audit?agent=agents', as('admin-secret'))).json()) as { type: string }[];
    expect(audit.map((row) => row.type)).not.toContain('turn-finish');
    // The card list answers, with no card in it; the cards answer 404, as for an unknown agent.
    expect(await (await api.request('/a2a/agents')).json()).toEqual({ agents: [], total: 0 });
    expect((await api.request('/a2a/agents/.well-known/agent-card.json')).status).toBe(404);
    expect((await api.request('/a2a/agents/.well-known/agent-card.json', as('admin-secret'))).status).toBe(200);
  });
});

describe('manifest validation by key', () => {
  it('tells only the owner whether the agent could run here: no probe of the model server a user key names, no word of which keys are set', async () => {
    const knocks: string[] = [];
    const listener = createServer((request, response) => {
      knocks.push(request.url ?? '');
      response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    try {
      const address = listener.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      const text = `name = "probe"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "http://127.0.0.1:${port}/v1"\napi_key_env = "NOT_SET_ANYWHERE"\n`;
      const validate = async (key: string): Promise<{ valid: boolean; warnings: string[] }> =>
        (await (
          await api.request('/api/manifests/validate', as(key, { method: 'POST', headers: { 'content-type': 'application/toml' }, body: text }))
        ).json()) as { valid: boolean; warnings: string[] };
      const asUser = await validate('helper-secret');
      expect(asUser).toEqual({ valid: true, format: 'toml', errors: [], warnings: [] });
      expect(knocks).toEqual([]);
      const asOwner = await validate('admin-secret');
      expect(asOwner.warnings.join('\n')).toContain('needs NOT_SET_ANYWHERE, which is not set');
      expect(knocks).toEqual(['/v1/models']);
    } finally {
      await new Promise((resolve) => listener.close(resolve));
    }
  });
});

describe('API reads by key', () => {
  it('/api/audit and /api/usage show a user key only the agents it reaches', async () => {
    model.script([{ text: 'one' }, { text: 'two' }]);
    for (const agent of ['helper-one', 'private']) {
      const response = await api.request(
        `/api/agents/${agent}/messages`,
        as('admin-secret', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'hi' }) }),
      );
      expect(response.status).toBe(200);
    }
    const ids = Object.fromEntries(
      ((await (await api.request('/api/agents', as('admin-secret'))).json()) as { id: string; name: string }[]).map((agent) => [agent.name, agent.id]),
    );

    const audit = (await (await api.request('/api/audit', as('helper-secret'))).json()) as { agentId: string | null }[];
    expect(audit.length).toBeGreaterThan(0);
    expect(new Set(audit.map((row) => row.agentId))).toEqual(new Set([ids['helper-one']]));
    const ownerAudit = (await (await api.request('/api/audit', as('admin-secret'))).json()) as { agentId: string | null }[];
    expect(new Set(ownerAudit.map((row) => row.agentId))).toEqual(new Set([ids['helper-one'], ids['private']]));
    expect((await api.request('/api/audit?agent=private', as('helper-secret'))).status).toBe(403);

    const usage = (await (await api.request('/api/usage', as('helper-secret'))).json()) as { agent: string }[];
    expect(usage.map((row) => row.agent)).toEqual(['helper-one']);
    expect(((await (await api.request('/api/usage', as('admin-secret'))).json()) as { agent: string }[]).map((row) => row.agent).sort()).toEqual([
      'helper-one',
      'private',
    ]);
    expect((await api.request('/api/usage?agent=private', as('helper-secret'))).status).toBe(403);
  });

  it('/api/mcp/servers and /api/a2a/external are not shown to a user key, which sees only its agents', async () => {
    for (const path of ['/api/mcp/servers', '/api/a2a/external']) {
      const refused = await api.request(path, as('helper-secret'));
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
        /^a user key \("helper-bot"\) may not list the (MCP servers|external A2A agents): that shows the whole installation/,
      );
      expect((await api.request(path, as('admin-secret'))).status).toBe(200);
    }
  });

  it('/api/events streams a user key only the events of agents it reaches', async () => {
    const response = await api.request('/api/events', as('helper-secret'));
    expect(response.status).toBe(200);
    const events = readSse(response);
    for (const name of ['private-two', 'helper-two']) {
      await api.request(
        '/api/agents',
        as('admin-secret', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: agentToml(name, model.url) }),
      );
    }
    // The first event it receives is helper-two's spawn: private-two's, published before it, never arrives.
    for await (const event of events) {
      if (event.comment !== undefined) continue;
      expect(event.event).toBe('agent-spawn');
      expect(JSON.parse(event.data)).toMatchObject({ name: 'helper-two' });
      break;
    }
    await response.body?.cancel();
  });

  it("/api/approvals lists a user key only its agents' requests", async () => {
    const careful = (name: string): string =>
      agentToml(name, model.url, '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]');
    for (const name of ['helper-careful', 'private-careful']) {
      await api.request('/api/agents', as('admin-secret', { method: 'POST', headers: { 'content-type': 'application/toml' }, body: careful(name) }));
    }
    const turns: Promise<unknown>[] = [];
    // Each turn asks to write (and waits), then ends once its request is denied.
    const write = { toolCalls: [{ name: 'file_write', input: { path: 'x.txt', content: 'x' } }] };
    model.script([write, write, { text: 'done' }, { text: 'done' }]);
    for (const name of ['helper-careful', 'private-careful']) {
      turns.push(api.host.kernel.send(name, 'write').catch(() => undefined));
      // This turn's request is open before the next agent's turn takes the model's next step.
      await waitFor(`the approval request of ${name}`, async () => (await api.host.kernel.approvals.list()).some((record) => record.agentName === name));
    }
    const listed = (await (await api.request('/api/approvals', as('helper-secret'))).json()) as { agent: string }[];
    expect(listed.map((approval) => approval.agent)).toEqual(['helper-careful']);
    const all = (await (await api.request('/api/approvals', as('admin-secret'))).json()) as { agent: string; id: string }[];
    expect(all.map((approval) => approval.agent).sort()).toEqual(['helper-careful', 'private-careful']);
    for (const approval of all) await api.request(`/api/approvals/${approval.id}/deny`, as('admin-secret', { method: 'POST' }));
    await Promise.all(turns);
  });
});
