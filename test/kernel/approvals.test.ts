import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import type { ApprovalRecord } from '../../src/contracts/index.ts';
import { type ApprovalEvent, ApprovalService, createUuidGenerator } from '../../src/kernel/index.ts';
import type { AgentEvent } from '../../src/runtime/index.ts';
import { openSqliteStore, type SqliteStore } from '../../src/store/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { pendingApprovalRecord } from '../support/approval-record.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-approvals-');
});
afterEach(async () => {
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
  afterEach(async () => {
    await host.close();
  });

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
    expect(turn.events.find((event) => event.type === 'tool-result')).toMatchObject({
      isError: true,
      text: 'the call to file_write was not approved by owner: not today',
    });
    expect(JSON.stringify(server.requests[1]?.body['messages'])).toContain('not approved');
    await expect(host.kernel.approvals.decide(request.approvalId, { approved: true, by: 'owner', reason: null })).rejects.toThrow(
      /already decided: denied by owner/,
    );
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
    expect(turn.events.find((event) => event.type === 'tool-result')).toMatchObject({
      isError: true,
      text: 'the call to file_write was not approved (no decision within 60 s)',
    });
    expect(await host.kernel.approvals.list('all')).toMatchObject([{ id: request.approvalId, status: 'expired', decidedBy: 'timeout' }]);
    expect(existsSync(workspaceFile())).toBe(false);
  });

  it('close the request as expired when its turn is cancelled, and refuse a decision after it', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(careful()));
    server.script([writeCall]);
    const turn = startTurn('write it');
    const request = await turn.request;
    await host.kernel.suspend('careful');
    await turn.done;
    expect(turn.events.at(-1)).toMatchObject({ type: 'error' });
    expect(await host.kernel.approvals.list()).toEqual([]);
    const [closed] = await host.kernel.approvals.list('all');
    expect(closed).toMatchObject({ id: request.approvalId, status: 'expired', decidedBy: 'cancel', decidedAt: host.clock.now() });
    expect(closed?.reason).toBe(
      'the turn ended while this call waited for approval (agent "careful" was suspended during the turn); nothing was run — ask the agent again',
    );
    await expect(host.kernel.approvals.decide(request.approvalId, { approved: true, by: 'owner', reason: null })).rejects.toMatchObject({
      code: 'APPROVAL_DECIDED',
      message: expect.stringMatching(/already decided: expired by cancel \(the turn ended while this call waited/) as unknown,
    });
    expect(existsSync(workspaceFile())).toBe(false);
  });

  it('close a pending request as expired by shutdown when the daemon stops, so approving it after the restart is refused', async () => {
    host = await openTestHost(dir.path);
    await host.kernel.spawn(manifest(careful()));
    server.script([writeCall]);
    const turn = startTurn('write it');
    const request = await turn.request;
    await host.close(); // the daemon stops: the waiting turn is cancelled
    await turn.done;
    expect(turn.events.at(-1)).toMatchObject({ type: 'error' });

    host = await openTestHost(dir.path);
    expect(await host.kernel.approvals.list()).toEqual([]);
    expect(await host.kernel.approvals.list('all')).toMatchObject([
      {
        id: request.approvalId,
        status: 'expired',
        decidedBy: 'shutdown',
        reason: 'Loom was stopped while this waited for a person; nothing was run — ask the agent again',
      },
    ]);
    await expect(host.kernel.approvals.decide(request.approvalId, { approved: true, by: 'owner', reason: null })).rejects.toThrow(
      /already decided: expired by shutdown/,
    );
    expect(existsSync(workspaceFile())).toBe(false);
  });

  it('boot closes requests a crashed process left pending as expired by restart (passes once kernel.boot() calls approvals.expireInterrupted())', async () => {
    host = await openTestHost(dir.path);
    const agent = await host.kernel.spawn(manifest(careful()));
    await host.close();
    // A process that crashed while a call waited leaves its request pending in the store.
    const store = openSqliteStore({ path: host.home.databasePath });
    await store.approvals.create(leftPending('crashed-1', agent.id));
    await store.close();

    host = await openTestHost(dir.path);
    expect(await host.kernel.approvals.list()).toEqual([]);
    expect(await host.kernel.approvals.list('all')).toMatchObject([
      {
        id: 'crashed-1',
        status: 'expired',
        decidedBy: 'restart',
        decidedAt: host.clock.now(),
        reason: 'Loom restarted while this call waited for approval; nothing was run — ask the agent again',
      },
    ]);
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
    // The turn and its tool call are published too; this test looks at the approval's events.
    host.kernel.events.subscribe((event) => {
      if (event.type.startsWith('approval-')) types.push(event.type);
    });
    server.script([writeCall, { text: 'done' }]);
    const turn = startTurn('write it');
    await host.kernel.approvals.decide((await turn.request).approvalId, { approved: true, by: 'owner', reason: null });
    await turn.done;
    expect(types).toEqual(['approval-request', 'approval-decide']);
    expect((await host.store.events.list({ type: 'approval-decide' }))[0]).toMatchObject({ data: { status: 'approved', by: 'owner', tool: 'file_write' } });
  });
});

/** A request as a process that is gone left it: pending, nobody waiting. */
function leftPending(id: string, agentId: string, requestedAt = 0): ApprovalRecord {
  return pendingApprovalRecord(id, requestedAt, { agentId, agentName: 'careful', input: { path: 'approved.txt', content: 'ok' } });
}

describe('ApprovalService across processes', () => {
  let store: SqliteStore;
  let clock: FakeClock;
  let published: ApprovalEvent[];
  let service: ApprovalService;

  beforeEach(() => {
    store = openSqliteStore({ path: join(dir.path, 'loom.db') });
    clock = createFakeClock(1_000_000);
    published = [];
    service = new ApprovalService({ store, clock, ids: createUuidGenerator(), timeoutMs: 60_000, publish: (event) => published.push(event) });
  });
  afterEach(async () => {
    await store.close();
  });
  it('expireInterrupted() closes every request a previous process left pending, on the injected clock, and announces each', async () => {
    await store.approvals.create(leftPending('old-1', 'agent-1'));
    await store.approvals.create(leftPending('old-2', 'agent-1', 10));
    await clock.advance(5_000);

    expect(await service.expireInterrupted()).toBe(2);
    expect(await store.approvals.list()).toMatchObject([
      {
        id: 'old-1',
        status: 'expired',
        decidedBy: 'restart',
        decidedAt: 1_005_000,
        reason: 'Loom restarted while this call waited for approval; nothing was run — ask the agent again',
      },
      { id: 'old-2', status: 'expired', decidedBy: 'restart', decidedAt: 1_005_000 },
    ]);
    expect(published).toMatchObject([
      { type: 'approval-decide', approvalId: 'old-1', status: 'expired', by: 'restart', at: 1_005_000 },
      { type: 'approval-decide', approvalId: 'old-2', status: 'expired', by: 'restart' },
    ]);
    expect(await service.expireInterrupted()).toBe(0);
  });

  it('expireInterrupted() leaves a request that a turn of this process waits for', async () => {
    const open = await service.open({ id: 'agent-1', name: 'careful' }, 'file_write', {}, new AbortController().signal);
    expect(await service.expireInterrupted()).toBe(0);
    expect(await service.decide(open.id, { approved: true, by: 'owner', reason: null })).toMatchObject({ status: 'approved' });
    await expect(open.decision).resolves.toEqual({ approved: true, by: 'owner', reason: null });
  });

  it('expireInterrupted() keeps the requests a resumed turn waits on; a decision made before the turn waits again is recorded, and resume() hands it to the turn', async () => {
    await store.approvals.create(leftPending('kept', 'agent-1'));
    await store.approvals.create(leftPending('orphan', 'agent-1'));
    expect(await service.expireInterrupted(new Set(['kept']))).toBe(1);
    expect(await service.decide('kept', { approved: true, by: 'owner', reason: null })).toMatchObject({ id: 'kept', status: 'approved', decidedBy: 'owner' });
    const resumed = await service.resume({ id: 'agent-1', name: 'careful' }, 'kept', new AbortController().signal);
    await expect(resumed?.decision).resolves.toEqual({ approved: true, by: 'owner', reason: null });
    expect((await store.approvals.list()).map(({ id, status }) => ({ id, status }))).toEqual([
      { id: 'kept', status: 'approved' },
      { id: 'orphan', status: 'expired' },
    ]);
  });

  it('resume() waits on a request still pending until a person decides it, and until the time it was to expire at', async () => {
    await store.approvals.create({ ...leftPending('decided', 'agent-1'), expiresAt: 1_060_000 });
    await store.approvals.create({ ...leftPending('undecided', 'agent-1'), expiresAt: 1_030_000 });
    await service.expireInterrupted(new Set(['decided', 'undecided']));
    const decided = await service.resume({ id: 'agent-1', name: 'careful' }, 'decided', new AbortController().signal);
    const undecided = await service.resume({ id: 'agent-1', name: 'careful' }, 'undecided', new AbortController().signal);
    expect(await service.decide('decided', { approved: false, by: 'owner', reason: 'not now' })).toMatchObject({ status: 'denied' });
    await expect(decided?.decision).resolves.toEqual({ approved: false, by: 'owner', reason: 'not now' });
    await clock.advance(30_000);
    await expect(undecided?.decision).resolves.toMatchObject({ approved: false, by: 'timeout' });
    expect(await store.approvals.get('undecided')).toMatchObject({ status: 'expired', decidedBy: 'timeout' });
    // Another agent's request, or one closed, is not waited on: the call asks again.
    await store.approvals.create(leftPending('other', 'agent-2'));
    expect(await service.resume({ id: 'agent-1', name: 'careful' }, 'other', new AbortController().signal)).toBeUndefined();
    expect(await service.resume({ id: 'agent-1', name: 'careful' }, 'undecided', new AbortController().signal)).toBeUndefined();
  });

  it('release() closes, as expired by restart, a request kept for a resumed turn that ended before it waited on it again', async () => {
    await store.approvals.create(leftPending('kept', 'agent-1'));
    await service.expireInterrupted(new Set(['kept']));
    await service.release(['kept']);
    expect(await store.approvals.get('kept')).toMatchObject({ status: 'expired', decidedBy: 'restart' });
    await expect(service.decide('kept', { approved: true, by: 'owner', reason: null })).rejects.toThrow(/already decided: expired by restart/);
  });

  it('decide() refuses a pending request that no turn waits for, closing it as expired instead of reporting an approval that runs nothing', async () => {
    await store.approvals.create(leftPending('orphan', 'agent-1'));
    await expect(service.decide('orphan', { approved: true, by: 'owner', reason: null })).rejects.toMatchObject({
      code: 'APPROVAL_DECIDED',
      message:
        'cannot approve approval "orphan": no turn waits for it any more (Loom restarted while this call waited for approval; nothing was run — ask the agent again); it is now expired',
    });
    expect(await store.approvals.get('orphan')).toMatchObject({ status: 'expired', decidedBy: 'restart' });
    await expect(service.decide('orphan', { approved: true, by: 'owner', reason: null })).rejects.toThrow(/already decided: expired by restart/);
    await expect(service.decide('nope', { approved: true, by: 'owner', reason: null })).rejects.toMatchObject({ code: 'APPROVAL_NOT_FOUND' });
  });

  it('a waiting turn takes a decision another process recorded, at its timeout, instead of waiting forever', async () => {
    const open = await service.open({ id: 'agent-1', name: 'careful' }, 'file_write', {}, new AbortController().signal);
    await store.approvals.decide(open.id, { status: 'denied', at: clock.now(), by: 'other', reason: 'from elsewhere' });
    await clock.advance(60_000);
    await expect(open.decision).resolves.toEqual({ approved: false, by: 'other', reason: 'from elsewhere' });
  });

  it('a turn cancelled before its request is opened closes it at once', async () => {
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    const open = await service.open({ id: 'agent-1', name: 'careful' }, 'file_write', {}, controller.signal);
    await expect(open.decision).rejects.toThrow('gone');
    expect(await store.approvals.get(open.id)).toMatchObject({
      status: 'expired',
      decidedBy: 'cancel',
      reason: 'the turn ended while this call waited for approval (gone); nothing was run — ask the agent again',
    });
  });
});
