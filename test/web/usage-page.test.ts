import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardHarness, startDashboard, visible } from '../support/browser.ts';
import { manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

const HOUR = 3_600_000;

describe('the dashboard Usage page, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;
  let page: Page;

  const agent = (name: string, modelName: string): string =>
    `name = "${name}"\n[model]\nprovider = "openai"\nmodel = "${modelName}"\nbase_url = "${model.url}"\n`;
  const chart = (): ReturnType<Page['getByTestId']> => page.getByTestId('cost-chart');
  /** The series the chart's legend names (the time axis aside). */
  const legend = async (): Promise<string[]> =>
    (await chart().locator('.u-legend .u-series .u-label').allTextContents()).filter((label) => label !== 'Time').sort();

  beforeAll(async () => {
    harness = await startDashboard('loom-web-usage-', { rate_limit: { per_minute: 1_000_000 } });
    const { kernel, clock } = harness.host;
    await kernel.spawn(manifest(agent('writer', 'gpt-4o')));
    await kernel.spawn(manifest(agent('scout', 'gpt-4o-mini')));
    // Usage over three hours of the daemon's (fake) clock, which is nowhere near the browser's own time.
    model.script([{ text: 'one', usage: { inputTokens: 1_000, outputTokens: 200 } }]);
    await kernel.send('writer', 'draft');
    await clock.advance(HOUR);
    model.script([{ text: 'two', usage: { inputTokens: 300, outputTokens: 100 } }]);
    await kernel.send('scout', 'look');
    await clock.advance(2 * HOUR);
    model.script([{ text: 'three', usage: { inputTokens: 5_000, outputTokens: 1_000 } }]);
    await kernel.send('writer', 'again');
    page = await harness.browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  it("charts usage per model over the last 24 hours of the daemon's clock, then per agent, tokens or cost, with the pressed button marked", async () => {
    await page.goto(`${harness.server.url}/#/usage`);
    await visible(chart().locator('canvas'));
    expect(await legend()).toEqual(['openai/gpt-4o', 'openai/gpt-4o-mini']);
    const now = harness.host.clock.now();
    const from = Number(await chart().getAttribute('data-from'));
    const to = Number(await chart().getAttribute('data-to'));
    expect(to - from).toBe(24 * HOUR);
    expect(to).toBeGreaterThan(now);
    expect(to - now).toBeLessThanOrEqual(HOUR);

    await page.getByRole('button', { name: 'Tokens' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Tokens' }).getAttribute('aria-pressed')).toBe('true');
    expect(await page.getByRole('button', { name: 'Cost' }).getAttribute('aria-pressed')).toBe('false');
    // The y axis fits the largest hour (writer's 6,000 tokens), not a fixed scale.
    await expect.poll(async () => Number(await chart().getAttribute('data-largest'))).toBe(6_000);
    const yMax = Number(await chart().getAttribute('data-y-max'));
    expect(yMax).toBeGreaterThan(6_000);
    expect(yMax).toBeLessThan(6_601);

    await page.getByRole('button', { name: 'Per agent' }).click();
    await expect.poll(legend).toEqual(['scout', 'writer']);
    await visible(page.getByRole('heading', { name: 'Tokens over time, per agent' }));
  });

  it('lists totals by model and by agent, and an hour range leaves out what came before it', async () => {
    // Away and back: the page starts again (per model, cost, 24 hours).
    await page.goto(`${harness.server.url}/#/agents`);
    await page.goto(`${harness.server.url}/#/usage`);
    const byModel = page.getByRole('table', { name: 'Usage by model' });
    const row = async (table: ReturnType<Page['getByRole']>, name: RegExp): Promise<string[]> => {
      const found = table.locator('tbody tr').filter({ has: page.getByRole('cell', { name }) });
      await visible(found);
      return found.getByRole('cell').allTextContents();
    };
    expect(await row(byModel, /^openai\/gpt-4o$/)).toEqual(['openai/gpt-4o', '2', '6,000', '0', '0', '1,200', expect.stringMatching(/^\$/) as string]);
    expect(await row(byModel, /^openai\/gpt-4o-mini$/)).toEqual(['openai/gpt-4o-mini', '1', '300', '0', '0', '100', expect.stringMatching(/^\$/) as string]);
    expect((await row(page.getByRole('table', { name: 'Usage by agent' }), /^scout$/)).slice(0, 6)).toEqual(['scout', '1', '300', '0', '0', '100']);

    await page.getByRole('button', { name: '1h', exact: true }).click();
    await expect.poll(async () => Number(await chart().getAttribute('data-to')) - Number(await chart().getAttribute('data-from'))).toBe(HOUR);
    expect(await legend()).toEqual(['openai/gpt-4o']);
  });

  it('shows what the prompt cache read and wrote: per model and agent, in the totals, and on the turn and each model call of its trace', async () => {
    await harness.host.kernel.spawn(
      manifest('name = "keeper"\n[model]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\nbase_url = "' + model.url + '"\n'),
    );
    model.script([{ text: 'Cached.', usage: { inputTokens: 4_000, outputTokens: 20, cacheReadTokens: 3_000, cacheWriteTokens: 500 } }]);
    await harness.host.kernel.send('keeper', 'remember');
    await page.goto(`${harness.server.url}/#/agents`);
    await page.goto(`${harness.server.url}/#/usage`);
    const byModel = page.getByRole('table', { name: 'Usage by model' });
    const cached = byModel.locator('tbody tr').filter({ has: page.getByRole('cell', { name: 'anthropic/claude-sonnet-4-5' }) });
    await visible(cached);
    expect(await byModel.locator('thead th').allTextContents()).toEqual(['Model', 'Calls', 'Input', 'Cache read', 'Cache write', 'Output', 'Cost']);
    expect((await cached.getByRole('cell').allTextContents()).slice(0, 6)).toEqual(['anthropic/claude-sonnet-4-5', '1', '4,000', '3,000', '500', '20']);
    const byAgent = page
      .getByRole('table', { name: 'Usage by agent' })
      .locator('tbody tr')
      .filter({ has: page.getByRole('cell', { name: 'keeper' }) });
    expect((await byAgent.getByRole('cell').allTextContents()).slice(0, 5)).toEqual(['keeper', '1', '4,000', '3,000', '500']);
    await visible(page.locator('.stat').filter({ hasText: 'Cache read' }), '3,000');

    await page.goto(`${harness.server.url}/#/agents/keeper/chat`);
    const turn = page.locator('[data-testid="turn"][data-status="finished"]');
    await visible(turn.getByTestId('turn-usage'), '4,000 in · 3,000 cache read · 500 cache write · 20 out');
    const trace = turn.getByTestId('turn-trace');
    await trace.locator('summary').click();
    await visible(trace.getByTestId('trace-model'), '4,000 in · 3,000 cache read · 500 cache write · 20 out');
  });
});
