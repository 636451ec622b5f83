import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml, type Api, startApi } from '../http/api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-rest-v03-');
  api = await startApi(dir.path, { env: { LOOM_API_KEY: 'secret' } });
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

const auth = { authorization: 'Bearer secret', 'content-type': 'application/json' };

describe('A2A 0.3 HTTP+JSON in the daemon (exact 0.3 request shapes, no A2A-Version header)', () => {
  // The 0.3 proto JSON the SDK reads and writes (`request`, `content`), as its 0.3 client sends it.
  it('POST /a2a/{agent}/v1/message:send runs the task, GET /v1/tasks/{id} returns it, behind the API key', async () => {
    await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
    model.script([{ text: 'Hello over 0.3 REST.' }]);
    const body = JSON.stringify({ request: { messageId: 'm-1', role: 'ROLE_USER', content: [{ text: 'Hi' }] } });
    expect((await api.request('/a2a/echo/v1/message:send', { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status).toBe(401);
    const sent = await api.request('/a2a/echo/v1/message:send', { method: 'POST', headers: auth, body });
    expect(sent.status).toBe(201); // the SDK's 0.3 router answers message:send with 201
    const result = (await sent.json()) as { task?: { id: string; status: { state: string }; artifacts: { parts: { text?: string }[] }[] } };
    expect(result.task?.status.state).toBe('TASK_STATE_COMPLETED');
    expect(result.task?.artifacts.flatMap((artifact) => artifact.parts.map((part) => part.text ?? '')).join('')).toBe('Hello over 0.3 REST.');
    const id = result.task?.id ?? '';
    const fetched = await api.request(`/a2a/echo/v1/tasks/${id}`, { headers: auth });
    expect(fetched.status).toBe(200);
    expect(await fetched.json()).toMatchObject({ id, status: { state: 'TASK_STATE_COMPLETED' } });
    const unknown = await api.request('/a2a/echo/v1/tasks/nope', { headers: auth });
    expect(unknown.status).toBe(404);
  });
});
