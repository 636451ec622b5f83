/**
 * What an A2A message costs of the API's rate limit ([rate_limit].per_minute): a message that
 * starts a turn is charged a turn (a message's units), one refused before any turn starts, naming a
 * task its caller cannot reach here or one that does not exist, only a request's.
 */
import { type Task, TaskState } from '@a2a-js/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentToml, type Api, OWNER_AND_HELPER_KEYS, startApi } from '../http/api-harness.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
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
  it('charges a message naming a task its caller cannot reach, or none, as a request, not a turn, over every binding', async () => {
    // A key's minute: its four cards and eight refused messages as requests (5 units each), and one
    // turn (30); eight refused messages charged as turns would take 240.
    const config = { ...OWNER_AND_HELPER_KEYS.config, rate_limit: { per_minute: 100 } };
    api = await startApi(dir.path, { ...OWNER_AND_HELPER_KEYS, config });
    await api.host.kernel.spawn(manifest(agentToml('helper-echo', model.url)));
    model.script([{ text: "The owner's reply." }, { text: 'A turn, started.' }]);
    // The owner's task: another key's, which `helper-bot` does not see.
    const owners = (await (await a2aClient(api.url, 'helper-echo', 'admin-secret')).sendMessage(textMessage('Hi'))) as Task;
    expect(owners.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    let client: Awaited<ReturnType<typeof a2aClient>> | undefined;
    for (const [transport, version] of BINDINGS) {
      client = await a2aClient(api.url, 'helper-echo', 'helper-secret', transport, version);
      for (const taskId of ['no-such-task', owners.id]) {
        const sent = textMessage('Go on');
        const refused = await client.sendMessage({ ...sent, message: { ...sent.message, taskId } }).then(
          () => 'answered',
          (error: unknown) => String(error),
        );
        expect({ transport, version, taskId, refused }).toEqual({ transport, version, taskId, refused: expect.stringMatching(/task not found/i) as string });
      }
    }
    // The key's minute still holds a turn.
    const started = (await client?.sendMessage(textMessage('Start'))) as Task;
    expect(started.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(model.requests).toHaveLength(2);
  });
});
