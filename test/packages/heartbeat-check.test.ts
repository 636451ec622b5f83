import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import type { PackageRunRecord } from '../../src/contracts/index.ts';
import { AgentNotFoundError, StoreError } from '../../src/errors/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import type { TestHost } from '../support/test-host.ts';
import { activityJson, advance, bindingJson, usePackageHosts, writePackage } from './support.ts';

// A package heartbeat's check (decision 0062): the model is called only when what it looks at changed.

const server = useScriptedModelServer();
const packages = usePackageHosts(server, 'loom-heartbeat-check-');
const { open } = packages;

/** A host with the package "watcher", whose heartbeat every 10 minutes checks what the file `state` holds ("one new mail"). */
async function openWatcher(): Promise<{ host: TestHost; state: string }> {
  const host = await open(createFakeClock(Date.UTC(2026, 0, 1, 12, 0)));
  const state = join(packages.dir, 'inbox-state.txt');
  await writeFile(state, 'one new mail\n');
  const trigger = { type: 'heartbeat', interval: '10m', check: { tool: 'shell_exec', input: { command: `cat ${state}` } } };
  await host.packages.install(
    await writePackage(packages.dir, 'watcher', { workflows: { beat: bindingJson(trigger, [activityJson('triage', { cmds: ['cat'] })]) } }),
  );
  return { host, state };
}

/** Stores the watcher's beat `id` as a crash during its check leaves it: running, its activity not started. */
async function cutOffInCheck(host: TestHost, id: string): Promise<void> {
  const run: PackageRunRecord = {
    id,
    package: 'watcher',
    binding: 'beat',
    trigger: 'heartbeat',
    status: 'running',
    inputs: {},
    activities: [
      {
        id: 'triage',
        status: 'pending',
        attempts: 0,
        inputTokens: 0,
        outputTokens: 0,
        costUsd: 0,
        output: null,
        error: null,
        fallback: null,
        startedAt: null,
        endedAt: null,
      },
    ],
    emitted: null,
    error: null,
    startedAt: host.clock.now(),
    endedAt: null,
    nodeId: null,
  };
  await host.store.packageRuns.create(run);
}

describe("a heartbeat's check", () => {
  it("calls the model on a heartbeat only when its check's result changed, recording the beat unchanged otherwise", async () => {
    const { host, state } = await openWatcher();
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
    // A beat its check stops fires nothing: package-fire comes when the activities start.
    const fired = await host.kernel.audit({ agent: 'watcher', type: 'package-fire' });
    expect(fired.map((event) => event.data['runId'])).toEqual([runs[0]?.id, runs[2]?.id]);
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
    const { host } = await openWatcher();
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

  it('records a heartbeat whose check could not be made as aborted, saying why, without blaming the store', async () => {
    const { host } = await openWatcher();
    // The package's agent went just before the beat's check.
    const kernel = host.kernel;
    const runTool = kernel.runAgentTool.bind(kernel);
    kernel.runAgentTool = (agent) => {
      kernel.runAgentTool = runTool;
      return Promise.reject(new AgentNotFoundError(agent));
    };

    await advance(host, 10 * 60_000);

    expect(server.requests).toHaveLength(0);
    const [run] = await host.packages.runs({ package: 'watcher' });
    expect(run).toMatchObject({ status: 'aborted', trigger: 'heartbeat', activities: [] });
    expect(run?.error).toMatch(/^not started: its heartbeat's check could not be made: no agent named or with id "[^"]+"$/);
  });

  it('checks again in a beat a crash cut off during its check: resumed at the next start, it calls the model only if the state changed, and keeps the hash', async () => {
    const { host: first, state } = await openWatcher();
    server.script([{ text: 'triaged' }, { text: 'triaged again' }]);
    await advance(first, 10 * 60_000);
    expect(server.requests).toHaveLength(1);
    await cutOffInCheck(first, 'cut-in-check');
    await packages.close(first);

    // Nothing changed: the resumed beat is unchanged, as it would have been.
    const second = await open(first.clock);
    await second.packages.runtime.idle();
    expect(server.requests).toHaveLength(1);
    const looked = await second.store.packageRuns.get('cut-in-check');
    expect(looked).toMatchObject({ status: 'unchanged', activities: [], error: null });
    expect(looked?.checkHash).toMatch(/^sha256:/);

    // Changed: the resumed beat runs, and keeps what its check found for the beats after it.
    await writeFile(state, 'two new mails\n');
    await cutOffInCheck(second, 'cut-after-change');
    await packages.close(second);
    const third = await open(first.clock);
    await third.packages.runtime.idle();
    expect(server.requests).toHaveLength(2);
    const ran = await third.store.packageRuns.get('cut-after-change');
    expect(ran).toMatchObject({ status: 'completed', activities: [{ status: 'completed', output: 'triaged again' }] });
    expect(ran?.checkHash).toMatch(/^sha256:/);
    expect(ran?.checkHash).not.toBe(looked?.checkHash);
    await advance(third, 10 * 60_000);
    expect(server.requests).toHaveLength(2);
    expect((await third.packages.runs({ package: 'watcher', limit: 1 }))[0]).toMatchObject({ status: 'unchanged' });
  });
});
