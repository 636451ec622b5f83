import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type DashboardHarness, startDashboard, visible } from '../support/browser.ts';
import { manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

/** Rows the Events page asks for at a time (EVENTS_PAGE_SIZE in web/src/pages/events-page.tsx). */
const PAGE_SIZE = 50;

describe('the dashboard Events page, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;
  let page: Page;

  const rows = (): Locator => page.locator('.event-row');
  const types = async (): Promise<string[]> => rows().locator('.event-type').allTextContents();
  const open = async (): Promise<void> => {
    await page.goto(`${harness.server.url}/#/events`);
    await visible(page.getByRole('heading', { name: 'Events' }));
    await visible(rows());
  };

  beforeAll(async () => {
    harness = await startDashboard('loom-web-events-', { rate_limit: { per_minute: 1_000_000 } });
    const { kernel } = harness.host;
    const tools = `[capabilities]\ntools = ["memory_store"]\nmemory_write = ["self.*"]\n`;
    await kernel.spawn(manifest(`name = "keeper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n${tools}`));
    await kernel.spawn(manifest(`name = "idler"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`));
    // A turn with a tool call that runs and one the agent is not granted, before any page is open.
    model.script([
      {
        toolCalls: [
          { name: 'memory_store', input: { key: 'self.a', value: '1' } },
          { name: 'file_read', input: { path: 'secret.txt' } },
        ],
      },
      { text: 'Stored.', usage: { inputTokens: 40, outputTokens: 8 } },
    ]);
    await kernel.send('keeper', 'remember a');
    // A turn whose every model fails.
    model.script([{ status: 400 }]);
    await kernel.send('idler', 'hello').catch(() => undefined);
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

  it('lists turns, tool calls, refusals and model errors from before the page opened, newest first, and still after a reload', async () => {
    await open();
    expect((await types()).slice(0, 6)).toEqual(['model-fail', 'turn-finish', 'tool-deny', 'tool-finish', 'agent-spawn', 'agent-spawn']);
    const turn = rows().filter({ hasText: 'turn-finish' });
    await visible(turn, 'keeper');
    await visible(turn, /openai\/gpt-4o · 2 model calls · 50 in \/ 13 out/);
    await visible(rows().filter({ hasText: 'tool-deny' }), /file_read: .*may not call file_read/);
    await visible(rows().filter({ hasText: 'model-fail' }), 'MODEL_CALL_FAILED');

    await page.reload();
    await visible(rows().filter({ hasText: 'turn-finish' }), 'keeper');
    expect((await types()).slice(0, 2)).toEqual(['model-fail', 'turn-finish']);
  });

  it('narrows the list by kind, outcome and agent, and clears the filters', async () => {
    await open();
    await page.getByLabel('Kind', { exact: true }).selectOption('tool');
    await expect.poll(types).toEqual(['tool-deny', 'tool-finish']);
    await page.getByLabel('Outcome', { exact: true }).selectOption('refused');
    await expect.poll(types).toEqual(['tool-deny']);
    await page.getByLabel('Kind', { exact: true }).selectOption('');
    await page.getByLabel('Outcome', { exact: true }).selectOption('failed');
    await expect.poll(types).toEqual(['model-fail']);
    await page.getByLabel('Outcome', { exact: true }).selectOption('');
    await page.getByLabel('Agent', { exact: true }).selectOption('idler');
    await expect.poll(types).toEqual(['model-fail', 'agent-spawn']);
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(async () => (await types()).length).toBeGreaterThanOrEqual(6);
  });

  it('shows events as they happen on top of the history, and only those the filters let through', async () => {
    await open();
    await page.getByLabel('Kind', { exact: true }).selectOption('agent');
    await expect.poll(types).toEqual(['agent-spawn', 'agent-spawn']);
    await harness.host.kernel.suspend('idler');
    await expect.poll(types).toEqual(['agent-suspend', 'agent-spawn', 'agent-spawn']);
    await expect.poll(() => rows().first().getAttribute('class')).toContain('live');
    model.script([{ text: 'Back.' }]);
    await harness.host.kernel.resume('idler');
    await harness.host.kernel.send('keeper', 'anything new?');
    await expect.poll(types).toEqual(['agent-resume', 'agent-suspend', 'agent-spawn', 'agent-spawn']);
  });

  it('pages back through a long history with "Load older events" down to its beginning', async () => {
    const { kernel } = harness.host;
    for (let index = 0; index < PAGE_SIZE; index += 1) await kernel.spawn(manifest(`name = "crowd-${index}"`));
    await open();
    await expect.poll(async () => rows().count()).toBe(PAGE_SIZE);
    expect(await rows().first().textContent()).toContain('crowd-49');
    expect(await rows().filter({ hasText: 'keeper' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Load older events' }).click();
    await visible(page.getByText('The beginning of the log.'));
    const all = await types();
    expect(all.length).toBeGreaterThan(PAGE_SIZE);
    expect(all.slice(-2)).toEqual(['agent-spawn', 'agent-spawn']);
    await visible(rows().last(), 'keeper');
    await visible(rows().filter({ hasText: 'turn-finish' }), 'keeper');
  });
});
