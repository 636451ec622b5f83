import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WorkflowRecord, WorkflowState } from '../../src/contracts/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { createRecordingLogger, type RecordingLogger } from '../support/recording-logger.ts';
import { waitFor } from '../support/wait-for.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { untilWorkflowState, workflowOf } from './workflow-state.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

const model = () => `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;
const lead = (extra = '') =>
  manifest(
    `name = "lead"\nmodule = "builtin:workflow"\n${model()}system_prompt = "You lead projects."\n[capabilities]\ntools = ["agent_message"]\nagent_message = ["researcher", "writer"]\n[workflow]\nmanaged_agents = ["researcher", "writer"]\n${extra}`,
  );
const json = (value: unknown) => ({ text: JSON.stringify(value) });
const task = (id: string, agent: string, dependsOn: string[] = []) => ({
  id,
  title: `task ${id}`,
  instruction: `do ${id}`,
  agent,
  depends_on: dependsOn,
  acceptance: `${id} is done`,
});
const twoTasks = json({ summary: 'research, then write', missing_info: null, tasks: [task('t1', 'researcher'), task('t2', 'writer', ['t1'])] });
const accept = json({ accepted: true, feedback: '' });

let logger: RecordingLogger;

async function open(runSchedules = true): Promise<void> {
  logger = createRecordingLogger();
  host = await openTestHost(dir.path, {}, undefined, { runSchedules, logger });
}

beforeEach(async () => {
  dir = await makeTempDir('loom-workflow-');
  await open();
  await host.kernel.spawn(manifest(`name = "researcher"\ndescription = "Finds facts"\n${model()}`));
  await host.kernel.spawn(manifest(`name = "writer"\ndescription = "Writes prose"\n${model()}`));
  await host.kernel.spawn(lead());
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const workflow = (): Promise<WorkflowRecord | undefined> => workflowOf(host, 'lead');
const until = (states: readonly WorkflowState[]): Promise<WorkflowRecord> => untilWorkflowState(host, 'lead', states);
const bodyOf = (index: number): string => JSON.stringify(server.requests[index]?.body ?? {});

describe('builtin:workflow', () => {
  it('plans, waits for approval, runs the tasks in order with acceptance, and reports; status reads the stored plan', async () => {
    server.script([twoTasks]);
    const planned = await host.kernel.send('lead', 'a report on tides');
    expect(planned.text).toContain('Workflow (awaiting approval; 0/2 tasks done): research, then write');
    expect(planned.text).toContain('- t2 [pending] task t2 → writer after t1');
    expect(planned.text).toContain('Say "go" to start');
    expect((await host.kernel.send('lead', 'status')).text).toContain('awaiting approval');
    expect(server.requests).toHaveLength(1);

    server.script([
      { text: 'tides follow the moon' },
      accept,
      { text: 'A fine report on tides.' },
      accept,
      { text: 'Both tasks done: the report is written.' },
    ]);
    expect((await host.kernel.send('lead', 'go')).text).toBe('Starting: 2 tasks. Say "status" for progress, "pause" to stop after the current task.');
    const done = await until(['completed', 'failed']);
    expect(done).toMatchObject({ state: 'completed', note: 'Both tasks done: the report is written.' });
    expect(done.tasks.map((entry) => [entry.id, entry.status, entry.attempts, entry.result])).toEqual([
      ['t1', 'completed', 1, 'tides follow the moon'],
      ['t2', 'completed', 1, 'A fine report on tides.'],
    ]);
    // The writer was given the researcher's result.
    expect(bodyOf(3)).toContain('tides follow the moon');
    expect((await host.kernel.send('lead', 'status')).text).toContain('Both tasks done: the report is written.');
    // Every change of state and every task's outcome is an event (audit log and event stream).
    const states = await host.kernel.audit({ agent: 'lead', type: 'workflow-state-change' });
    expect(states.map((event) => event.data['state'])).toEqual(['awaiting_approval', 'executing', 'completed']);
    expect((await host.kernel.audit({ agent: 'lead', type: 'workflow-task-finish' })).map((event) => [event.data['task'], event.data['status']])).toEqual([
      ['t1', 'completed'],
      ['t2', 'completed'],
    ]);
  });

  it('retries a rejected task with a better instruction, and blocks what depends on a blocked task', async () => {
    server.script([twoTasks]);
    await host.kernel.send('lead', 'a report');
    server.script([
      { text: 'vague' },
      json({ accepted: false, feedback: 'no sources' }),
      json({ action: 'retry', improved_instruction: 'do t1 with sources', reason: 'fixable' }),
      { text: 'sourced facts' },
      json({ accepted: false, feedback: 'still thin' }),
      json({ action: 'blocked', improved_instruction: null, reason: 'the sources are paywalled' }),
      { text: 'Nothing could be written: research was blocked.' },
    ]);
    await host.kernel.send('lead', 'go');
    const ended = await until(['completed', 'failed']);
    expect(ended.state).toBe('failed');
    expect(ended.tasks.map((entry) => [entry.id, entry.status, entry.attempts, entry.feedback])).toEqual([
      ['t1', 'blocked', 2, 'the sources are paywalled'],
      ['t2', 'blocked', 0, 'blocked: t1 did not complete'],
    ]);
    expect(bodyOf(4)).toContain('do t1 with sources');
  });

  it('stalls for the user when the model says so, and takes the reply as feedback that replans, keeping finished tasks', async () => {
    server.script([twoTasks]);
    await host.kernel.send('lead', 'a report');
    server.script([
      { text: 'facts' },
      accept,
      { text: 'draft' },
      json({ accepted: false, feedback: 'wrong tone' }),
      json({ action: 'stall', improved_instruction: null, reason: 'which tone is wanted?' }),
    ]);
    await host.kernel.send('lead', 'go');
    const stalled = await until(['stalled']);
    expect(stalled.note).toBe('Stalled at task t2: which tone is wanted?. Tell me how to go on, or "cancel".');
    server.script([json({ summary: 'rewrite in a formal tone', missing_info: null, tasks: [task('t3', 'writer', ['t1'])] })]);
    const replanned = await host.kernel.send('lead', 'formal, please');
    expect(replanned.text).toContain('- t1 [completed] task t1 → researcher');
    expect(replanned.text).toContain('- t3 [pending] task t3 → writer after t1');
    expect((await workflow())?.state).toBe('awaiting_approval');
  });

  it('replans the rest when the model decides so, keeping the completed tasks, at most max_replans times', async () => {
    server.script([twoTasks]);
    await host.kernel.send('lead', 'a report');
    server.script([
      { text: 'facts' },
      accept,
      { text: 'a poem' },
      json({ accepted: false, feedback: 'not a report' }),
      json({ action: 'replan', improved_instruction: null, reason: 'the writer needs an outline first' }),
      json({ summary: 'outline, then write', missing_info: null, tasks: [task('t3', 'writer', ['t1']), task('t4', 'writer', ['t3'])] }),
      { text: 'outline' },
      accept,
      { text: 'the report' },
      accept,
      { text: 'Done after one replan.' },
    ]);
    await host.kernel.send('lead', 'go');
    const done = await until(['completed', 'failed']);
    expect(done).toMatchObject({ state: 'completed', replans: 1, note: 'Done after one replan.' });
    // The task the replan dropped stays in the record, skipped (spec/03), where it vanished.
    expect(done.tasks.map((entry) => [entry.id, entry.status, entry.feedback])).toEqual([
      ['t1', 'completed', null],
      ['t3', 'completed', null],
      ['t4', 'completed', null],
      ['t2', 'skipped', 'skipped: replan 1 dropped it'],
    ]);
    expect((await host.kernel.send('lead', 'status')).text).toContain('- t2 [skipped] task t2 → writer after t1 (skipped: replan 1 dropped it)');
  });

  it('blocks the task whose dependency failed and skips what depends on it in turn, then ends failed', async () => {
    await host.kernel.kill('lead');
    await host.kernel.spawn(lead('max_task_attempts = 1\n'));
    server.script([
      json({
        summary: 'research, write, edit',
        missing_info: null,
        tasks: [task('t1', 'researcher'), task('t2', 'writer', ['t1']), task('t3', 'writer', ['t2'])],
      }),
    ]);
    await host.kernel.send('lead', 'a report');
    server.script([
      { text: 'nothing found' },
      json({ accepted: false, feedback: 'no facts' }),
      json({ action: 'retry', improved_instruction: 'try again', reason: 'fixable' }),
      { text: 'The research failed, so nothing was written.' },
    ]);
    await host.kernel.send('lead', 'go');
    const ended = await until(['completed', 'failed']);
    expect(ended.state).toBe('failed');
    expect(ended.tasks.map((entry) => [entry.id, entry.status, entry.feedback])).toEqual([
      ['t1', 'failed', 'failed after 1 attempts: no facts'],
      ['t2', 'blocked', 'blocked: t1 did not complete'],
      ['t3', 'skipped', 'skipped: t2 never ran, after a failure upstream'],
    ]);
  });

  it('runs independent tasks side by side up to max_parallel_tasks', async () => {
    await host.kernel.kill('lead');
    await host.kernel.spawn(lead('max_parallel_tasks = 2\n'));
    server.script([json({ summary: 'two at once', missing_info: null, tasks: [task('a', 'researcher'), task('b', 'writer')] })]);
    await host.kernel.send('lead', 'two things');
    let release: () => void = () => undefined;
    server.script([{ text: 'a done', gate: new Promise<void>((resolve) => (release = resolve)) }, { text: 'b done' }, accept, accept, { text: 'both' }]);
    await host.kernel.send('lead', 'go');
    // The second task's delegated call arrives while the first is still held back.
    await waitFor("the second task's delegated call", () => server.requests.length >= 3);
    release();
    expect((await until(['completed'])).tasks.map((entry) => entry.status)).toEqual(['completed', 'completed']);
  });

  it('asks the user when the plan needs more information, and asks the model again once for a plan naming an unknown agent', async () => {
    server.script([json({ summary: '', missing_info: 'Which coast?', tasks: [] })]);
    expect((await host.kernel.send('lead', 'tides report')).text).toBe('Which coast?');
    expect(await workflow()).toBeUndefined();

    server.script([
      json({ summary: 'x', missing_info: null, tasks: [task('t1', 'intern')] }),
      json({ summary: 'x', missing_info: null, tasks: [task('t1', 'intern')] }),
    ]);
    await expect(host.kernel.send('lead', 'the Atlantic coast')).rejects.toThrow(
      'workflow "lead": the model\'s plan could not run, twice: task "t1" is assigned to "intern", which is not one of the agents (researcher, writer)',
    );
    expect(bodyOf(2)).toContain('That plan cannot run');
  });

  it('pauses after the task under way, and resumes', async () => {
    server.script([twoTasks]);
    await host.kernel.send('lead', 'a report');
    let release: () => void = () => undefined;
    server.script([{ text: 'facts', gate: new Promise<void>((resolve) => (release = resolve)) }, accept]);
    await host.kernel.send('lead', 'go');
    await waitFor("the first task's delegated call", () => server.requests.length >= 2);
    expect((await host.kernel.send('lead', 'pause')).text).toContain('Workflow (paused;');
    release();
    // The run in the background says when it stops: after the task under way, nothing new started.
    await waitFor('the paused workflow to stop running', () =>
      logger.entries.some((entry) => entry.message === 'the workflow of agent "lead" stopped running in the background'),
    );
    expect((await workflow())?.tasks.map((entry) => entry.status)).toEqual(['completed', 'pending']);
    expect(server.requests).toHaveLength(3);

    server.script([{ text: 'prose' }, accept, { text: 'done' }]);
    expect((await host.kernel.send('lead', 'resume')).text).toBe('Resuming the workflow.');
    expect((await until(['completed'])).tasks.map((entry) => entry.status)).toEqual(['completed', 'completed']);
  });

  it('goes on after a restart, running again the task that was under way', async () => {
    server.script([twoTasks]);
    await host.kernel.send('lead', 'a report');
    server.script([{ text: 'never answered', gate: new Promise(() => undefined) }]);
    await host.kernel.send('lead', 'go');
    await waitFor("the first task's delegated call", () => server.requests.length >= 2);
    await host.close();
    expect((await host.store.workflows.get(host.kernel.get('lead').id).catch(() => undefined))?.state ?? 'closed').toBe('closed');

    server.script([{ text: 'facts' }, accept, { text: 'prose' }, accept, { text: 'All done after the restart.' }]);
    await open();
    const done = await until(['completed']);
    expect(done.tasks.map((entry) => [entry.id, entry.status, entry.attempts])).toEqual([
      ['t1', 'completed', 2],
      ['t2', 'completed', 1],
    ]);
    expect(done.note).toBe('All done after the restart.');
  });

  it('tells the user which managed agents were left out of the plan, and why', async () => {
    await host.kernel.suspend('writer');
    server.script([json({ summary: 'research only', missing_info: null, tasks: [task('t1', 'researcher')] })]);
    const planned = await host.kernel.send('lead', 'facts please');
    expect(planned.text).toContain('(Left out of the plan: writer, suspended.)');
    expect(bodyOf(0)).not.toContain('- writer');
  });

  it('refuses a command in the wrong state with a clear message, and cancel ends the plan', async () => {
    server.script([twoTasks]);
    await host.kernel.send('lead', 'a report');
    expect((await host.kernel.send('lead', 'cancel')).text).toContain('Workflow (cancelled; 0/2 tasks done)');
    server.script([json({ summary: 'new', missing_info: null, tasks: [task('t1', 'writer')] })]);
    expect((await host.kernel.send('lead', 'resume')).text).toContain('Workflow (awaiting approval; 0/1 tasks done): new');
  });
});

describe('the workflow API', () => {
  it('reads the plan and approves it through /api/agents/{agent}/workflow', async () => {
    const { createHttpApp } = await import('../../src/http/index.ts');
    const { ConfigSchema } = await import('../../src/config/index.ts');
    const { createSilentLogger } = await import('../../src/logging/index.ts');
    const app = createHttpApp({
      kernel: host.kernel,
      config: ConfigSchema.parse({}),
      env: {},
      clock: host.clock,
      logger: createSilentLogger(),
      clientAddress: () => '127.0.0.1',
    });
    const request = (path: string, method = 'GET') => app.request(`http://127.0.0.1${path}`, { method, headers: { host: '127.0.0.1' } });
    expect((await request('/api/agents/lead/workflow')).status).toBe(404);
    server.script([twoTasks]);
    await host.kernel.send('lead', 'a report');
    const plan = (await (await request('/api/agents/lead/workflow')).json()) as WorkflowRecord;
    expect(plan).toMatchObject({
      state: 'awaiting_approval',
      tasks: [
        { id: 't1', agent: 'researcher' },
        { id: 't2', agent: 'writer' },
      ],
    });
    server.script([{ text: 'facts' }, accept, { text: 'prose' }, accept, { text: 'done' }]);
    const approved = await request('/api/agents/lead/workflow/approve', 'POST');
    expect(approved.status).toBe(200);
    expect(((await approved.json()) as { reply: string }).reply).toMatch(/^Starting: 2 tasks/);
    expect((await until(['completed'])).note).toBe('done');
    expect((await request('/api/agents/writer/workflow/pause', 'POST')).status).toBe(404);
  });
});
