import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardHarness, startDashboard, visible } from '../helpers/browser.ts';
import { activityJson, bindingJson, packageConfig, writePackage } from '../packages/support.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

describe('the dashboard Packages page, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;
  let page: Page;

  beforeAll(async () => {
    harness = await startDashboard('loom-web-packages-', { ...packageConfig(model.url), rate_limit: { per_minute: 1_000_000 } }, { packages: true });
    page = await harness.browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  it('lists a package with its bindings in words, runs a manual one with the Run button, and shows the run with each activity', async () => {
    const { server } = harness;
    const folder = await writePackage(harness.dir, 'reporter', {
      pricing: { model: 'per_run', cost: 0.5 },
      workflows: {
        nightly: bindingJson({ type: 'schedule', cron: '0 2 * * *' }, [activityJson('collect')], { emit: 'collected' }),
        now: bindingJson({ type: 'manual' }, [activityJson('gather'), activityJson('write')], { budget: { total_per_run: 9000, cost_estimate: '~$0.02' } }),
      },
    });
    const response = await fetch(`${server.url}/api/packages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ source: folder }) });
    expect(response.status).toBe(201);

    await page.goto(`${server.url}/#/packages`);
    await visible(page.getByRole('heading', { name: 'Packages' }));
    const nightly = page.locator('[data-binding="nightly"]');
    await visible(nightly.getByTestId('trigger'), 'schedule "0 2 * * *"');
    await visible(nightly, 'reporter.collected');
    await visible(page.getByText('pricing per_run $0.5 (shown only; Loom charges nothing)'));
    expect(await page.locator('[data-binding="nightly"] button').count()).toBe(0);

    model.script([
      { text: 'gathered', usage: { inputTokens: 30, outputTokens: 10 } },
      { text: 'written', usage: { inputTokens: 50, outputTokens: 12 } },
    ]);
    await page.getByRole('button', { name: 'Run now' }).click();
    const run = page.getByTestId('package-run').filter({ hasText: 'now' });
    await visible(run, 'completed');
    await visible(run, /gather completed · 40 tokens/);
    await visible(run, /write completed · 62 tokens/);
    expect(await run.first().getAttribute('data-status')).toBe('completed');
  });
});
