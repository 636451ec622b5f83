import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { type DaemonProcess, useDaemonHome } from '../support/daemon-process.ts';
import { waitFor } from '../support/wait-for.ts';
import { activityJson, bindingJson, packageConfigToml, writePackage } from '../packages/support.ts';

const server = useScriptedModelServer();
const daemons = useDaemonHome('loom-crash-');
const startDaemon = (): Promise<DaemonProcess> => daemons.start();

const post = (url: string, path: string, body: string, type: string): Promise<Response> =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': type }, body });

describe('a daemon killed (SIGKILL) during a chat', () => {
  it('comes back with every acknowledged message in the session and an intact database', async () => {
    const first = await startDaemon();
    const manifest = `name = "survivor"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
    expect((await post(first.url, '/api/agents', manifest, 'application/toml')).status).toBe(201);
    server.script([{ text: 'first answer' }, { text: 'second answer' }]);
    for (const message of ['first question', 'second question']) {
      expect((await post(first.url, '/api/agents/survivor/messages', JSON.stringify({ message }), 'application/json')).status).toBe(200);
    }
    // A third turn is under way (the model fails and is being retried) when the daemon is killed.
    const pending = post(first.url, '/api/agents/survivor/messages', JSON.stringify({ message: 'third question' }), 'application/json').catch(() => undefined);
    await waitFor("the third turn's model call", () => server.requests.length >= 3);
    first.child.kill('SIGKILL');
    await first.exited;
    await pending;

    const store = openSqliteStore({ path: join(daemons.home, 'data', 'loom.db') });
    try {
      expect(store.integrityCheck()).toEqual(['ok']);
    } finally {
      await store.close();
    }
    const second = await startDaemon();
    const session = (await (await fetch(`${second.url}/api/agents/survivor/session`)).json()) as { messages: unknown[] };
    const text = JSON.stringify(session.messages);
    expect(text).toMatch(/first question.*first answer.*second question.*second answer/);
    second.child.kill('SIGTERM');
    await second.exited;
  });
});

describe('a daemon killed (SIGKILL) while an A2A task runs', () => {
  it('fails the task after the restart, saying why, and keeps the finished ones', async () => {
    const first = await startDaemon();
    const manifest = `name = "worker"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
    expect((await post(first.url, '/api/agents', manifest, 'application/toml')).status).toBe(201);
    const send = (text: string): Promise<Response> =>
      post(
        first.url,
        '/a2a/tasks/send',
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/send', params: { message: { role: 'user', parts: [{ type: 'text', text }] } } }),
        'application/json',
      );
    server.script([{ text: 'done' }]);
    const done = (await (await send('finish this')).json()) as { id: string; status: string };
    expect(done.status).toBe('completed');
    // The next task's model fails and is being retried when the daemon is killed.
    const pending = send('this one is interrupted').catch(() => undefined);
    await waitFor("the interrupted task's model call", () => server.requests.length >= 3);
    first.child.kill('SIGKILL');
    await first.exited;
    await pending;

    const store = openSqliteStore({ path: join(daemons.home, 'data', 'loom.db') });
    let interrupted: string;
    try {
      const working = await store.tasks.list({ state: 'TASK_STATE_WORKING', limit: 10, offset: 0 });
      expect(working.total).toBe(1);
      interrupted = working.records[0]?.id ?? '';
    } finally {
      await store.close();
    }
    const second = await startDaemon();
    const task = (await (await fetch(`${second.url}/a2a/tasks/${interrupted}`)).json()) as { status: string };
    expect(task.status).toBe('failed');
    expect(JSON.stringify(task)).toContain('The task was interrupted: the Loom daemon stopped while it ran.');
    expect(((await (await fetch(`${second.url}/a2a/tasks/${done.id}`)).json()) as { status: string }).status).toBe('completed');
    second.child.kill('SIGTERM');
    await second.exited;
  });
});

describe('a daemon killed (SIGKILL) during a package run', () => {
  it('marks the run interrupted at the next start and resumes it without repeating the activity that finished', async () => {
    await mkdir(daemons.home, { recursive: true });
    await writeFile(join(daemons.home, 'config.toml'), packageConfigToml(server.url));
    const folder = await writePackage(daemons.dir, 'two-step', {
      workflows: { job: bindingJson({ type: 'manual' }, [activityJson('first'), activityJson('second')]) },
    });
    const first = await startDaemon();
    expect((await post(first.url, '/api/packages', JSON.stringify({ source: folder }), 'application/json')).status).toBe(201);
    // The first activity answers; the second's model call is still going when the daemon is killed.
    server.script([{ text: 'first done' }, { text: 'never sent', gate: new Promise<never>(() => undefined) }]);
    const pending = post(first.url, '/api/packages/two-step/bindings/job/run', '{}', 'application/json').catch(() => undefined);
    await waitFor("the second activity's model call", () => server.requests.length >= 2);
    expect(server.requests).toHaveLength(2);
    first.child.kill('SIGKILL');
    await first.exited;
    await pending;

    const store = openSqliteStore({ path: join(daemons.home, 'data', 'loom.db') });
    try {
      const [cut] = await store.packageRuns.list({ package: 'two-step' });
      expect(cut).toMatchObject({
        status: 'running',
        activities: [
          { id: 'first', status: 'completed' },
          { id: 'second', status: 'running' },
        ],
      });
    } finally {
      await store.close();
    }
    server.script([{ text: 'second done' }]);
    const second = await startDaemon();
    const runs = await waitFor('the resumed run to complete', async () => {
      const listed = (await (await fetch(`${second.url}/api/packages/runs?package=two-step`)).json()) as {
        status: string;
        activities: { output: string | null }[];
      }[];
      return listed[0]?.status === 'completed' ? listed : undefined;
    });
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: 'completed', activities: [{ output: 'first done' }, { output: 'second done' }] });
    expect(server.requests).toHaveLength(3);
    expect(JSON.stringify(server.requests[2]?.body)).toContain('first done');
    const audit = (await (await fetch(`${second.url}/api/audit?type=package-fire`)).json()) as unknown[];
    expect(audit).toHaveLength(2);
    second.child.kill('SIGTERM');
    await second.exited;
  });
});
