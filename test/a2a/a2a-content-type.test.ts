import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { agentToml, type Api, startApi } from '../http/api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-content-type-');
  api = await startApi(dir.path);
  await api.host.kernel.spawn(manifest(agentToml('echo', model.url)));
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

/** A 1.0 `SendMessageRequest`, valid JSON whatever Content-Type it is sent under. */
const message = (id: string): string => JSON.stringify({ message: { messageId: id, role: 'ROLE_USER', parts: [{ text: 'Hi' }] } });

/** POSTs `body` to `path` as `type` (no Content-Type at all when undefined: the body is bytes, which fetch labels with nothing). */
const post = (path: string, body: string, type: string | undefined): Promise<Response> =>
  api.request(path, {
    method: 'POST',
    headers: type === undefined ? {} : { 'content-type': type },
    body: type === undefined ? new TextEncoder().encode(body) : body,
  });

const refusal = (type: string, accepted: string): string =>
  `unsupported Content-Type "${type}": this endpoint reads ${accepted} (a parameter such as "; charset=utf-8" may follow); send the body as JSON with one of them`;

describe('A2A 1.0 HTTP+JSON and the Content-Type of a request body', () => {
  it("answers 415 Unsupported Media Type, in the binding's error shape, for a body that is not JSON by its type, and runs nothing", async () => {
    // Replies for a turn, should one run (it did, on text/plain): the test then fails on the status, not on a hang.
    model.script([{ text: 'ran' }, { text: 'ran' }, { text: 'ran' }, { text: 'ran' }]);
    for (const [path, type] of [
      ['/a2a/echo/rest/message:send', 'text/plain'],
      ['/a2a/echo/rest/message:send', 'application/xml; charset=utf-8'],
      ['/a2a/echo/rest/message:stream', 'application/x-www-form-urlencoded'],
      ['/a2a/echo/rest/tasks/some-task:cancel', 'text/plain'],
    ] as const) {
      const response = await post(path, message(`m-${type}`), type);
      expect(response.status, `${path} as ${type}`).toBe(415);
      expect(response.headers.get('accept')).toBe('application/a2a+json, application/json');
      expect(await response.json()).toEqual({
        error: {
          code: 415,
          status: 'INVALID_ARGUMENT',
          message: refusal(type, 'application/a2a+json or application/json'),
          details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'CONTENT_TYPE_NOT_SUPPORTED', domain: 'a2a-protocol.org' }],
        },
      });
    }
    // Nothing reached the agent, and no task was made.
    expect(model.requests).toHaveLength(0);
    expect(await api.host.store.tasks.count()).toBe(0);
  });

  it('reads application/a2a+json and application/json, in any case and with parameters, and a body without a Content-Type, where it had read text/plain too', async () => {
    const types = ['application/a2a+json', 'application/json; charset=utf-8', 'Application/A2A+JSON; charset=UTF-8', undefined];
    model.script([...types, 'text/plain'].map(() => ({ text: 'Hello.' })));
    for (const type of types) {
      const response = await post('/a2a/echo/rest/message:send', message(`m-${type ?? 'none'}`), type);
      expect(response.status, `as ${type ?? 'no Content-Type'}`).toBe(200);
      expect(await response.json()).toMatchObject({ task: { status: { state: 'TASK_STATE_COMPLETED' } } });
    }
    const plain = await post('/a2a/echo/rest/message:send', message('m-plain'), 'text/plain;charset=UTF-8');
    expect(plain.status).toBe(415);
    expect(model.requests).toHaveLength(types.length);
  });
});

describe('A2A 0.3 HTTP+JSON and the Content-Type of a request body', () => {
  it("answers 415 in the 0.3 error shape for a body that is not application/json, before the SDK's router runs it", async () => {
    const body = JSON.stringify({ request: { messageId: 'm-1', role: 'ROLE_USER', content: [{ text: 'Hi' }] } });
    model.script([{ text: 'ran' }]);
    const refused = await post('/a2a/echo/v1/message:send', body, 'text/plain');
    expect(refused.status).toBe(415);
    expect(refused.headers.get('accept')).toBe('application/json');
    expect(await refused.json()).toEqual({ code: -32005, message: refusal('text/plain', 'application/json') });
    expect(model.requests).toHaveLength(0);

    const sent = await post('/a2a/echo/v1/message:send', body, 'application/json; charset=utf-8');
    expect(sent.status).toBe(201);
    expect(await sent.json()).toMatchObject({ task: { status: { state: 'TASK_STATE_COMPLETED' } } });
  });
});
