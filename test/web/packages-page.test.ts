import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config/index.ts';
import { createHttpApp, type RunningHttpServer, startHttpServer } from '../../src/http/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { buildDashboard, launchChromium, visible } from '../helpers/browser.ts';
import { openTestHost, type TestHost } from '../helpers/test-host.ts';
import { activityJson, bindingJson, packageConfig, writePackage } from '../packages/support.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

describe('the dashboard Packages page, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let dir: string;
  let host: TestHost;
  let server: RunningHttpServer;
  let browser: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'loom-web-packages-'));
    const outDir = join(dir, 'dist');
    await buildDashboard(outDir);
    const config = { ...packageConfig(model.url), rate_limit: { per_minute: 1_000_000 } };
    host = await openTestHost(dir, config);
    const app = createHttpApp({ kernel: host.kernel, config: ConfigSchema.parse(config), env: { LOOM_DASHBOARD_DIR: outDir }, clock: host.clock, logger: createSilentLogger(), version: '9.9.9-test', packages: host.packages });
    server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
    browser = await launchChromium(join(dir, 'chromium-profile'));
    page = await browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await host?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('lists a package with its bindings in words, runs a manual one with the Run button, and shows the run with each activity', async () => {
    const folder = await writePackage(dir, 'reporter', {
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
