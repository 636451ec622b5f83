/**
 * What an A2A message costs of the API's rate limit ([rate_limit].per_minute): a message that
 * starts a turn is charged a turn (a message's units), one refused before any turn starts (naming a
 * task its caller cannot reach here, one that does not exist or has ended, or another context than
 * its task's) only a request's.
 */
import { type Task, TaskState } from '@a2a-js/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentToml, type Api, OWNER_AND_HELPER_KEYS, startApi } from '../http/api-harness.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { a2aClient, textMessage } from './a2a-sdk-client.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-turn-charge-');
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await dir.remove();
});

const BINDINGS = [
  ['JSONRPC', '1.0'],
  ['HTTP+JSON', '1.0'],
  ['JSONRPC', '0.3'],
  ['HTTP+JSON', '0.3'],
] as const;

describe('the rate limit of A2A messages', () => {
  it('charges a message refused before any turn starts as a request, not a turn, over every binding', async () => {
    // A key's minute: two tasks of its own started (30 each), its six cards and sixteen refused
    // messages as requests (5 units each), and one turn more (30): 200 of 205. One refused message
    // charged as a turn would take 25 more.
    const config = { ...OWNER_AND_HELPER_KEYS.config, rate_limit: { per_minute: 205 } };
    api = await startApi(dir.path, { ...OWNER_AND_HELPER_KEYS, config });
    await api.host.kernel.spawn(manifest(agentToml('helper-echo', model.url)));
    model.script([
      { text: "The owner's reply." },
      { text: 'Done.' },
      { text: 'never said', gate: new Promise<never>(() => undefined) },
      { text: 'A turn, started.' },
    ]);
    // The owner's task: another key's, which `helper-bot` does not see.
    const owners = (await (await a2aClient(api.url, 'helper-echo', 'admin-secret')).sendMessage(textMessage('Hi'))) as Task;
    expect(owners.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // `helper-bot`'s own tasks: one ended, one working (its model call never answers).
    const own = await a2aClient(api.url, 'helper-echo', 'helper-secret');
    const ended = (await own.sendMessage(textMessage('Say done'))) as Task;
    expect(ended.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const configuration = { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true };
    const working = (await own.sendMessage({ ...textMessage('Tell me a story'), configuration })) as Task;
    await waitFor("the working task's model call", () => model.requests.length >= 3);
    const refusals = [
      { taskId: 'no-such-task', contextId: '', refused: /task not found/i },
      { taskId: owners.id, contextId: '', refused: /task not found/i },
      { taskId: ended.id, contextId: '', refused: /terminal state/i },
      { taskId: working.id, contextId: 'another-context', refused: /contextId mismatch/i },
    ];
    for (const [transport, version] of BINDINGS) {
      const client = await a2aClient(api.url, 'helper-echo', 'helper-secret', transport, version);
      for (const { taskId, contextId, refused } of refusals) {
        const sent = textMessage('Go on');
        const answer = await client.sendMessage({ ...sent, message: { ...sent.message, taskId, contextId } }).then(
          () => 'answered',
          (error: unknown) => String(error),
        );
        expect({ transport, version, taskId, answer }).toEqual({ transport, version, taskId, answer: expect.stringMatching(refused) as string });
      }
    }
    // The key's minute still holds a turn (of another agent: helper-echo's turns wait behind the working task's).
    await api.host.kernel.spawn(manifest(agentToml('helper-other', model.url)));
    const started = (await (await a2aClient(api.url, 'helper-other', 'helper-secret')).sendMessage(textMessage('Start'))) as Task;
    expect(started.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(model.requests).toHaveLength(4);
  });

  it("reads a 0.3 HTTP+JSON message's ids as the SDK's router does: a task id that is not a string names the task its `String` makes", async () => {
    // A key's minute: a card and a task (35), a request (5); a turn more (25) would take 65.
    const config = { ...OWNER_AND_HELPER_KEYS.config, rate_limit: { per_minute: 60 } };
    api = await startApi(dir.path, { ...OWNER_AND_HELPER_KEYS, config });
    await api.host.kernel.spawn(manifest(agentToml('helper-echo', model.url)));
    model.script([{ text: 'never said', gate: new Promise<never>(() => undefined) }]);
    const configuration = { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true };
    const client = await a2aClient(api.url, 'helper-echo', 'helper-secret');
    const working = (await client.sendMessage({ ...textMessage('Tell me a story'), configuration })) as Task;
    // `["<id>"]`: the router's `String` makes it the working task's id, and the message would start a turn of it.
    const body = JSON.stringify({ request: { messageId: 'm-2', taskId: [working.id], role: 'ROLE_USER', content: [{ text: 'Go on' }] } });
    const headers = { authorization: 'Bearer helper-secret', 'content-type': 'application/json' };
    const sent = await api.request('/a2a/helper-echo/v1/message:send', { method: 'POST', headers, body });
    expect({ status: sent.status, body: await sent.text() }).toEqual({ status: 429, body: expect.stringContaining('RATE_LIMITED') as string });
    const seen = await client.getTask({ tenant: '', id: working.id, historyLength: undefined });
    expect(seen.history.map((message) => message.messageId)).toEqual([working.history[0]?.messageId]);
  });
});
