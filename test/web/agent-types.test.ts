import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { type DashboardHarness, startDashboard, visible } from '../support/browser.ts';
import { manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

describe('the dashboard for agent types, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;
  let page: Page;
  const modelToml = () => `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`;

  beforeAll(async () => {
    harness = await startDashboard('loom-web-types-', { rate_limit: { per_minute: 1_000_000 } }, { runSchedules: true });
    page = await harness.browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  it("shows a workflow's plan with live task states, and approves it with a button", async () => {
    await harness.host.kernel.spawn(manifest(`name = "researcher"\ndescription = "Finds facts"\n${modelToml()}`));
    await harness.host.kernel.spawn(
      manifest(
        `name = "lead"\nmodule = "builtin:workflow"\n${modelToml()}[capabilities]\ntools = ["agent_message"]\nagent_message = ["researcher"]\n[workflow]\nmanaged_agents = ["researcher"]\n`,
      ),
    );
    model.script([
      {
        text: JSON.stringify({
          summary: 'look it up',
          missing_info: null,
          tasks: [{ id: 't1', title: 'find the facts', instruction: 'find them', agent: 'researcher', depends_on: [], acceptance: 'facts found' }],
        }),
      },
    ]);
    await harness.host.kernel.send('lead', 'what are tides?');

    await page.goto(`${harness.server.url}/#/agents/lead`);
    await visible(page.getByRole('heading', { name: 'Workflow: awaiting approval' }));
    await visible(page.locator('[data-task="t1"]'), 'pending');
    model.script([{ text: 'the moon pulls the sea' }, { text: JSON.stringify({ accepted: true, feedback: '' }) }, { text: 'Tides come from the moon.' }]);
    await page.getByRole('button', { name: 'Approve' }).click();
    await visible(page.getByRole('heading', { name: 'Workflow: completed' }));
    await visible(page.locator('[data-task="t1"]'), 'completed');
    await visible(page.getByTestId('workflow'), 'Tides come from the moon.');
  });

  it("shows a chain-of-thought agent's last trace", async () => {
    await harness.host.kernel.spawn(manifest(`name = "thinker"\nmodule = "builtin:chain-of-thought"\n${modelToml()}`));
    model.script([{ text: JSON.stringify({ complexity: 'trivial', confidence: 0.95, needs_planning: false }) }, { text: 'Four.' }]);
    await harness.host.kernel.send('thinker', 'two plus two?');
    await page.goto(`${harness.server.url}/#/agents/thinker`);
    await visible(page.getByTestId('thought-trace'), 'two plus two?');
    await visible(page.getByTestId('thought-trace'), 'loop 1 · assess');
    await visible(page.getByTestId('thought-trace'), '"confidence": 0.95');
  });
});
