import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ApprovalView } from '../../src/http/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { agentToml, type Api, type ApiOptions, readSse, type SseEvent, startApi } from './api-harness.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let api: Api | undefined;

beforeEach(async () => {
  dir = await makeTempDir('loom-http-approvals-');
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await dir.remove();
});

const GUARDED = '[capabilities]\ntools = ["file_write"]\n\n[autonomous]\napproval_required_for = ["file_write"]\n';

async function open(options: ApiOptions = {}): Promise<Api> {
  api = await startApi(dir.path, { ...options, config: { daemon: { request_timeout_seconds: 60 }, ...options.config } });
  return api;
}

/** Spawns the guarded agent `writer` and sends it a message over SSE; returns the stream's events. */
async function startGuardedTurn(target: Api, headers: Record<string, string> = {}): Promise<AsyncGenerator<SseEvent>> {
  const spawned = await target.request('/api/agents', {
    method: 'POST',
    headers: { 'content-type': 'application/toml', ...headers },
    body: agentToml('writer', model.url, GUARDED),
  });
  expect(spawned.status).toBe(201);
  model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'notes.txt', content: 'approved content' } }] }, { text: 'Done writing.' }]);
  const response = await target.request('/api/agents/writer/messages', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify({ message: 'Write notes.txt' }),
  });
  expect(response.status).toBe(200);
  return readSse(response);
}

/** Reads events (bounded by the stream's own end) until one of type `type`; returns its data. */
async function until<T>(events: AsyncGenerator<SseEvent>, type: string, seen: string[] = []): Promise<T> {
  for (let next = await events.next(); next.done !== true; next = await events.next()) {
    if (next.value.event !== undefined) seen.push(next.value.event);
    if (next.value.event === type) return JSON.parse(next.value.data) as T;
  }
  throw new Error(`the stream ended without a ${type} event; saw ${seen.join(', ')}`);
}

const post = (body?: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
});

const workspaceFile = (target: Api): string => join(target.host.home.workspacesDir, 'writer', 'notes.txt');

interface ApprovalRequestEvent {
  approvalId: string;
  toolName: string;
  input: unknown;
  expiresAt: string;
}

describe('approvals over HTTP', () => {
  it('lists a waiting file_write as pending, and approving it over POST /api/approvals/:id/approve runs the tool and finishes the turn', async () => {
    const target = await open();
    const events = await startGuardedTurn(target);
    const request = await until<ApprovalRequestEvent>(events, 'approval-request');
    expect(request).toMatchObject({ toolName: 'file_write', input: { path: 'notes.txt', content: 'approved content' } });
    expect(existsSync(workspaceFile(target))).toBe(false);

    const pending = (await (await target.request('/api/approvals')).json()) as ApprovalView[];
    expect(pending).toEqual([
      {
        id: request.approvalId,
        agent_id: target.host.kernel.get('writer').id,
        agent: 'writer',
        tool: 'file_write',
        input: { path: 'notes.txt', content: 'approved content' },
        status: 'pending',
        requested_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown,
        expires_at: request.expiresAt,
        decided_at: null,
        decided_by: null,
        reason: null,
      },
    ]);

    const approved = await target.request(`/api/approvals/${request.approvalId}/approve`, post({ reason: 'looks fine' }));
    expect(approved.status).toBe(200);
    expect(await approved.json()).toMatchObject({ id: request.approvalId, status: 'approved', decided_by: 'local', reason: 'looks fine' });

    const result = await until<{ toolName: string; isError: boolean; text: string }>(events, 'tool-result');
    expect(result).toMatchObject({ toolName: 'file_write', isError: false });
    const finish = await until<{ result: { text: string } }>(events, 'run-finish');
    expect(finish.result.text).toBe('Done writing.');
    expect(await readFile(workspaceFile(target), 'utf8')).toBe('approved content');

    expect(await (await target.request('/api/approvals')).json()).toEqual([]);
    expect(await (await target.request('/api/approvals?status=approved')).json()).toMatchObject([{ id: request.approvalId, status: 'approved' }]);
  });

  it('denying with no body gives the tool call an error result, writes no file, and the turn still finishes', async () => {
    const target = await open();
    const events = await startGuardedTurn(target);
    const request = await until<ApprovalRequestEvent>(events, 'approval-request');
    const denied = await target.request(`/api/approvals/${request.approvalId}/deny`, post());
    expect(denied.status).toBe(200);
    expect(await denied.json()).toMatchObject({ status: 'denied', decided_by: 'local', reason: null });
    expect(await until<{ isError: boolean }>(events, 'tool-result')).toMatchObject({ toolName: 'file_write', isError: true });
    await until(events, 'run-finish');
    expect(existsSync(workspaceFile(target))).toBe(false);
    expect(await (await target.request('/api/approvals?status=all')).json()).toMatchObject([{ id: request.approvalId, status: 'denied' }]);
  });

  it('answers 409 when an approval is decided a second time, 404 for an unknown id, and 400 for a bad status or body', async () => {
    const target = await open();
    const events = await startGuardedTurn(target);
    const { approvalId } = await until<ApprovalRequestEvent>(events, 'approval-request');
    expect((await target.request(`/api/approvals/${approvalId}/approve`, post())).status).toBe(200);

    const again = await target.request(`/api/approvals/${approvalId}/deny`, post({ reason: 'changed my mind' }));
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ error: { code: 'APPROVAL_DECIDED', message: expect.stringContaining('approved by local') as unknown } });
    await until(events, 'run-finish');

    const unknown = await target.request('/api/approvals/no-such-approval/approve', post());
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'APPROVAL_NOT_FOUND' } });

    const badStatus = await target.request('/api/approvals?status=maybe');
    expect(badStatus.status).toBe(400);
    expect(await badStatus.json()).toMatchObject({ error: { code: 'INVALID_REQUEST', message: expect.stringContaining('status') as unknown } });
    const badBody = await target.request('/api/approvals/no-such-approval/deny', post({ reason: 42 }));
    expect(badBody.status).toBe(400);
    expect(await badBody.json()).toMatchObject({ error: { code: 'INVALID_REQUEST', message: expect.stringContaining('reason') as unknown } });
  });

  it('lets viewer and user keys list approvals but answers 403 when they approve or deny; an owner key decides, recorded by its name', async () => {
    const target = await open({
      config: {
        auth: {
          keys: [
            { name: 'admin', role: 'owner', key_env: 'ADMIN_KEY' },
            { name: 'writer-bot', role: 'user', key_env: 'USER_KEY', agents: ['writer'] },
            { name: 'dashboard', role: 'viewer', key_env: 'VIEWER_KEY' },
          ],
        },
      },
      env: { ADMIN_KEY: 'admin-secret', USER_KEY: 'user-secret', VIEWER_KEY: 'viewer-secret' },
    });
    const as = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });
    const events = await startGuardedTurn(target, as('admin-secret'));
    const { approvalId } = await until<ApprovalRequestEvent>(events, 'approval-request');

    expect((await target.request('/api/approvals')).status).toBe(401);
    for (const key of ['viewer-secret', 'user-secret']) {
      const listed = await target.request('/api/approvals', { headers: as(key) });
      expect(listed.status).toBe(200);
      expect(await listed.json()).toMatchObject([{ id: approvalId }]);
      for (const verb of ['approve', 'deny']) {
        const refused = await target.request(`/api/approvals/${approvalId}/${verb}`, post(undefined, as(key)));
        expect(refused.status).toBe(403);
        expect(await refused.json()).toMatchObject({ error: { code: 'ACCESS_DENIED', message: expect.stringContaining('owner role') as unknown } });
      }
    }

    const approved = await target.request(`/api/approvals/${approvalId}/approve`, post(undefined, as('admin-secret')));
    expect(await approved.json()).toMatchObject({ status: 'approved', decided_by: 'admin' });
    await until(events, 'run-finish');
  });
});
