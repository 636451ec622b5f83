import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { createJsonLogRecorder, openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';
import { makeTempDir, manifest } from '../support/test-kernel.ts';

const server = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let host: TestHost;

beforeEach(async () => {
  dir = await makeTempDir('loom-wake-up-budget-');
});
afterEach(async () => {
  await host.close();
  await dir.remove();
});

describe('a scheduled wake-up and the budget ledger', () => {
  it("records a wake-up refused by the agent's hourly quota as skipped, with the reason, not as a failed run", async () => {
    const log = createJsonLogRecorder();
    host = await openTestHost(dir.path, {}, TEST_KEYS, { runSchedules: true, logger: log.logger });
    await host.kernel.spawn(
      manifest(
        `name = "sleeper"\n[schedule]\nmode = "continuous"\ninterval_seconds = 60\n[resources]\nmax_tokens_per_hour = 100\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${server.url}"\n`,
      ),
    );
    server.script([{ text: 'worked', usage: { inputTokens: 80, outputTokens: 40 } }, { text: 'never sent' }]);

    await host.clock.advance(60_000);
    await waitFor('the first wake-up to be answered', async () => (await host.store.usage.list()).length === 1);
    await host.clock.advance(60_000);
    const runLines = (): Record<string, unknown>[] => log.records.filter((record) => String(record['msg']).startsWith('scheduled run of agent "sleeper"'));
    const skipped = (): Record<string, unknown> | undefined => runLines().find((record) => record['outcome'] === 'skipped');
    await waitFor('the second wake-up to be skipped', () => skipped() !== undefined);

    // Logged once: its run's line, with the quota's words and code, and never as a failed run.
    expect(skipped()).toMatchObject({ level: 30, subsystem: 'scheduler', code: 'QUOTA_EXCEEDED' });
    expect(String(skipped()?.['msg'])).toMatch(
      /^scheduled run of agent "sleeper" \(continuous\) skipped: agent "sleeper" has used 120 of its 100 tokens per hour; it frees up at .* \(in 59 min\); the limit is \[resources\]\.max_tokens_per_hour in its manifest$/,
    );
    expect(log.records.filter((record) => String(record['msg']).includes('skipped'))).toHaveLength(1);
    expect(runLines().filter((record) => / failed\b/.test(String(record['msg'])))).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });
});
