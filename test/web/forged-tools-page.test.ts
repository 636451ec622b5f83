import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardHarness, startDashboard, visible } from '../support/browser.ts';
import { manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

describe('the dashboard Tools page, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;
  let page: Page;
  const APPROVE = { text: JSON.stringify({ approved: true, confidence: 0.93, issues: ['could check n'] }) };

  beforeAll(async () => {
    harness = await startDashboard('loom-web-tools-', {
      rate_limit: { per_minute: 1_000_000 },
      default_model: { provider: 'openai', model: 'gpt-4o', base_url: model.url },
    });
    page = await harness.browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  it('lists forged tools with tier and stats, shows verdicts and the persisted source, and promotes with a button', async () => {
    const smith = `name = "smith"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n[capabilities]\ntools = ["forge_tool"]\n[emergent]\npersist_sandbox_source = true\n`;
    await harness.host.kernel.spawn(manifest(smith));
    model.script([APPROVE]);
    const outcome = await harness.host.kernel.forgedTools.forge(
      'smith',
      {
        name: 'double_it',
        description: 'Doubles a number',
        inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
        implementation: { mode: 'sandbox', code: 'function execute(input) {\n  return { n: input.n * 2 };\n}', allowlist: [] },
        testCases: [{ input: { n: 2 }, expectedOutput: { n: 4 } }],
      },
      'test',
    );
    expect(outcome.ok ? 'registered' : outcome.reason).toBe('registered');
    await harness.host.kernel.runAgentTool('smith', 'double_it', { n: 5 });

    await page.goto(`${harness.server.url}/#/tools`);
    const row = page.getByTestId('forged-tool');
    await visible(row, 'double_it');
    await visible(row, 'session');
    await visible(row, '100%');
    await page.getByRole('button', { name: 'double_it' }).click();
    await visible(page.getByTestId('tool-verdicts'), 'creation: approved, confidence 0.93 — could check n');
    await visible(page.getByTestId('tool-source'), 'return { n: input.n * 2 };');

    model.script([APPROVE, APPROVE]);
    await page.getByRole('button', { name: 'Promote' }).click();
    await visible(page.getByTestId('tool-note'), 'Promoted to the agent tier.');
    await visible(row, 'agent');
  });
});
