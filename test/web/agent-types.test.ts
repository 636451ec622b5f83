import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { ConfigSchema } from '../../src/config/index.ts';
import { createHttpApp, type RunningHttpServer, startHttpServer } from '../../src/http/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { buildDashboard, launchChromium, visible } from '../helpers/browser.ts';
import { openTestHost, type TestHost } from '../helpers/test-host.ts';
import { manifest } from '../helpers/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

describe('the dashboard for agent types, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let dir: string;
  let host: TestHost;
  let server: RunningHttpServer;
  let browser: BrowserContext;
  let page: Page;
  const config = { rate_limit: { per_minute: 1_000_000 } };
  const modelToml = () => `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'loom-web-types-'));
    const outDir = join(dir, 'dist');
    await buildDashboard(outDir);
    host = await openTestHost(dir, config, undefined, { runSchedules: true });
    const app = createHttpApp({ kernel: host.kernel, config: ConfigSchema.parse(config), env: { LOOM_DASHBOARD_DIR: outDir }, clock: host.clock, logger: createSilentLogger(), version: '9.9.9-test' });
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

  it("shows a workflow's plan with live task states, and approves it with a button", async () => {
    await host.kernel.spawn(manifest(`name = "researcher"\ndescription = "Finds facts"\n${modelToml()}`));
    await host.kernel.spawn(manifest(`name = "lead"\nmodule = "builtin:workflow"\n${modelToml()}[capabilities]\nagent_message = ["researcher"]\n[workflow]\nmanaged_agents = ["researcher"]\n`));
    model.script([{ text: JSON.stringify({ summary: 'look it up', missing_info: null, tasks: [{ id: 't1', title: 'find the facts', instruction: 'find them', agent: 'researcher', depends_on: [], acceptance: 'facts found' }] }) }]);
    await host.kernel.send('lead', 'what are tides?');

    await page.goto(`${server.url}/#/agents/lead`);
    await visible(page.getByRole('heading', { name: 'Workflow: awaiting approval' }));
    await visible(page.locator('[data-task="t1"]'), 'pending');
    model.script([{ text: 'the moon pulls the sea' }, { text: JSON.stringify({ accepted: true, feedback: '' }) }, { text: 'Tides come from the moon.' }]);
    await page.getByRole('button', { name: 'Approve' }).click();
    await visible(page.getByRole('heading', { name: 'Workflow: completed' }));
    await visible(page.locator('[data-task="t1"]'), 'completed');
    await visible(page.getByTestId('workflow'), 'Tides come from the moon.');
  });

  it("shows a chain-of-thought agent's last trace", async () => {
    await host.kernel.spawn(manifest(`name = "thinker"\nmodule = "builtin:chain-of-thought"\n${modelToml()}`));
    model.script([{ text: JSON.stringify({ complexity: 'trivial', confidence: 0.95, needs_planning: false }) }, { text: 'Four.' }]);
    await host.kernel.send('thinker', 'two plus two?');
    await page.goto(`${server.url}/#/agents/thinker`);
    await visible(page.getByTestId('thought-trace'), 'two plus two?');
    await visible(page.getByTestId('thought-trace'), 'loop 1 · assess');
    await visible(page.getByTestId('thought-trace'), '"confidence": 0.95');
  });
});
