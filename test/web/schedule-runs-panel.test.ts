import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type DashboardHarness, startDashboard, visible } from '../support/browser.ts';
import { manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

// A fake clock never refills the rate limiter's bucket: give the dashboard's requests room.
// The daemon counts its days in Tokyo: the page says so, whatever the browser's zone.
const CONFIG = { rate_limit: { per_minute: 1_000_000 }, scheduler: { timezone: 'Asia/Tokyo' } };

describe("the agent page's scheduled runs, in Chromium against a real daemon", () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;
  let page: Page;

  const agentToml = (name: string, schedule: string): string =>
    `name = "${name}"\n[schedule]\n${schedule}\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`;

  beforeAll(async () => {
    harness = await startDashboard('loom-web-schedule-runs-', CONFIG);
  }, 120_000);
  afterAll(async () => harness?.close());
  beforeEach(async () => {
    page = await harness.browser.newPage();
    return async () => {
      await page.close();
    };
  });

  it('lists a skipped wake-up with why, and "Wake now" adds a run that the page shows as completed, its tokens in today\'s spend as the daemon counts it, its time zone named', async () => {
    await harness.host.kernel.spawn(manifest(agentToml('monitor', 'mode = "continuous"\ninterval_seconds = 3600')));
    await harness.host.kernel.wakeRuns.skip(
      'monitor',
      { trigger: 'continuous', cause: 'continuous', dueAt: harness.host.clock.now(), count: 3 },
      '3 wake-ups missed while the daemon was down (catch_up = "skip"): not run',
    );
    model.script([{ text: 'all quiet' }]);

    // The browser's today is the daemon's: its clock is the test's.
    await page.clock.setFixedTime(new Date(harness.host.clock.now()));
    await page.goto(`${harness.server.url}/#/agents/monitor`);
    const table = page.getByRole('table', { name: 'Scheduled runs of monitor' });
    await visible(table.locator('[data-testid="schedule-run"][data-outcome="skipped"]'), 'catch_up = "skip"');
    await visible(table.locator('[data-testid="schedule-run"][data-outcome="skipped"]'), '×3');

    await page.getByRole('button', { name: 'Wake now' }).click();

    await visible(table.locator('[data-testid="schedule-run"][data-outcome="completed"]'), 'manual');
    expect(model.requests).toHaveLength(1);
    // The wake-up's tokens (the scripted model's 10 in, 5 out) count in today's spend.
    await visible(page.getByTestId('spent-today'), '15');
    await visible(page.getByTestId('spent-today-zone'), 'Asia/Tokyo');
  });

  it('shows no scheduled runs for a reactive agent', async () => {
    await harness.host.kernel.spawn(manifest(agentToml('chatty', 'mode = "reactive"')));
    await page.goto(`${harness.server.url}/#/agents/chatty`);
    await visible(page.getByText('Session history (0)'));
    expect(await page.getByRole('button', { name: 'Wake now' }).count()).toBe(0);
  });
});
