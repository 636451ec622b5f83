import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardHarness, startDashboard, VISIBLE, visible } from '../support/browser.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

/**
 * The spawn editor's template used to pin openai/gpt-4o-mini, so a person without an OpenAI key
 * started from a "cannot run" warning. It runs on the daemon's default model instead.
 */
describe("the spawn editor's template, on a daemon without keys", () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;

  beforeAll(async () => {
    // A keyless default model (a local OpenAI-compatible server), and no key in the environment.
    harness = await startDashboard(
      'loom-web-template-',
      { rate_limit: { per_minute: 1_000_000 }, default_model: { provider: 'openai-compatible', model: 'scripted', base_url: model.url } },
      { env: {} },
    );
  }, 120_000);
  afterAll(async () => {
    await harness?.close();
  });

  it('spawns as it stands, with no warning, an agent that runs on the default model', async () => {
    const page = await harness.browser.newPage();
    await page.goto(harness.server.url);
    await page.getByRole('button', { name: '+ Spawn agent' }).click();
    const editor = page.getByRole('textbox', { name: 'Manifest' });
    await visible(editor);
    expect(await editor.inputValue()).not.toMatch(/^provider\s*=/m);
    // The daemon's check of the text as it stands: no problem, no warning.
    await page.waitForResponse((response) => response.url().endsWith('/api/manifests/validate'), VISIBLE);
    expect(await page.getByTestId('manifest-warnings').count()).toBe(0);
    await page.getByRole('button', { name: 'Spawn', exact: true }).click();
    await page.waitForURL(/#\/agents\/my-agent$/, VISIBLE);
    await visible(page.getByTestId('agent-model'), 'openai-compatible/scripted (default)');
    await visible(page.getByTestId('state-badge'), /^running$/i);
    expect(await page.getByTestId('cannot-run').count()).toBe(0);
  });
});
