import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, type TestHost } from '../helpers/test-host.ts';
import { makeTempDir, manifest } from '../helpers/test-kernel.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-approvals-');
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const careful = (extra = ''): string =>
  `name = "careful"\n[capabilities]\ntools = ["file_write"]\n${extra}\n[autonomous]\napproval_required_for = ["file_write"]\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;

const writeCall = { toolCalls: [{ name: 'file_write', input: { path: 'approved.txt', content: 'ok' } }] };

/** Runs a turn, collecting its events, and resolves with the first approval request. */
function startTurn(message: string): { events: AgentEvent[]; done: Promise<void>; request: Promise<Extract<AgentEvent, { type: 'approval-request' }>> } {
  const events: AgentEvent[] = [];
  let found: (event: Extract<AgentEvent, { type: 'approval-request' }>) => void = () => undefined;
  const request = new Promise<Extract<AgentEvent, { type: 'approval-request' }>>((resolve) => {
    found = resolve;
  });
  const done = (async () => {
    for await (const event of host.kernel.stream('careful', message)) {
      events.push(event);
      if (event.type === 'approval-request') found(event);
    }
  })();
  return { events, done, request };
}

const workspaceFile = (): string => join(host.home.workspacesDir, 'careful', 'approved.txt');

describe('human approvals', () => {
  it('hold a listed tool call until a human approves it, then run it', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(careful()));
    server.script([writeCall, { text: 'written' }]);
    const turn = startTurn('write it');
    const request = await turn.request;
    expect(request).toMatchObject({ toolName: 'file_write', input: { path: 'approved.txt', content: 'ok' } });
    expect(existsSync(workspaceFile())).toBe(false);
    expect(await host.kernel.approvals.list()).toMatchObject([{ id: request.approvalId, tool: 'file_write', status: 'pending', agentName: 'careful' }]);

    const decided = await host.kernel.approvals.decide(request.approvalId, { approved: true, by: 'owner', reason: null });
    expect(decided).toMatchObject({ status: 'approved', decidedBy: 'owner' });
    await turn.done;
    expect(existsSync(workspaceFile())).toBe(true);
    expect(turn.events.find((event) => event.type === 'tool-result')).toMatchObject({ isError: false });
    expect(turn.events.at(-1)).toMatchObject({ type: 'run-finish', result: { text: 'written' } });
    expect(await host.kernel.approvals.list()).toEqual([]);
  });

  it('give the model an error, and run nothing, when a human denies the call', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(careful()));
    server.script([writeCall, { text: 'understood' }]);
    const turn = startTurn('write it');
    const request = await turn.request;
    await host.kernel.approvals.decide(request.approvalId, { approved: false, by: 'owner', reason: 'not today' });
    await turn.done;
    expect(existsSync(workspaceFile())).toBe(false);
    expect(turn.events.find((event) => event.type === 'tool-result')).toMatchObject({ isError: true, text: 'the call to file_write was not approved by owner: not today' });
    expect(JSON.stringify(server.requests[1]?.body['messages'])).toContain('not approved');
    await expect(host.kernel.approvals.decide(request.approvalId, { approved: true, by: 'owner', reason: null })).rejects.toThrow(/already decided: denied by owner/);
  });

  it('deny the call when nobody decides within [approvals].timeout_seconds', async () => {
    host = await openTestHost(dir.path, { approvals: { timeout_seconds: 60 } });
    await host.kernel.spawn(manifest(careful()));
    server.script([writeCall, { text: 'gave up' }]);
    const turn = startTurn('write it');
    const request = await turn.request;
    await host.clock.advance(59_000);
    expect(await host.kernel.approvals.list()).toHaveLength(1);
    await host.clock.advance(1_000);
    await turn.done;
    expect(turn.events.find((event) => event.type === 'tool-result')).toMatchObject({ isError: true, text: 'the call to file_write was not approved (no decision within 60 s)' });
    expect(await host.kernel.approvals.list('all')).toMatchObject([{ id: request.approvalId, status: 'expired', decidedBy: 'timeout' }]);
    expect(existsSync(workspaceFile())).toBe(false);
  });

  it('keep a pending approval across a restart, decidable after it', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(careful()));
    server.script([writeCall]);
    const turn = startTurn('write it');
    const request = await turn.request;
    await host.close(); // the daemon stops: the waiting turn is cancelled
    await turn.done;
    expect(turn.events.at(-1)).toMatchObject({ type: 'error' });

    host = await openTestHost(dir.path);
    expect(await host.kernel.approvals.list()).toMatchObject([{ id: request.approvalId, status: 'pending' }]);
    expect(await host.kernel.approvals.decide(request.approvalId, { approved: true, by: 'owner', reason: null })).toMatchObject({ status: 'approved' });
    // The turn that asked has ended: the decision is recorded, the call is not replayed.
    expect(existsSync(workspaceFile())).toBe(false);
  });

  it('do not ask about a call the agent may not make anyway', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(careful('[exec_policy]\nallow_file_write = false')));
    server.script([writeCall, { text: 'refused' }]);
    const turn = startTurn('write it');
    await turn.done;
    expect(turn.events.some((event) => event.type === 'approval-request')).toBe(false);
    expect(await host.kernel.approvals.list('all')).toEqual([]);
  });

  it('publish approval requests and decisions on the kernel event bus', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(careful()));
    const types: string[] = [];
    host.kernel.events.subscribe((event) => types.push(event.type));
    server.script([writeCall, { text: 'done' }]);
    const turn = startTurn('write it');
    await host.kernel.approvals.decide((await turn.request).approvalId, { approved: true, by: 'owner', reason: null });
    await turn.done;
    expect(types).toEqual(['approval-request', 'approval-decide']);
    expect((await host.store.events.list({ type: 'approval-decide' }))[0]).toMatchObject({ data: { status: 'approved', by: 'owner', tool: 'file_write' } });
  });
});
