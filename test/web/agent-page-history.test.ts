import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseManifest } from '../../src/manifest/index.ts';
import { type DashboardHarness, startDashboard, VISIBLE, visible } from '../support/browser.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

const REPLY = [
  '## Findings',
  '',
  'Here is **the point**:',
  '',
  '- first',
  '- second',
  '',
  '<script>window.__pwned = "history";</script>',
  '<img src="x" onerror="window.__pwned = \'img\'">',
].join('\n');

/** The agent page's session history showed the agent's Markdown as raw text, a `<script>` among it; it renders it as the chat does. */
describe("the session history on an agent's page", () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;

  beforeAll(async () => {
    harness = await startDashboard('loom-web-history-', { rate_limit: { per_minute: 1_000_000 } });
  }, 120_000);
  afterAll(() => harness?.close());

  it("renders what the agent wrote as Markdown, runs none of its HTML, and shows the person's words as typed", async () => {
    const toml = `name = "writer"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`;
    await harness.host.kernel.spawn(parseManifest(toml, { source: 'writer.toml' }).manifest);
    model.script([{ text: REPLY }]);
    await harness.host.kernel.send('writer', 'Write **this** down');
    const page = await harness.browser.newPage();
    await page.goto(`${harness.server.url}/#/agents/writer`);
    const reply = page.getByTestId('history-reply');
    await visible(reply.getByRole('heading', { name: 'Findings' }));
    await visible(reply.locator('strong'), 'the point');
    expect(await reply.locator('li').allTextContents()).toEqual(['first', 'second']);
    expect(await reply.innerText()).not.toContain('## Findings');
    expect(await reply.locator('script').count()).toBe(0);
    expect(await reply.locator('[onerror]').count()).toBe(0);
    await page.waitForLoadState('load', VISIBLE);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
    // The person's message is shown as typed, not as Markdown.
    await visible(page.getByTestId('history-message'), 'Write **this** down');
  });

  it('has the sidebar say the daemon does not answer once it is gone, not the version it had', async () => {
    const page = await harness.browser.newPage();
    await page.goto(`${harness.server.url}/#/agents`);
    await visible(page.getByTestId('daemon-status'), 'daemon 9.9.9-test');
    await harness.stopServer();
    await visible(page.getByTestId('daemon-status'), 'daemon unreachable');
  });
});
