import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createUuidGenerator } from '../../src/kernel/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import type { PackageRunRecord } from '../../src/contracts/index.ts';
import type { BindingRunParts } from '../../src/packages/run-binding.ts';
import {
  type ActivityFallback,
  activityPrompt,
  type RunEvent,
  type RunnableActivity,
  type RunnableBinding,
  runBinding,
  runToStart,
} from '../../src/packages/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;
let events: RunEvent[];

beforeEach(async () => {
  dir = await makeTempDir('loom-run-binding-');
  host = await openTestHost(dir.path);
  events = [];
  await host.kernel.spawn(
    manifest(
      `name = "pipeline"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\nsystem_prompt = "You are the pipeline."\n[capabilities]\ntools = ["file_read"]\nllm_query = ["openai/gpt-4o-mini"]\n`,
    ),
  );
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

function activity(id: string, fallback: ActivityFallback = 'Abort', changes: Partial<RunnableActivity> = {}): RunnableActivity {
  return {
    id,
    intent: `Do ${id}`,
    steps: [],
    model: { provider: 'openai', model: 'gpt-4o-mini', base_url: server.url },
    tokenBudget: 1000,
    retry: 1,
    fallback,
    limit: [],
    mcpServers: [],
    ...changes,
  };
}

function binding(activities: RunnableActivity[], changes: Partial<RunnableBinding> = {}): RunnableBinding {
  return { package: 'pipeline', name: 'collect', inputs: {}, activities, totalPerRun: 10_000, emit: 'data-collected', ...changes };
}

const parts = (): BindingRunParts => ({
  kernel: host.kernel,
  runs: host.store.packageRuns,
  clock: host.clock,
  logger: createSilentLogger(),
  report: (event: RunEvent) => events.push(event),
});

/** Starts a run of `target` in the store (a new one, or `resume` going on), as the package runtime does, and runs it. */
async function startAndRun(
  target: RunnableBinding,
  runParts: BindingRunParts = parts(),
  options: { signal?: AbortSignal; resume?: PackageRunRecord } = {},
): Promise<PackageRunRecord> {
  const run = runToStart(target, 'manual', { clock: host.clock, ids: createUuidGenerator(), nodeId: null }, { resume: options.resume });
  expect(await host.store.packageRuns.start(run)).toEqual({ started: true });
  return runBinding(target, run, runParts, options.signal === undefined ? {} : { signal: options.signal });
}
const promptOf = (index: number): string =>
  (server.requests[index]?.body['messages'] as { role: string; content: string }[]).find((message) => message.role === 'user')?.content ?? '';
const BAD_REQUEST = { status: 400 };

describe('runBinding()', () => {
  it('runs the activities in order on their model, hands each the outputs before it, stores the run and emits its namespaced event', async () => {
    server.script([
      { text: 'rows: 42', usage: { inputTokens: 30, outputTokens: 5 } },
      { text: 'trend: up', usage: { inputTokens: 50, outputTokens: 7 } },
    ]);

    const run = await startAndRun(binding([activity('scrape', 'Abort', { steps: ['Fetch', 'Parse'] }), activity('analyze')], { inputs: { source: 'wiki' } }));

    expect(run).toMatchObject({ status: 'completed', emitted: 'pipeline.data-collected', trigger: 'manual' });
    expect(run.activities.map((entry) => [entry.id, entry.status, entry.output, entry.inputTokens, entry.outputTokens])).toEqual([
      ['scrape', 'completed', 'rows: 42', 30, 5],
      ['analyze', 'completed', 'trend: up', 50, 7],
    ]);
    expect(await host.store.packageRuns.get(run.id)).toEqual(run);
    expect(server.requests.map((request) => request.body['model'])).toEqual(['gpt-4o-mini', 'gpt-4o-mini']);
    expect(promptOf(0)).toBe(activityPrompt({ intent: 'Do scrape', steps: ['Fetch', 'Parse'] }, { source: 'wiki' }, []));
    expect(promptOf(1)).toContain('Output of the earlier activity "scrape":\nrows: 42');
    expect(events.map((event) => event.type)).toEqual(['run-start', 'activity-start', 'activity-finish', 'activity-start', 'activity-finish', 'emit']);
  });

  it('retries a failing activity, then Skip goes on and the binding still emits', async () => {
    server.script([BAD_REQUEST, BAD_REQUEST, { text: 'second ran' }]);
    const run = await startAndRun(binding([activity('flaky', 'Skip'), activity('next')]));
    expect(run.status).toBe('completed');
    expect(run.emitted).toBe('pipeline.data-collected');
    expect(run.activities[0]).toMatchObject({ status: 'skipped', attempts: 2, fallback: 'Skip' });
    expect(run.activities[0]?.error).toMatch(/openai\/gpt-4o-mini/);
    expect(run.activities[1]).toMatchObject({ status: 'completed', output: 'second ran' });
  });

  it('NotifyOwner tells the owner and goes on', async () => {
    server.script([BAD_REQUEST, { text: 'second ran' }]);
    const run = await startAndRun(binding([activity('flaky', 'NotifyOwner', { retry: 0 }), activity('next')]));
    expect(run.activities.map((entry) => entry.status)).toEqual(['failed', 'completed']);
    expect(events.filter((event) => event.type === 'notify-owner')).toMatchObject([{ activity: { id: 'flaky', fallback: 'NotifyOwner' } }]);
    expect(run.status).toBe('completed');
  });

  it('Abort stops the run: later activities never run and nothing is emitted', async () => {
    server.script([BAD_REQUEST]);
    const run = await startAndRun(binding([activity('first', 'Abort', { retry: 0 }), activity('never')]));
    expect(run).toMatchObject({ status: 'aborted', emitted: null });
    expect(run.error).toMatch(/^activity "first" failed and its on_error fallback is Abort: /);
    expect(run.activities.map((entry) => entry.status)).toEqual(['failed', 'pending']);
    expect(server.requests).toHaveLength(1);
    expect(events.some((event) => event.type === 'emit')).toBe(false);
  });

  it('stops an activity that passes its token budget mid-way, without retrying, and applies its fallback', async () => {
    server.script([{ toolCalls: [{ name: 'file_read', input: { path: 'x' } }], usage: { inputTokens: 900, outputTokens: 200 } }, { text: 'next ran' }]);
    const run = await startAndRun(binding([activity('greedy', 'Skip', { retry: 3 }), activity('next')]));
    expect(run.activities[0]).toMatchObject({ status: 'skipped', attempts: 1, inputTokens: 900, outputTokens: 200 });
    expect(run.activities[0]?.error).toBe('stopped: activity "greedy" (token_budget.max = 1000) allows 1000 tokens and 1100 were used');
    expect(run.activities[1]).toMatchObject({ status: 'completed' });
  });

  it('bounds the whole run by total_per_run: an activity gets only what is left', async () => {
    server.script([
      { text: 'used most', usage: { inputTokens: 700, outputTokens: 100 } },
      { text: 'too much', usage: { inputTokens: 300, outputTokens: 50 } },
    ]);
    const run = await startAndRun(binding([activity('first'), activity('second', 'Abort', { retry: 0 })], { totalPerRun: 1000 }));
    expect(run.status).toBe('aborted');
    expect(run.activities[1]?.error).toBe('stopped: binding "collect" (budget.total_per_run = 1000, 200 left) allows 200 tokens and 350 were used');
  });

  it('resumes an interrupted run without repeating the activities it finished', async () => {
    server.script([{ text: 'first done' }]);
    // The process "dies" as the second activity starts: nothing after that is written.
    const crash = new AbortController();
    const dying = {
      runTask: (...args: Parameters<typeof host.kernel.runTask>) =>
        server.requests.length >= 1 ? (crash.abort(new Error('killed')), Promise.reject(new Error('killed'))) : host.kernel.runTask(...args),
    };
    await expect(startAndRun(binding([activity('first'), activity('second')]), { ...parts(), kernel: dying }, { signal: crash.signal })).rejects.toThrow(
      'killed',
    );
    const [interrupted] = await host.store.packageRuns.interruptRunning(host.clock.now(), 'the daemon stopped during the run');
    if (interrupted === undefined) throw new Error('expected a running run to interrupt');
    expect(interrupted.activities.map((entry) => [entry.status, entry.fallback])).toEqual([
      ['completed', null],
      ['failed', null],
    ]);

    server.script([{ text: 'second done' }]);
    const resumed = await startAndRun(binding([activity('first'), activity('second')]), parts(), { resume: interrupted });
    expect(resumed).toMatchObject({ id: interrupted.id, status: 'completed' });
    expect(resumed.activities.map((entry) => entry.output)).toEqual(['first done', 'second done']);
    expect(server.requests).toHaveLength(2);
  });
});
