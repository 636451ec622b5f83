import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/contracts/index.ts';
import { requestRecord } from '../../src/kernel/turn-journal.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { createScheduler } from '../../src/scheduler/index.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';
import { deferred, testQueue } from './scheduler-fixtures.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-wake-turn-');
  host = await openTestHost(dir.path);
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

const MINUTE = 60_000;
const caller = { kind: 'user', role: 'owner', name: 'scheduler' } as const;
/** An agent on the scripted model; continuous (this host runs no schedules: its wake-ups are the test's). */
const agentToml = (name: string): string =>
  `name = "${name}"\n[schedule]\nmode = "continuous"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`;

/** Journals a turn of the agent as running, as a node that died in it left it. */
function openTurn(id: string, agentId: string, request: JsonObject): Promise<void> {
  return host.store.turns.open({ id, agentId, sessionId: `session-${agentId}`, conversation: null, request, idempotencyKey: null, receivedAt: 1_000 });
}

describe("a wake-up's turn the journal holds as running (its node stopped in it)", () => {
  it("is found for its own wake-up only: not for another instant or trigger of its agent, nor for a message's turn", async () => {
    const worker = await host.kernel.spawn(manifest(agentToml('worker')));
    const helper = await host.kernel.spawn(manifest(agentToml('helper')));
    const due = { trigger: 'continuous', dueAt: 5 * MINUTE };
    expect(await host.kernel.wakeRuns.turnGoesOn('worker', due)).toBe(false);
    await openTurn('t-wake', worker.id, requestRecord({ message: 'wake', caller, cycle: true, wake: due }));
    await openTurn('t-message', helper.id, requestRecord({ message: 'hello', caller }));
    expect(await host.kernel.wakeRuns.turnGoesOn('worker', due)).toBe(true);
    expect(await host.kernel.wakeRuns.turnGoesOn('worker', { trigger: 'continuous', dueAt: 6 * MINUTE })).toBe(false);
    expect(await host.kernel.wakeRuns.turnGoesOn('worker', { trigger: 'cron', dueAt: 5 * MINUTE })).toBe(false);
    expect(await host.kernel.wakeRuns.turnGoesOn('helper', due)).toBe(false);
  });

  it('journaled by an earlier Loom, without its wake-up, is taken for any wake-up of its agent, so none runs beside it', async () => {
    const elder = await host.kernel.spawn(manifest(agentToml('elder')));
    await openTurn('t-old', elder.id, { message: 'wake', caller, cycle: true });
    expect(await host.kernel.wakeRuns.turnGoesOn('elder', { trigger: 'continuous', dueAt: 5 * MINUTE })).toBe(true);
    expect(await host.kernel.wakeRuns.turnGoesOn('elder', { trigger: 'cron', dueAt: 9 * MINUTE })).toBe(true);
  });

  it('is journaled with its wake-up by the kernel when the wake-up runs', async () => {
    await host.kernel.spawn(manifest(agentToml('worker')));
    const gate = deferred();
    server.script([{ text: 'woken', gate: gate.promise }]);
    const dueAt = host.clock.now();
    const run = host.kernel.wakeRuns.now('worker', { by: 'the owner' });
    await waitFor('the wake-up turn to be journaled', async () => (await host.store.turns.running()).length === 1);
    expect(await host.kernel.wakeRuns.turnGoesOn('worker', { trigger: 'manual', dueAt })).toBe(true);
    expect(await host.kernel.wakeRuns.turnGoesOn('worker', { trigger: 'manual', dueAt: dueAt - MINUTE })).toBe(false);
    gate.resolve();
    expect(await run).toMatchObject({ outcome: 'completed' });
    expect(await host.kernel.wakeRuns.turnGoesOn('worker', { trigger: 'manual', dueAt })).toBe(false);
  });

  it('skips only the wake-up job taken again whose own turn goes on: another wake-up of the agent taken again runs', async () => {
    const worker = await host.kernel.spawn(manifest(agentToml('worker')));
    const queue = testQueue();
    const scheduler = createScheduler({ clock: host.clock, logger: createSilentLogger(), runs: host.kernel.wakeRuns, queue });
    const job = (id: string, due: number) => ({
      id,
      kind: 'scheduled-message' as const,
      payload: { agent: worker.id, message: 'wake', cause: 'continuous', trigger: 'continuous', due },
    });
    // The 09:01 wake-up's node died in its turn; the 09:02 one's died before its turn began.
    await openTurn('t-first', worker.id, requestRecord({ message: 'wake', caller, cycle: true, wake: { trigger: 'continuous', dueAt: MINUTE } }));
    server.script([{ text: 'the second wake-up ran' }]);
    await queue.run(job('job-1', MINUTE), 2);
    await queue.run(job('job-2', 2 * MINUTE), 2);
    const runs = await host.kernel.wakeRuns.list('worker');
    expect(runs.map((run) => [run.dueAt, run.outcome, run.reason])).toEqual([
      [2 * MINUTE, 'completed', null],
      [MINUTE, 'skipped', 'the turn an earlier attempt began goes on from its journal, where its node stopped; the wake-up is not run twice'],
    ]);
    expect(server.requests).toHaveLength(1);
    scheduler.stopAll();
  });
});
