import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseManifest } from '../../src/manifest/index.ts';
import { type DashboardHarness, startDashboard, visible } from '../support/browser.ts';

// A fake clock never refills the rate limiter's bucket: give the dashboard's requests room.
const CONFIG = { rate_limit: { per_minute: 1_000_000 } };

/** An agent with no model used to show a green "Running" badge everywhere: it says it cannot run, and why. */
describe('an agent that cannot run, in the dashboard', () => {
  let harness: DashboardHarness;
  let page: Page;

  beforeAll(async () => {
    // No [default_model] in config.toml: an agent without [model] has nothing to run on.
    harness = await startDashboard('loom-web-cannot-run-', CONFIG);
    await harness.host.kernel.spawn(parseManifest('name = "blank"\n', { source: 'blank.toml' }).manifest);
    await harness.host.kernel.spawn(parseManifest('name = "ready"\n[model]\nprovider = "ollama"\nmodel = "llama3.2"\n', { source: 'ready.toml' }).manifest);
  }, 120_000);
  afterAll(async () => {
    await harness?.close();
  });
  beforeEach(async () => {
    page = await harness.browser.newPage();
    return async () => {
      await page.close();
    };
  });

  it('shows "cannot run" with the reason on hover in the agents list, and counts it apart from the running ones', async () => {
    await page.goto(`${harness.server.url}/#/agents`);
    const blank = page.locator('tr[data-agent="blank"]').getByTestId('state-badge');
    await visible(blank, /cannot run/i);
    expect(await blank.getAttribute('title')).toContain('no [default_model]');
    // As written: the badge's style used to capitalise every word ("Cannot Run").
    expect(await blank.innerText()).toBe('cannot run');
    await visible(page.locator('tr[data-agent="ready"]').getByTestId('state-badge'), /^running$/i);
    await visible(page.getByText('2 agents · 1 running · 1 cannot run'));
  });

  it("says on the agent's page and its chat why it cannot run and how to fix it", async () => {
    await page.goto(`${harness.server.url}/#/agents/blank`);
    await visible(page.getByTestId('state-badge'), /cannot run/i);
    await visible(page.getByTestId('cannot-run'), 'blank cannot run: it has no [model] and config.toml has no [default_model]');
    await visible(page.getByTestId('cannot-run'), 'To fix it: run `loom init`');
    await page.goto(`${harness.server.url}/#/agents/blank/chat`);
    await visible(page.getByTestId('state-badge'), /cannot run/i);
    await visible(page.getByTestId('cannot-run'), 'blank cannot run');
  });
});
