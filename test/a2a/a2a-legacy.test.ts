import { Task, TaskState } from '@a2a-js/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml, type HangingModelServer, startHangingModelServer } from '../http/api-harness.ts';
import { type A2aHarness, startA2a } from './a2a-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: A2aHarness;
let hanging: HangingModelServer | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-legacy-');
  api = await startA2a(dir.path, { maxTasks: 3 });
});
afterEach(async () => {
  await api.close();
  await hanging?.close();
  hanging = undefined;
  await dir.remove();
});

const post = (body: string, headers: Record<string, string> = { 'content-type': 'application/json' }): RequestInit => ({ method: 'POST', headers, body });

// Byte for byte spec/05's request.
const SEND_BODY = `{
"jsonrpc": "2.0",
"id": 1,
"method": "tasks/send",
"params": {
"message": {
"role": "user",
"parts": [{ "type": "text", "text": "Review this code for security issues" }]
},
"sessionId": "optional-session-id"
}
}`;

describe('legacy endpoints (spec/05)', () => {
  it('POST /a2a/tasks/send runs the task and answers the completed task; GET /a2a/tasks/{id} returns it', async () => {
    await api.host.kernel.spawn(manifest(agentToml('code-reviewer', model.url)));
    model.script([{ text: 'I found 2 potential issues...' }]);
    const response = await api.request('/a2a/tasks/send', post(SEND_BODY));
    expect(response.status).toBe(200);
    const task = (await response.json()) as { id: string };
    expect(task.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(task).toEqual({
      id: task.id,
      sessionId: 'optional-session-id',
      status: 'completed',
      messages: [
        { role: 'user', parts: [{ type: 'text', text: 'Review this code for security issues' }] },
        { role: 'agent', parts: [{ type: 'text', text: 'I found 2 potential issues...' }] },
      ],
      artifacts: [{ name: 'response', parts: [{ type: 'text', text: 'I found 2 potential issues...' }] }],
    });
    const fetched = await api.request(`/a2a/tasks/${task.id}`);
    expect(fetched.status).toBe(200);
    expect(await fetched.json()).toEqual(task);
  });

  it('answers 404 for an unknown task (get and cancel)', async () => {
    const unknown = await api.request('/a2a/tasks/nope');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: { code: 'TASK_NOT_FOUND', message: 'no task "nope" (unknown, or evicted)' } });
    expect((await api.request('/a2a/tasks/nope/cancel', { method: 'POST' })).status).toBe(404);
  });

  it('answers a tasks/send it cannot read with the JSON-RPC error a legacy client reads (400)', async () => {
    const send = (body: string) => api.request('/a2a/tasks/send', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const malformed = await send('{"jsonrpc": "2.0", "id": 1, ');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Invalid JSON payload.' } });
    const wrongMethod = await send('{"jsonrpc": "2.0", "id": 7, "method": "tasks/nope", "params": {}}');
    expect(wrongMethod.status).toBe(400);
    expect(await wrongMethod.json()).toEqual({ jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'Method not found: tasks/nope' } });
    const empty = await send('{"jsonrpc": "2.0", "id": "x", "method": "tasks/send", "params": {"message": {"role": "user", "parts": []}}}');
    expect(empty.status).toBe(400);
    expect(await empty.json()).toEqual({ jsonrpc: '2.0', id: 'x', error: { code: -32602, message: 'params.message.parts must hold at least one text part' } });
    // JSON, but no request: refused as one, not failed inside.
    for (const notARequest of ['null', '[]', '"tasks/send"', '7']) {
      const refused = await send(notARequest);
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message: 'the request must be a JSON-RPC object: {"jsonrpc": "2.0", "id": …, "method": "tasks/send", "params": {"message": …}}',
        },
      });
    }
    const nullPart = await send('{"jsonrpc": "2.0", "id": 2, "method": "tasks/send", "params": {"message": {"role": "user", "parts": [null]}}}');
    expect(nullPart.status).toBe(400);
    expect(await nullPart.json()).toEqual({ jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'params.message.parts must hold at least one text part' } });
  });

  it('POST /a2a/tasks/{id}/cancel cancels a running task', async () => {
    hanging = await startHangingModelServer();
    await api.host.kernel.spawn(manifest(agentToml('slow', hanging.url)));
    const sending = api.request('/a2a/tasks/send', post(SEND_BODY.replace('"sessionId": "optional-session-id"', '"sessionId": "s1"')));
    const id = await waitFor('the task to be stored', async () => (await api.repository.list({ limit: 1, offset: 0 })).records[0]?.id);
    const canceled = await api.request(`/a2a/tasks/${id}/cancel`, { method: 'POST' });
    expect(canceled.status).toBe(200);
    expect(await canceled.json()).toMatchObject({ id, status: 'cancelled', sessionId: 's1' });
    expect(await (await sending).json()).toMatchObject({ id, status: 'cancelled' });
  });

  it('POST /a2a/tasks/{id}/cancel answers the task as stored: completed when it ended so before the cancel was saved', async () => {
    // A task no agent runs (its agent is gone): the cancel marks it canceled in the store itself.
    const id = 'c0ffee00-0000-4000-8000-000000000001';
    const { store } = api.a2a;
    await store.save(
      Task.fromJSON({ id, contextId: 'ctx', status: { state: 'TASK_STATE_WORKING' }, history: [], artifacts: [], metadata: { loomAgent: 'gone' } }),
    );
    // The task ends (its turn's outcome, written by the recovery) just before the cancel's save.
    const save = store.save.bind(store);
    store.save = async (task, context) => {
      if (task.status?.state === TaskState.TASK_STATE_CANCELED) {
        await store.update(id, (current) => {
          current.status = { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() };
          return true;
        });
      }
      return save(task, context);
    };
    const canceled = await api.request(`/a2a/tasks/${id}/cancel`, { method: 'POST' });
    expect(canceled.status).toBe(200);
    expect(await canceled.json()).toMatchObject({ id, status: 'completed' });
    expect(await (await api.request(`/a2a/tasks/${id}`)).json()).toMatchObject({ id, status: 'completed' });
  });

  it('POST /a2a/tasks/{id}/cancel marks a task whose agent is gone canceled (no turn of it runs), naming who cancelled it', async () => {
    const id = 'c0ffee00-0000-4000-8000-000000000002';
    await api.a2a.store.save(
      Task.fromJSON({ id, contextId: 'ctx', status: { state: 'TASK_STATE_WORKING' }, history: [], artifacts: [], metadata: { loomAgent: 'gone' } }),
    );
    const canceled = await api.request(`/a2a/tasks/${id}/cancel`, { method: 'POST' });
    expect(canceled.status).toBe(200);
    expect(await canceled.json()).toMatchObject({ id, status: 'cancelled' });
    const stored = await api.a2a.store.load(id);
    expect(stored?.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(JSON.stringify(stored?.status?.message)).toContain('cancelled by the owner');
  });

  it('evicts the oldest finished task past the bound; evicted tasks answer 404', async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    const ids: string[] = [];
    for (let index = 0; index < 4; index += 1) {
      model.script([{ text: `reply ${index}` }]);
      ids.push(((await (await api.request('/a2a/tasks/send', post(SEND_BODY))).json()) as { id: string }).id);
      // Tasks are dated by the host's clock: each one later than the one before.
      await api.host.clock.advance(1);
    }
    expect(await api.repository.count()).toBe(3);
    expect((await api.request(`/a2a/tasks/${ids[0] ?? ''}`)).status).toBe(404);
    for (const id of ids.slice(1)) expect((await api.request(`/a2a/tasks/${id}`)).status).toBe(200);
  });
});

describe('bad input', () => {
  beforeEach(async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
  });
  const rpc = async (body: string, headers: Record<string, string> = { 'content-type': 'application/json', 'A2A-Version': '1.0' }) => {
    const response = await api.request('/a2a/echo', post(body, headers));
    return (await response.json()) as { error?: { code: number } };
  };

  it('answers malformed JSON with -32700 and an unknown method with -32601 (1.0 and 0.3)', async () => {
    expect((await rpc('{"jsonrpc": "2.0", "id": 1, "method": ')).error?.code).toBe(-32700);
    expect((await rpc('{"jsonrpc": "2.0", "id": 1, "method": "NoSuchMethod", "params": {}}')).error?.code).toBe(-32601);
    expect((await rpc('{"jsonrpc": "2.0", "id": 1, "method": "no/such", "params": {}}', { 'content-type': 'application/json' })).error?.code).toBe(-32601);
  });

  it('answers an unknown task with -32001 (JSON-RPC 1.0 and 0.3) and 404 (HTTP+JSON)', async () => {
    expect((await rpc('{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}')).error?.code).toBe(-32001);
    expect(
      (await rpc('{"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "nope"}}', { 'content-type': 'application/json' })).error?.code,
    ).toBe(-32001);
    const rest = await api.request('/a2a/echo/rest/tasks/nope', { headers: { 'A2A-Version': '1.0' } });
    expect(rest.status).toBe(404);
  });

  it('answers a message with no text, or an oversized one, as invalid params (-32602), and keeps serving', async () => {
    const empty = await rpc('{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER"}}}');
    expect(empty.error?.code).toBe(-32602);
    const huge = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'x'.repeat(1024 * 1024 + 1) }] } },
    });
    expect((await rpc(huge)).error?.code).toBe(-32602);
    const hugeLegacy = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'message/send',
      params: { message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'x'.repeat(1024 * 1024 + 1) }] } },
    });
    expect((await rpc(hugeLegacy, { 'content-type': 'application/json' })).error?.code).toBe(-32602);
    const tooLarge = await rpc(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { pad: 'x'.repeat(4 * 1024 * 1024) } }));
    expect(tooLarge.error?.code).toBe(-32600);
    model.script([{ text: 'still here' }]);
    const good = (await rpc(
      '{"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": {"messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}',
    )) as { result?: { task?: { status?: { state?: string } } } };
    expect(good.result?.task?.status?.state).toBe('TASK_STATE_COMPLETED');
  });
});
