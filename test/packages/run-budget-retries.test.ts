import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { activityJson, bindingJson, packageConfig, writePackage } from './support.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-run-budget-');
  host = await openTestHost(dir.path, packageConfig(server.url), undefined, { runSchedules: true });
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

/** A reply that asks for a tool (so the attempt goes on to another call), reporting `usage`. */
const toolReply = (inputTokens: number, outputTokens: number) => ({
  toolCalls: [{ name: 'memory_recall', input: { query: 'x' } }],
  usage: { inputTokens, outputTokens },
});
/** A provider error that is not retried by the fallback chain: the attempt fails. */
const badRequest = { status: 400 };

describe('a package run spends within its total_per_run, retries included', () => {
  it('counts every attempt, failed ones included, stops within the budget and shows the tokens in the run', async () => {
    const folder = await writePackage(dir.path, 'retrier', {
      workflows: {
        work: bindingJson({ type: 'manual' }, [activityJson('fetch', { on_error: { retry: 10, fallback: 'Abort' } })], {
          budget: { total_per_run: 200, cost_estimate: '~$0.01' },
        }),
      },
    });
    await host.packages.install(folder);
    // Each attempt spends 120 tokens on a first call, then fails on its second.
    server.script(Array.from({ length: 11 }, () => [toolReply(100, 20), badRequest]).flat());

    const run = await host.packages.run('retrier', 'work');

    // The first attempt spent 120 and failed; the second started with 80 left and was stopped by them.
    expect(server.requests).toHaveLength(3);
    expect(run).toMatchObject({ status: 'aborted', input_tokens: 200, output_tokens: 40 });
    expect(run.activities[0]).toMatchObject({ status: 'failed', attempts: 2, input_tokens: 200, output_tokens: 40, fallback: 'Abort' });
    expect(run.activities[0]?.error).toBe('stopped: binding "work" (budget.total_per_run = 200, 80 left) allows 80 tokens and 120 were used');
    expect(run.error).toContain('budget.total_per_run = 200');
    // The same in the stored run, as `loom package runs` and the API show it.
    const [stored] = await host.packages.runs({ package: 'retrier' });
    expect(stored).toMatchObject({ id: run.id, status: 'aborted', input_tokens: 200, output_tokens: 40 });
    const usage = await host.store.usage.list();
    expect(usage.reduce((total, record) => total + record.inputTokens + record.outputTokens, 0)).toBe(240);
  });

  it('gives a later activity only what the failed attempts before it left of total_per_run', async () => {
    const folder = await writePackage(dir.path, 'drained', {
      workflows: {
        work: bindingJson(
          { type: 'manual' },
          [activityJson('first', { on_error: { retry: 0, fallback: 'Skip' } }), activityJson('second', { on_error: { retry: 5, fallback: 'Skip' } })],
          { budget: { total_per_run: 200, cost_estimate: '~$0.01' } },
        ),
      },
    });
    await host.packages.install(folder);
    // The first activity spends 180 tokens and fails; the second starts with 20 left, and its first call passes them.
    server.script([toolReply(140, 40), badRequest, toolReply(100, 20), { text: 'never sent' }]);

    const run = await host.packages.run('drained', 'work');

    expect(server.requests).toHaveLength(3);
    expect(run.activities[0]).toMatchObject({ status: 'skipped', attempts: 1, input_tokens: 140, output_tokens: 40 });
    expect(run.activities[1]).toMatchObject({ status: 'skipped', attempts: 1, input_tokens: 100, output_tokens: 20 });
    expect(run.activities[1]?.error).toBe('stopped: binding "work" (budget.total_per_run = 200, 20 left) allows 20 tokens and 120 were used');
    expect(run).toMatchObject({ status: 'completed', input_tokens: 240, output_tokens: 60 });
  });

  it("records a scheduled fire refused by the agent's hourly quota as skipped, with the reason", async () => {
    const folder = await writePackage(dir.path, 'beat', {
      workflows: {
        spend: bindingJson({ type: 'manual' }, [activityJson('big', { token_budget: { max: 2_000_000 } })], {
          budget: { total_per_run: 2_000_000, cost_estimate: '~$5' },
        }),
        tick: bindingJson({ type: 'heartbeat', interval: '1m' }, [activityJson('small')]),
      },
    });
    await host.packages.install(folder);
    // The package's agent has the default hour of 1,000,000 tokens: one reply spends it.
    server.script([{ text: 'spent', usage: { inputTokens: 900_000, outputTokens: 100_000 } }, { text: 'never sent' }]);
    expect((await host.packages.run('beat', 'spend')).status).toBe('completed');

    await host.clock.advance(60_000);
    await host.packages.runtime.idle();

    const ticks = (await host.packages.runs({ package: 'beat' })).filter((run) => run.binding === 'tick');
    expect(ticks).toHaveLength(1);
    expect(ticks[0]).toMatchObject({ status: 'skipped', trigger: 'heartbeat', input_tokens: 0, output_tokens: 0 });
    expect(ticks[0]?.error).toMatch(
      /^not started: agent "beat" has used 1,000,000 of its 1,000,000 tokens per hour; it frees up at .* \(in 59 min\); the limit is \[resources\]\.max_tokens_per_hour in its manifest$/,
    );
    expect(server.requests).toHaveLength(1);
    const audit = await host.kernel.audit({ agent: 'beat', type: 'package-skip' });
    expect(audit).toHaveLength(1);
  });
});
