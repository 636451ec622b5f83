import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import { StoreError } from '../../src/errors/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { activityJson, advance, bindingJson, usePackageHosts, writePackage } from './support.ts';

// A package heartbeat's check (decision 0062): the model is called only when what it looks at changed.

const server = useScriptedModelServer();
const packages = usePackageHosts(server, 'loom-heartbeat-check-');
const { open } = packages;

describe("a heartbeat's check", () => {
  it("calls the model on a heartbeat only when its check's result changed, recording the beat unchanged otherwise", async () => {
    const host = await open(createFakeClock(Date.UTC(2026, 0, 1, 12, 0)));
    const state = join(packages.dir, 'inbox-state.txt');
    await writeFile(state, 'one new mail\n');
    const trigger = { type: 'heartbeat', interval: '10m', check: { tool: 'shell_exec', input: { command: `cat ${state}` } } };
    await host.packages.install(
      await writePackage(packages.dir, 'watcher', { workflows: { beat: bindingJson(trigger, [activityJson('triage', { cmds: ['cat'] })]) } }),
    );
    server.script([{ text: 'triaged' }, { text: 'triaged again' }]);

    await advance(host, 10 * 60_000);
    await advance(host, 10 * 60_000);
    expect(server.requests).toHaveLength(1);
    await writeFile(state, 'two new mails\n');
    await advance(host, 10 * 60_000);

    expect(server.requests).toHaveLength(2);
    const runs = (await host.packages.runs({ package: 'watcher' })).reverse();
    expect(runs.map((run) => [run.status, run.activities.length === 0 ? 'no activity' : run.activities[0]?.status])).toEqual([
      ['completed', 'completed'],
      ['unchanged', 'no activity'],
      ['completed', 'completed'],
    ]);
    const finished = await host.kernel.audit({ agent: 'watcher', type: 'package-run-finish' });
    expect(finished.map((event) => event.data['status'])).toEqual(['completed', 'unchanged', 'completed']);
  });

  it('records a heartbeat whose check a capability gate refuses as aborted, saying why, and calls no model', async () => {
    const host = await open(createFakeClock(Date.UTC(2026, 0, 1, 12, 0)));
    // The package's agent has no web grant: the check is refused, deny by default.
    const trigger = { type: 'heartbeat', interval: '10m', check: { tool: 'web_fetch', input: { url: 'https://example.com/feed' } } };
    await host.packages.install(await writePackage(packages.dir, 'fetcher', { workflows: { beat: bindingJson(trigger, [activityJson('read')]) } }));

    await advance(host, 10 * 60_000);

    expect(server.requests).toHaveLength(0);
    const [run] = await host.packages.runs({ package: 'fetcher' });
    expect(run).toMatchObject({ status: 'aborted', activities: [] });
    expect(run?.error).toContain('its trigger.check (web_fetch) failed, and the model was not called');
  });

  it('records a heartbeat whose check the store failed as aborted, saying why, and leaves no run going', async () => {
    const host = await open(createFakeClock(Date.UTC(2026, 0, 1, 12, 0)));
    const state = join(packages.dir, 'inbox-state.txt');
    await writeFile(state, 'one new mail\n');
    const trigger = { type: 'heartbeat', interval: '10m', check: { tool: 'shell_exec', input: { command: `cat ${state}` } } };
    await host.packages.install(
      await writePackage(packages.dir, 'watcher', { workflows: { beat: bindingJson(trigger, [activityJson('triage', { cmds: ['cat'] })]) } }),
    );
    // The database fails the beat's one read of the last check (a disk error, say).
    const runs = host.store.packageRuns;
    const read = runs.lastCheckHash.bind(runs);
    runs.lastCheckHash = () => {
      runs.lastCheckHash = read;
      return Promise.reject(new StoreError('cannot read the last check of binding "beat": disk I/O error'));
    };

    await advance(host, 10 * 60_000);

    expect(server.requests).toHaveLength(0);
    expect(await host.packages.runs({ package: 'watcher' })).toMatchObject([
      {
        status: 'aborted',
        trigger: 'heartbeat',
        activities: [],
        error: 'not started: the store failed during its heartbeat\'s check: cannot read the last check of binding "beat": disk I/O error',
      },
    ]);
  });
});
