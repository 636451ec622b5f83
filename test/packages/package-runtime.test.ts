import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import type { PackageRunView } from '../../src/packages/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { activityJson, advance, bindingJson, EXAMPLES, usePackageHosts, writePackage } from './support.ts';

const server = useScriptedModelServer();
const packages = usePackageHosts(server, 'loom-packages-');
const { open } = packages;

const systemOf = (index: number): string => {
  const body = server.requests[index]?.body ?? {};
  if (typeof body['system'] === 'string') return body['system'];
  if (Array.isArray(body['system'])) return (body['system'] as { text: string }[]).map((part) => part.text).join('\n');
  return ((body['messages'] as { role: string; content: string }[] | undefined) ?? []).find((message) => message.role === 'system')?.content ?? '';
};
const userOf = (index: number): string =>
  JSON.stringify(
    ((server.requests[index]?.body['messages'] as { role: string; content: unknown }[] | undefined) ?? []).filter((message) => message.role === 'user'),
  );

describe('installing a package', () => {
  it("installs the spec's chief-of-staff: one agent named after it, AGENT.md as its system prompt, the capabilities it was shown, its skills", async () => {
    const host = await open();
    const plan = await host.packages.check(join(EXAMPLES, 'chief-of-staff'));
    const view = await host.packages.install(join(EXAMPLES, 'chief-of-staff'));

    expect(view).toMatchObject({
      slug: 'chief-of-staff',
      qualified_name: '@nebo/agents/chief-of-staff',
      version: '1.0.0',
      active: true,
      pricing: { model: 'monthly_fixed', cost: 47 },
    });
    const agent = host.kernel.get('chief-of-staff');
    expect(agent.manifest.model?.system_prompt).toBe(await readFile(join(EXAMPLES, 'chief-of-staff', 'AGENT.md'), 'utf8'));
    expect(agent.manifest.capabilities).toEqual(plan.capabilities);
    expect(agent.manifest.capabilities.tools.sort()).toEqual(['mcp_gmail_*', 'mcp_google_calendar_*', 'mcp_slack_*']);
    expect(agent.manifest.capabilities.shell).toEqual([]);
    expect(agent.manifest.capabilities.llm_query.sort()).toEqual(['anthropic/claude-sonnet-4-5', 'openai/gpt-4o-mini']);
    expect(plan.skills.sort()).toEqual([
      '@nebo/skills/note-taker@1.0.0',
      '@nebo/skills/quick-research@1.0.0',
      '@nebo/skills/report-writer@1.0.0',
      '@nebo/skills/web-scraper@1.0.0',
    ]);
    expect(await readFile(join(host.home.skillsDir, 'nebo', 'note-taker', '1.0.0', 'SKILL.md'), 'utf8')).toMatch(/^name: note-taker$/m);
    // Schedules in UTC ([scheduler].timezone); the clock starts on Thursday 2026-01-01 00:00 UTC.
    const briefing = view.bindings.find((binding) => binding.name === 'morning-briefing');
    expect(briefing?.next_fire_at).toBe('2026-01-01T07:00:00.000Z');
    expect(view.bindings.find((binding) => binding.name === 'notify-owner')?.sources).toEqual(['chief-of-staff.briefing.ready']);
    // Every 30 min from activation, inside 08:00-18:00: the first is 08:00.
    expect(view.bindings.find((binding) => binding.name === 'health-check')?.next_fire_at).toBe('2026-01-01T08:00:00.000Z');
  });

  it('--set overrides a listed path (validated again) and refuses any other, naming the listed ones; nothing is installed', async () => {
    const host = await open();
    const source = join(EXAMPLES, 'chief-of-staff');
    await expect(host.packages.install(source, ['workflows.health-check.trigger.interval=5m'])).rejects.toThrow(
      'cannot set "workflows.health-check.trigger.interval": package "chief-of-staff" lets the owner set only "workflows.morning-briefing.trigger.cron"',
    );
    await expect(host.packages.install(source, ['workflows.morning-briefing.trigger.cron=0 8 * *'])).rejects.toThrow(
      /workflows\.morning-briefing\.trigger\.cron: expected a 5-field cron expression/,
    );
    expect(host.kernel.list()).toEqual([]);
    expect(await host.packages.list()).toEqual([]);

    const view = await host.packages.install(source, ['workflows.morning-briefing.trigger.cron=0 8 * * *']);
    expect(view.bindings.find((binding) => binding.name === 'morning-briefing')).toMatchObject({
      trigger: { cron: '0 8 * * *' },
      next_fire_at: '2026-01-01T08:00:00.000Z',
    });
    expect(view.settings).toEqual(['workflows.morning-briefing.trigger.cron=0 8 * * *']);
  });

  it('refuses an event source no installed binding emits, and an agent name already taken, leaving nothing behind', async () => {
    const host = await open();
    const listener = await writePackage(packages.dir, 'listener', {
      workflows: { hear: bindingJson({ type: 'event', sources: ['talker.said'] }, [activityJson('note')]) },
    });
    await expect(host.packages.install(listener)).rejects.toThrow(
      'package "listener": agent.json: workflows.hear.trigger.sources[0]: no installed binding emits "talker.said"',
    );
    const talker = await writePackage(packages.dir, 'talker', {
      workflows: { say: bindingJson({ type: 'manual' }, [activityJson('speak')], { emit: 'said' }) },
    });
    await host.packages.install(talker);
    await host.packages.install(listener);
    expect((await host.packages.show('listener')).bindings[0]?.sources).toEqual(['talker.said']);
    await expect(host.packages.uninstall('talker')).rejects.toThrow(
      'cannot uninstall package "talker": listener/hear runs on its events; uninstall that first',
    );
  });

  it('installs only the package whose plan was shown: one changed since the check is refused', async () => {
    const host = await open();
    const folder = await writePackage(packages.dir, 'shifty', { workflows: { job: bindingJson({ type: 'manual' }, [activityJson('a')]) } });
    const plan = await host.packages.check(folder);
    expect(plan.digest).toMatch(/^[0-9a-f]{64}$/);
    await writeFile(join(folder, 'AGENT.md'), 'You are someone else now.');
    await expect(host.packages.install(folder, [], plan.digest)).rejects.toThrow('not installed: package "shifty" changed since its plan was shown');
    expect(await host.packages.list()).toEqual([]);
    const again = await host.packages.check(folder);
    expect(again.digest).not.toBe(plan.digest);
    expect((await host.packages.install(folder, [], again.digest)).slug).toBe('shifty');
  });

  it("refuses a skill's install code given as a package, saying what it is", async () => {
    const host = await open();
    await expect(host.packages.install('SKIL-ABCD-EF01')).rejects.toThrow(
      'cannot install "SKIL-ABCD-EF01" as a package: it is a skill\'s install code (SKIL-…); a package\'s starts with AGNT-',
    );
  });

  it("uninstalls a package whose name another package's own dotted emit starts with", async () => {
    const host = await open();
    // "echo" emits "talker.done" and listens to it: that is "echo.talker.done", not talker's event.
    const echo = await writePackage(packages.dir, 'echo', {
      workflows: {
        first: bindingJson({ type: 'manual' }, [activityJson('a')], { emit: 'talker.done' }),
        second: bindingJson({ type: 'event', sources: ['talker.done'] }, [activityJson('b')]),
      },
    });
    const talker = await writePackage(packages.dir, 'talker', {
      workflows: { say: bindingJson({ type: 'manual' }, [activityJson('speak')], { emit: 'said' }) },
    });
    await host.packages.install(talker);
    await host.packages.install(echo);
    await host.packages.uninstall('talker');
    expect((await host.packages.list()).map((view) => view.slug)).toEqual(['echo']);
  });
});

describe('runs', () => {
  it('runs the three-stage chain end to end: each stage fires on the emit before it and gets its output; AGENT.md and the skills are in the system prompt', async () => {
    const host = await open();
    await host.packages.install(join(EXAMPLES, 'data-pipeline'));
    server.script([{ text: 'collected: 42 rows', usage: { inputTokens: 100, outputTokens: 20 } }, { text: 'trend: up 7%' }, { text: 'report sent' }]);

    const first = await host.packages.run('data-pipeline', 'collect-data');
    await host.packages.runtime.idle();

    expect(first).toMatchObject({ status: 'completed', emitted: 'data-pipeline.data-collected', input_tokens: 100, output_tokens: 20 });
    const runs = (await host.packages.runs({ package: 'data-pipeline' })).reverse();
    expect(runs.map((run) => [run.binding, run.trigger, run.status, run.emitted])).toEqual([
      ['collect-data', 'manual', 'completed', 'data-pipeline.data-collected'],
      ['analyze-data', 'event:data-pipeline.data-collected', 'completed', 'data-pipeline.analysis-complete'],
      ['report', 'event:data-pipeline.analysis-complete', 'completed', null],
    ]);
    expect(userOf(1)).toContain('collected: 42 rows');
    expect(userOf(2)).toContain('trend: up 7%');
    expect(systemOf(0)).toContain('You run a small data pipeline');
    expect(systemOf(0)).toContain('# Web scraper');
    expect(systemOf(1)).toContain('# Data analyzer');
    const audit = await host.kernel.audit({ agent: 'data-pipeline' });
    expect(audit.filter((event) => event.type === 'package-emit').map((event) => event.data['event'])).toEqual([
      'data-pipeline.data-collected',
      'data-pipeline.analysis-complete',
    ]);
    expect(audit.filter((event) => event.type === 'package-fire')).toHaveLength(3);
  });

  it('a run in flight when its package is suspended is aborted: no fallback, no emit, nothing downstream', async () => {
    const host = await open();
    const folder = await writePackage(packages.dir, 'halted', {
      workflows: {
        first: bindingJson({ type: 'manual' }, [activityJson('slow', { on_error: { retry: 0, fallback: 'Skip' } })], { emit: 'done' }),
        second: bindingJson({ type: 'event', sources: ['done'] }, [activityJson('after')]),
      },
    });
    await host.packages.install(folder);
    let release = (): void => undefined;
    server.script([{ text: 'slow reply', gate: new Promise<void>((resolve) => (release = resolve)) }]);
    const running = host.packages.run('halted', 'first');
    await expect.poll(() => server.requests.length).toBe(1);
    await host.kernel.suspend('halted');
    release();
    await expect(running).rejects.toThrow();
    await host.packages.runtime.idle();
    const runs = await host.packages.runs({ package: 'halted' });
    expect(runs.map((run) => [run.binding, run.status, run.emitted])).toEqual([['first', 'aborted', null]]);
    expect(runs[0]?.error).toContain('stopped: package "halted" stopped');
    expect(server.requests).toHaveLength(1);
  });

  it('a budget exceeded mid-activity stops it between model steps; Abort then ends the run without its emit', async () => {
    const host = await open();
    const folder = await writePackage(packages.dir, 'greedy', {
      workflows: { work: bindingJson({ type: 'manual' }, [activityJson('think', { token_budget: { max: 500 } }), activityJson('never')], { emit: 'done' }) },
    });
    await host.packages.install(folder);
    // The first model step spends 600 tokens and asks for a tool; the budget stops the activity before a second step.
    server.script([{ text: '', toolCalls: [{ name: 'memory_recall', input: { query: 'x' } }], usage: { inputTokens: 550, outputTokens: 50 } }]);
    const run = await host.packages.run('greedy', 'work');
    expect(run).toMatchObject({ status: 'aborted', emitted: null });
    expect(run.activities[0]).toMatchObject({ status: 'failed', input_tokens: 550, output_tokens: 50, fallback: 'Abort' });
    expect(run.activities[0]?.error).toMatch(/token_budget\.max = 500/);
    expect(run.activities[1]?.status).toBe('pending');
    expect(server.requests).toHaveLength(1);
  });

  it('a binding still running is not started twice: the second fire is recorded as skipped', async () => {
    const host = await open();
    await host.packages.install(
      await writePackage(packages.dir, 'slow', { workflows: { tick: bindingJson({ type: 'heartbeat', interval: '1m' }, [activityJson('work')]) } }),
    );
    let release: () => void = () => undefined;
    server.script([{ text: 'done', gate: new Promise<void>((resolve) => (release = resolve)) }]);
    await host.clock.advance(60_000);
    await waitFor("the first fire's model call", () => server.requests.length > 0);
    await host.clock.advance(60_000);
    await expect(host.packages.run('slow', 'tick')).rejects.toThrow('binding "tick" of package "slow" is still running; the fire was recorded as skipped');
    release();
    await host.packages.runtime.idle();
    const runs = await host.packages.runs({ package: 'slow' });
    expect(runs.map((run) => run.status).sort()).toEqual(['completed', 'skipped', 'skipped']);
    expect(runs.find((run) => run.status === 'skipped')?.error).toBe('not started: the previous run of "tick" is still going');
    expect(server.requests).toHaveLength(1);
  });
});

describe('after a restart', () => {
  it('resumes a run cut off mid-way with the inputs it started with and the outputs it had', async () => {
    const first = await open();
    await first.packages.install(
      await writePackage(packages.dir, 'resumer', { workflows: { job: bindingJson({ type: 'manual' }, [activityJson('gather'), activityJson('write')]) } }),
    );
    const done = {
      id: 'gather',
      status: 'completed' as const,
      attempts: 1,
      inputTokens: 5,
      outputTokens: 5,
      costUsd: 0,
      output: 'gathered: tides twice a day',
      error: null,
      fallback: null,
      startedAt: 1,
      endedAt: 2,
    };
    await first.store.packageRuns.create({
      id: 'cut-off',
      package: 'resumer',
      binding: 'job',
      trigger: 'manual',
      status: 'running',
      inputs: { topic: 'tides' },
      activities: [done, { ...done, id: 'write', status: 'running', output: null, endedAt: null }],
      emitted: null,
      error: null,
      startedAt: 1,
      endedAt: null,
      nodeId: null,
    });
    await packages.close(first);

    server.script([{ text: 'written' }]);
    const second = await open();
    await second.packages.runtime.idle();
    expect(await second.store.packageRuns.get('cut-off')).toMatchObject({
      status: 'completed',
      activities: [{ output: 'gathered: tides twice a day' }, { output: 'written' }],
    });
    expect(server.requests).toHaveLength(1);
    expect(userOf(0)).toContain('\\"topic\\": \\"tides\\"');
    expect(userOf(0)).toContain('gathered: tides twice a day');

    // Reactivating the package (suspend and resume) does not run the cut-off run again.
    await second.kernel.suspend('resumer');
    await second.kernel.resume('resumer');
    await second.packages.runtime.idle();
    expect(server.requests).toHaveLength(1);
  });
});

describe('triggers on the injected clock', () => {
  it("fires a schedule in the package's time zone, once a day across the DST change", async () => {
    // New York springs forward on 2026-03-08: 02:30 does not exist that night.
    const clock = createFakeClock(Date.UTC(2026, 2, 7, 0, 0));
    const host = await open(clock);
    await host.packages.install(
      await writePackage(packages.dir, 'nightly', {
        defaults: { timezone: 'America/New_York' },
        workflows: { night: bindingJson({ type: 'schedule', cron: '30 2 * * *' }, [activityJson('work')]) },
      }),
    );
    server.script([{ text: 'one' }, { text: 'two' }, { text: 'three' }]);
    await advance(host, 3 * 24 * 3600_000, 15 * 60_000);
    const runs = (await host.packages.runs({ package: 'nightly' })).reverse();
    // 02:30 EST; on the night of the change, once, when the clock jumps to 03:00 EDT; then 02:30 EDT.
    expect(runs.map((run) => run.started_at)).toEqual(['2026-03-07T07:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z']);
  });

  it('fires a heartbeat first one interval after activation, and only inside a window that crosses midnight', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1, 12, 0));
    const host = await open(clock);
    await host.packages.install(
      await writePackage(packages.dir, 'first', { workflows: { beat: bindingJson({ type: 'heartbeat', interval: '30m' }, [activityJson('work')]) } }),
    );
    await host.packages.install(
      await writePackage(packages.dir, 'night', {
        workflows: { beat: bindingJson({ type: 'heartbeat', interval: '1h', window: '22:00-06:00' }, [activityJson('work')]) },
      }),
    );
    server.script(Array.from({ length: 60 }, () => ({ text: 'ok' })));

    await advance(host, 29 * 60_000);
    expect(await host.packages.runs({ package: 'first' })).toEqual([]);
    await advance(host, 60_000);
    expect((await host.packages.runs({ package: 'first' })).map((run) => run.started_at)).toEqual(['2026-01-01T12:30:00.000Z']);

    await advance(host, 24 * 3600_000 - 30 * 60_000, 30 * 60_000);
    const hours = (await host.packages.runs({ package: 'night' })).reverse().map((run) => new Date(run.started_at).getUTCHours());
    expect(hours).toEqual([22, 23, 0, 1, 2, 3, 4, 5]);
  });

  it('with catch_up = "skip", records the fires missed while the daemon was down as one missed run, without replaying them', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1, 0, 30));
    const skip = { scheduler: { timezone: 'UTC', catch_up: 'skip', catch_up_window_seconds: 86_400 } };
    const first = await open(clock, skip);
    await first.packages.install(
      await writePackage(packages.dir, 'hourly', { workflows: { tick: bindingJson({ type: 'schedule', cron: '0 * * * *' }, [activityJson('work')]) } }),
    );
    await packages.close(first);

    const second = await open(createFakeClock(Date.UTC(2026, 0, 1, 5, 45)), skip);
    await second.packages.runtime.idle();
    const runs: PackageRunView[] = await second.packages.runs({ package: 'hourly' });
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      status: 'missed',
      trigger: 'schedule',
      started_at: '2026-01-01T01:00:00.000Z',
      error: '5 wake-ups missed while the daemon was down (catch_up = "skip"): not run',
      activities: [],
    });
    expect(server.requests).toHaveLength(0);
    const audit = await second.kernel.audit({ agent: 'hourly', type: 'package-miss' });
    expect(audit.map((event) => event.data['count'])).toEqual([5]);
  });

  it('catches up the latest fire missed while the daemon was down (catch_up = "once", the default), and records the older ones as missed', async () => {
    const clock = createFakeClock(Date.UTC(2026, 0, 1, 0, 30));
    const first = await open(clock);
    await first.packages.install(
      await writePackage(packages.dir, 'hourly', { workflows: { tick: bindingJson({ type: 'schedule', cron: '0 * * * *' }, [activityJson('work')]) } }),
    );
    await packages.close(first);
    server.script([{ text: 'caught up' }]);

    // Back at 05:45: 05:00 is within the hour's window, 01:00 to 04:00 are not.
    const second = await open(createFakeClock(Date.UTC(2026, 0, 1, 5, 45)));
    await second.packages.runtime.idle();
    const runs: PackageRunView[] = await second.packages.runs({ package: 'hourly' });
    expect(runs.map((run) => [run.status, run.trigger, run.started_at, run.error])).toEqual([
      ['completed', 'schedule', '2026-01-01T05:45:00.000Z', null],
      [
        'missed',
        'schedule',
        '2026-01-01T01:00:00.000Z',
        '4 wake-ups missed while the daemon was down, more than 3600 s ago (catch_up_window_seconds): not run',
      ],
    ]);
    expect(server.requests).toHaveLength(1);
  });
});
