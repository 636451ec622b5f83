import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFakeClock } from '../../src/clock/index.ts';
import type { ScheduleRunRecord } from '../../src/contracts/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import type { TestHost } from '../support/test-host.ts';
import { manifest } from '../support/test-kernel.ts';
import { EIGHT, MINUTE, scheduledAgentToml, useScheduledDaemon } from './scheduled-daemon.ts';

const server = useScriptedModelServer();
const daemons = useScheduledDaemon('loom-idle-checks-');
const daemon = (): Promise<TestHost> => daemons.start(createFakeClock(EIGHT));
const agentToml = (name: string, extra: string, model = 'gpt-4o'): string =>
  scheduledAgentToml(name, `mode = "continuous"\ninterval_seconds = 600\n${extra}`, server.url, model);

/** Lets one interval pass and waits for its run to settle; returns the agent's runs, newest first. */
async function nextRun(daemon: TestHost, agent: string): Promise<ScheduleRunRecord[]> {
  const before = (await daemon.kernel.wakeRuns.list(agent)).length;
  await daemon.clock.advance(10 * MINUTE);
  return waitFor(`run ${before + 1} of "${agent}" to settle`, async () => {
    const runs = await daemon.kernel.wakeRuns.list(agent);
    return runs.length === before + 1 && runs[0]?.outcome !== 'running' ? runs : undefined;
  });
}

describe('a scheduled wake-up with a [schedule.check]', () => {
  it('calls the model only when what the check reads changed: an unchanged file is recorded as unchanged, with no request to the model', async () => {
    const inbox = join(daemons.dir, 'inbox.txt');
    await writeFile(inbox, 'one order');
    const current = await daemon();
    await current.kernel.spawn(
      manifest(
        agentToml(
          'watcher',
          `[schedule.check]\ntool = "file_read"\ninput = { path = "${inbox}" }\n[capabilities]\ntools = ["file_read"]\nfile_read = ["${daemons.dir}/*"]`,
        ),
      ),
    );
    server.script([{ text: 'handled one order' }, { text: 'handled two orders' }]);

    const [first] = await nextRun(current, 'watcher');
    expect(first?.outcome).toBe('completed');
    expect(first?.checkHash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(server.requests).toHaveLength(1);

    expect((await nextRun(current, 'watcher'))[0]).toMatchObject({ outcome: 'unchanged', reason: null });
    expect(server.requests).toHaveLength(1);

    await writeFile(inbox, 'one order\nanother order');
    expect((await nextRun(current, 'watcher'))[0]).toMatchObject({ outcome: 'completed' });
    expect(server.requests).toHaveLength(2);
  });

  it('goes through the capability gates: a check the agent is not granted fails the run, and the model is not called', async () => {
    const secret = join(daemons.dir, 'secret.txt');
    await writeFile(secret, 'not yours');
    const current = await daemon();
    await current.kernel.spawn(
      manifest(agentToml('nosy', `[schedule.check]\ntool = "file_read"\ninput = { path = "${secret}" }\n[capabilities]\ntools = ["file_read"]`)),
    );
    server.script([{ text: 'never asked' }]);

    const [run] = await nextRun(current, 'nosy');

    expect(run).toMatchObject({ outcome: 'failed', checkHash: null });
    expect(run?.reason).toMatch(/^its \[schedule\.check\] \(file_read\) failed, and the model was not called: .*file_read/);
    expect(server.requests).toHaveLength(0);
  });
});

describe('a daily budget', () => {
  it('skips scheduled wake-ups once [resources].max_tokens_per_day is spent, until the next day', async () => {
    const current = await daemon();
    await current.kernel.spawn(manifest(agentToml('frugal', '[resources]\nmax_tokens_per_day = 100')));
    server.script([{ text: 'worked', usage: { inputTokens: 80, outputTokens: 40 } }, { text: 'a new day' }]);

    expect((await nextRun(current, 'frugal'))[0]).toMatchObject({ outcome: 'completed' });
    const [skipped] = await nextRun(current, 'frugal');
    expect(skipped).toMatchObject({ outcome: 'skipped', startedAt: null });
    expect(skipped?.reason).toBe(
      'agent "frugal" has used 120 of its 100 tokens today ([resources].max_tokens_per_day); scheduled wake-ups resume at 2026-01-06T00:00:00.000Z',
    );
    expect(server.requests).toHaveLength(1);

    // 08:20 to midnight, then the first wake-up of the new day.
    await current.clock.advance(Date.UTC(2026, 0, 6) - current.clock.now() - 10 * MINUTE);
    await waitFor("the day's last skipped wake-up", async () => (await current.kernel.wakeRuns.list('frugal'))[0]?.outcome === 'skipped');
    const [fresh] = await nextRun(current, 'frugal');
    expect(fresh).toMatchObject({ outcome: 'completed' });
    expect(server.requests).toHaveLength(2);
  });
});

describe('[schedule].model', () => {
  it('runs scheduled wake-ups on the cheaper model, and messages still on [model]', async () => {
    const current = await daemon();
    await current.kernel.spawn(manifest(agentToml('thrifty', `[schedule.model]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "${server.url}"`)));
    server.script([{ text: 'scheduled' }, { text: 'asked' }]);

    expect((await nextRun(current, 'thrifty'))[0]).toMatchObject({ outcome: 'completed' });
    await current.kernel.send('thrifty', 'hello');

    expect(server.requests.map((request) => request.body['model'])).toEqual(['gpt-4o-mini', 'gpt-4o']);
  });
});
