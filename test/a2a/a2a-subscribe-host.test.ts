/**
 * A task followed through another Host than the one its message named (a client at
 * `http://localhost:…`, another at `http://127.0.0.1:…` of the same daemon): its subscription
 * follows the task's own events as they come, on every binding, while each card names the Host it
 * was asked at.
 */
import { type StreamResponse, TaskState } from '@a2a-js/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentToml, type Api, startApi } from '../http/api-harness.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { a2aClient, textMessage } from './a2a-sdk-client.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api;

beforeEach(async () => {
  dir = await makeTempDir('loom-a2a-subscribe-host-');
  api = await startApi(dir.path);
});
afterEach(async () => {
  await api.close();
  await dir.remove();
});

/** The state an event of a task's stream gives it, if any. */
const stateOf = (event: StreamResponse | undefined): TaskState | undefined =>
  event?.payload?.$case === 'statusUpdate'
    ? event.payload.value.status?.state
    : event?.payload?.$case === 'task'
      ? event.payload.value.status?.state
      : undefined;

describe.each([
  ['JSONRPC', '1.0'],
  ['HTTP+JSON', '1.0'],
  ['JSONRPC', '0.3'],
  ['HTTP+JSON', '0.3'],
] as const)('a task subscribed to through another Host, over %s (A2A %s)', (transport, version) => {
  it("follows the task's own updates to its end, as a subscription through the Host that started it does", async () => {
    const toml = agentToml('careful', model.url, '[capabilities]\ntools = ["file_write"]\n[autonomous]\napproval_required_for = ["file_write"]');
    await api.host.kernel.spawn(manifest(toml));
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'approved.txt', content: 'ok' } }] }, { text: 'written after approval' }]);
    const port = new URL(api.url).port;
    const starter = await a2aClient(`http://127.0.0.1:${port}`, 'careful', 'none', transport, version);
    const follower = await a2aClient(`http://localhost:${port}`, 'careful', 'none', transport, version);
    // Each card names the Host it was asked at.
    expect((await follower.getAgentCard()).supportedInterfaces.every((entry) => entry.url.startsWith(`http://localhost:${port}/`))).toBe(true);
    expect((await starter.getAgentCard()).supportedInterfaces.every((entry) => entry.url.startsWith(`http://127.0.0.1:${port}/`))).toBe(true);
    // Started through one Host, it waits for the approval of its tool call.
    const started: StreamResponse[] = [];
    for await (const event of starter.sendMessageStream(textMessage('write approved.txt'))) started.push(event);
    expect(stateOf(started.at(-1))).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const id = started[0]?.payload?.$case === 'task' ? started[0].payload.value.id : '';
    // Followed through the other: its updates come from the task's own events (its reply streamed).
    const subscription = follower.resubscribeTask({ tenant: '', id });
    expect(stateOf((await subscription.next()).value as StreamResponse)).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const approval = await waitFor('the pending approval', async () => (await api.host.kernel.approvals.list())[0]);
    await api.host.kernel.approvals.decide(approval.id, { approved: true, by: 'owner', reason: null });
    const updates: StreamResponse[] = [];
    for await (const event of subscription) updates.push(event);
    expect(updates.map((event) => event.payload?.$case)).toContain('artifactUpdate');
    expect(stateOf(updates.at(-1))).toBe(TaskState.TASK_STATE_COMPLETED);
  });
});
