import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../src/store/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { type DaemonProcess, useDaemonHome } from '../support/daemon-process.ts';
import { waitFor } from '../support/wait-for.ts';
import { copies, type Session } from '../support/session-copies.ts';
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

/** What a clean stop during an A2A task must not log: the task's writes met the store closed, or a false warning. */
const FORBIDDEN_AT_STOP = /store .* is closed|Event processing loop failed|Received status update for unknown task|could not read how the turn/;

describe('a daemon killed (SIGKILL) while an A2A task runs', () => {
  /** Sends a task to the default agent (spec/05's `tasks/send`), answered once it ends. */
  const sendTask = (daemon: DaemonProcess, text: string): Promise<Response> =>
    post(
      daemon.url,
      '/a2a/tasks/send',
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/send', params: { message: { role: 'user', parts: [{ type: 'text', text }] } } }),
      'application/json',
    );
  /** The task as a client reads it (`tasks/get`, A2A 0.3 JSON-RPC, on the agent's endpoint). */
  const getTask = async (
    daemon: DaemonProcess,
    agent: string,
    id: string,
  ): Promise<{ contextId: string; status: { state: string }; artifacts?: unknown[] }> => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id } });
    return (
      (await (await post(daemon.url, `/a2a/${agent}`, body, 'application/json')).json()) as {
        result: { contextId: string; status: { state: string }; artifacts?: unknown[] };
      }
    ).result;
  };
  /** The id of the one task the store holds as working (read with the daemon down). */
  async function workingTask(): Promise<string> {
    const store = openSqliteStore({ path: join(daemons.home, 'data', 'loom.db') });
    try {
      const working = await store.tasks.list({ state: 'TASK_STATE_WORKING', limit: 10, offset: 0 });
      expect(working.total).toBe(1);
      return working.records[0]?.id ?? '';
    } finally {
      await store.close();
    }
  }
  /** The id of the one task the store holds, whatever its state (read with the daemon down). */
  async function onlyTask(): Promise<string> {
    const store = openSqliteStore({ path: join(daemons.home, 'data', 'loom.db') });
    try {
      const tasks = await store.tasks.list({ limit: 10, offset: 0 });
      expect(tasks.total).toBe(1);
      return tasks.records[0]?.id ?? '';
    } finally {
      await store.close();
    }
  }
  /** The task's state as the store holds it, read beside the running daemon (no A2A request made). */
  async function storedState(id: string): Promise<string | undefined> {
    const store = openSqliteStore({ path: join(daemons.home, 'data', 'loom.db') });
    try {
      return (await store.tasks.get(id))?.state;
    } finally {
      await store.close();
    }
  }
  /**
   * Starts a daemon with the agent `toml` (then runs `before` on it), and a task for it whose model
   * call never answers; kills the daemon during that call. Returns the task's id.
   */
  async function killDuringTask(toml: string, text: string, before?: (daemon: DaemonProcess) => Promise<void>): Promise<string> {
    const first = await startDaemon();
    expect((await post(first.url, '/api/agents', toml, 'application/toml')).status).toBe(201);
    await before?.(first);
    const asked = server.requests.length;
    server.script([{ text: 'never sent', gate: new Promise<never>(() => undefined) }]);
    const pending = sendTask(first, text).catch(() => undefined);
    await waitFor("the task's model call", () => server.requests.length > asked);
    first.child.kill('SIGKILL');
    await first.exited;
    await pending;
    return workingTask();
  }

  it("completes the task with its turn's reply once the turn resumed after the restart ends, and keeps the finished ones", async () => {
    const worker = `name = "worker"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
    let done = { id: '', status: '' };
    const interrupted = await killDuringTask(worker, 'tell me a story', async (first) => {
      server.script([{ text: 'done' }]);
      done = (await (await sendTask(first, 'finish this')).json()) as { id: string; status: string };
      expect(done.status).toBe('completed');
    });

    // The turn was recorded when the task took it: the next daemon resumes it, asking the model again.
    server.script([{ text: 'Once upon a time, after a restart.' }]);
    const second = await startDaemon();
    // At start, not at the first A2A request: a client waiting for a webhook asks nothing.
    await waitFor('the task to be completed in the store', async () => (await storedState(interrupted)) === 'TASK_STATE_COMPLETED');
    const task = await getTask(second, 'worker', interrupted);
    expect(task.status.state).toBe('completed');
    expect(JSON.stringify(task.status)).toContain('Once upon a time, after a restart.');
    expect(JSON.stringify(task.artifacts)).toContain('Once upon a time, after a restart.');
    expect(JSON.stringify(task)).not.toContain('interrupted');
    expect(server.requests).toHaveLength(3);
    // The message ran once: the task's conversation holds it and its reply once each.
    const session = (await (await fetch(`${second.url}/api/agents/worker/session?thread=a2a:${task.contextId}`)).json()) as Session;
    expect(copies(session, 'user', 'tell me a story')).toBe(1);
    expect(copies(session, 'assistant', 'Once upon a time, after a restart.')).toBe(1);
    expect((await getTask(second, 'worker', done.id)).status.state).toBe('completed');
    second.child.kill('SIGTERM');
    await second.exited;
  });

  it('a clean stop during a task ends it, after the restart, saying Loom shut down, as the turn ended: not as if its client canceled it', async () => {
    const first = await startDaemon();
    const worker = `name = "worker"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
    expect((await post(first.url, '/api/agents', worker, 'application/toml')).status).toBe(201);
    server.script([{ text: 'never sent', gate: new Promise<never>(() => undefined) }]);
    const pending = sendTask(first, 'tell me a story').catch(() => undefined);
    await waitFor("the task's model call", () => server.requests.length > 0);
    first.child.kill('SIGTERM');
    await first.exited;
    await pending;
    // No write of it meets the store closed unseen: the executor saves the turn's end before the
    // store closes, or its write is dropped and the task is left as it was for the next start.
    expect(first.output()).not.toMatch(FORBIDDEN_AT_STOP);
    const id = await onlyTask();
    const second = await startDaemon();
    const ended = await waitFor('the task to end', async () => {
      const state = await storedState(id);
      return state === 'TASK_STATE_WORKING' ? undefined : state;
    });
    // Either way the same end: the turn's, as its journal keeps it.
    expect(ended).toBe('TASK_STATE_CANCELED');
    const task = await getTask(second, 'worker', id);
    expect(task.status.state).toBe('canceled');
    expect(JSON.stringify(task.status)).toContain('agent \\"worker\\" stopped because Loom is shutting down during the turn');
    second.child.kill('SIGTERM');
    await second.exited;
  });

  it("a clean stop while a task's turn resumed after the restart runs logs nothing of the store closed or of the turn's end unread", async () => {
    const worker = `name = "worker"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
    await killDuringTask(worker, 'tell me a story');
    const asked = server.requests.length;
    server.script([{ text: 'never sent either', gate: new Promise<never>(() => undefined) }]);
    const second = await startDaemon();
    await waitFor('the resumed model call', () => server.requests.length > asked);
    second.child.kill('SIGTERM');
    await second.exited;
    expect(second.output()).not.toMatch(FORBIDDEN_AT_STOP);
  });

  it('fails a task whose turn was never recorded (an agent type whose turns are not journaled), saying why', async () => {
    const thinker = `name = "thinker"\nmodule = "builtin:chain-of-thought"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
    const interrupted = await killDuringTask(thinker, 'think about this');

    const second = await startDaemon();
    const task = await getTask(second, 'thinker', interrupted);
    expect(task.status.state).toBe('failed');
    expect(JSON.stringify(task)).toContain('The task was interrupted: the Loom daemon stopped while it ran. Send the message again.');
    expect(server.requests).toHaveLength(1);
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
