import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/http/index.ts';
import { parseManifest } from '../../src/manifest/index.ts';
import { type DashboardHarness, startDashboard, VISIBLE, visible } from '../support/browser.ts';
import type { TestHost } from '../support/test-host.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

const SCREENSHOTS = process.env['LOOM_SCREENSHOTS'] === '1' ? join(import.meta.dirname, '../../docs/screenshots') : undefined;
// A fake clock never refills the rate limiter's bucket: give the dashboard's requests room.
const CONFIG = { rate_limit: { per_minute: 1_000_000 } };

function agentToml(name: string, modelUrl: string): string {
  return `name = "${name}"\ndescription = "Answers questions in the dashboard test"\n\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${modelUrl}"\n\n[capabilities]\ntools = ["memory_store"]\nmemory_write = ["self.*"]\n`;
}

/** An agent whose file_write waits for a person's approval. */
const GUARDED_TOML = (modelUrl: string): string =>
  `name = "guarded"\n\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${modelUrl}"\n\n[capabilities]\ntools = ["file_write"]\n\n[autonomous]\napproval_required_for = ["file_write"]\n`;

describe('the dashboard, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let host: TestHost;
  let server: RunningHttpServer;
  let browser: BrowserContext;
  let page: Page;

  let harness: DashboardHarness;

  beforeAll(async () => {
    harness = await startDashboard('loom-web-', CONFIG);
    ({ host, server, browser } = harness);
    if (SCREENSHOTS !== undefined) await mkdir(SCREENSHOTS, { recursive: true });
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  beforeEach(async () => {
    page = await browser.newPage();
    return async () => {
      await page.close();
    };
  });

  /** With LOOM_SCREENSHOTS=1, the README's pictures of the page as it is: at desktop width, and at a phone's (390 px). */
  const screenshot = async (name: string): Promise<void> => {
    if (SCREENSHOTS === undefined) return;
    await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
    const desktop = page.viewportSize();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-phone.png`) });
    if (desktop !== null) await page.setViewportSize(desktop);
  };

  it('serves the app at / and for client routes, while unknown API routes stay JSON 404s', async () => {
    for (const path of ['/', '/agents/someone']) {
      const response = await fetch(`${server.url}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/html');
      expect(await response.text()).toContain('<div id="app">');
    }
    const missing = await fetch(`${server.url}/api/nothing-here`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: 'ROUTE_NOT_FOUND' } });
  });

  it('shows a refused manifest error inline naming the field, then spawns the fixed manifest and opens the agent', async () => {
    await page.goto(server.url);
    await visible(page.getByRole('heading', { name: 'Agents' }));
    await visible(page.getByText('No agents yet'));
    await page.getByRole('button', { name: '+ Spawn agent' }).click();
    const editor = page.getByRole('textbox', { name: 'Manifest' });
    await visible(editor);
    expect(await editor.inputValue()).toContain('[model]');

    await editor.fill(`name = "helper"\n\n[model]\nprovider = "openai"\n`);
    await page.getByRole('button', { name: 'Spawn', exact: true }).click();
    const error = page.getByTestId('manifest-error');
    await visible(error);
    await visible(error, 'MANIFEST_INVALID');
    await visible(error, '[model].model');
    await visible(error, 'line 3');

    await editor.fill(agentToml('helper', model.url));
    await page.getByRole('button', { name: 'Spawn', exact: true }).click();
    await page.waitForURL(/#\/agents\/helper$/, VISIBLE);
    await visible(page.getByTestId('state-badge'), /^running$/);
    await visible(page.getByRole('list', { name: 'Capabilities' }), 'memory_write');
    await visible(page.getByTestId('manifest'), 'name = "helper"');
    await page.getByRole('button', { name: 'JSON' }).click();
    await visible(page.getByTestId('manifest'), '"name": "helper"');
  });

  it('streams the reply into the chat and shows the tool call and the usage as they arrive', async () => {
    model.script([
      { toolCalls: [{ name: 'memory_store', input: { key: 'self.greeting', value: 'hello' } }] },
      { text: 'Stored it. Hello from the scripted model!' },
    ]);
    await page.goto(`${server.url}/#/agents/helper/chat`);
    await visible(page.getByRole('heading', { name: /Chat with helper/ }));
    await page.getByRole('textbox', { name: 'Message' }).fill('Remember a greeting, then say hello');
    await page.getByRole('button', { name: 'Send' }).click();

    await visible(page.getByTestId('tool-call'), 'memory_store');
    await visible(page.getByTestId('tool-call'), 'self.greeting');
    await visible(page.getByTestId('tool-result'));
    await visible(page.getByTestId('reply'), 'Hello from the scripted model!');
    await visible(page.getByTestId('turn-usage'), '2 model calls');
    expect(model.remaining()).toBe(0);
    await screenshot('chat');
  });

  it('lists the agent with its model and tokens on the agents page, and shows a suspend and a resume on the live events page as they happen', async () => {
    await page.goto(server.url);
    const row = page.locator('tr[data-agent="helper"]');
    await visible(row);
    await visible(row.getByTestId('state-badge'), /^running$/);
    await visible(row, 'openai/gpt-4o');
    await visible(row.locator('td').nth(3).filter({ hasNotText: /^0$/ }));
    await screenshot('agents');

    await page.getByRole('link', { name: 'Events' }).click();
    await visible(page.getByRole('heading', { name: 'Events' }));
    await visible(page.getByText('Live'));
    await host.kernel.suspend('helper');
    await visible(page.locator('.event-row').filter({ hasText: 'agent-suspend' }), 'helper');
    await host.kernel.resume('helper');
    await visible(page.locator('.event-row').filter({ hasText: 'agent-resume' }));
  });

  it('suspends the agent from its page and the badge turns to suspended, then resumes it', async () => {
    await page.goto(`${server.url}/#/agents/helper`);
    const badge = page.getByTestId('state-badge');
    await visible(badge, /^running$/);
    await page.getByRole('button', { name: 'Suspend' }).click();
    await visible(badge, /^suspended$/);
    expect(host.kernel.get('helper').state).toBe('suspended');
    await page.getByRole('button', { name: 'Resume' }).click();
    await visible(badge, /^running$/);
    await visible(page.getByTestId('tool-call'), 'memory_store');
    await screenshot('agent');
  });

  it('shows usage by agent and model with a cost chart, and an empty approvals page when nothing waits', async () => {
    await page.goto(`${server.url}/#/usage`);
    await visible(page.getByRole('table', { name: 'Usage' }), 'helper');
    await visible(page.getByTestId('cost-chart').locator('canvas'));
    await screenshot('usage');
    await page.getByRole('link', { name: 'Approvals' }).click();
    await visible(page.getByText('No tool calls are waiting for approval.'));
    expect(await page.getByTestId('pending-approvals').count()).toBe(0);
  });

  it('shows a guarded file_write as waiting in the chat, lists it live on the approvals page with a sidebar count, and approving it there lets the chat finish the reply', async () => {
    await host.kernel.spawn(parseManifest(GUARDED_TOML(model.url), { source: 'test.toml' }).manifest);
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'plan.md', content: '# Plan' } }] }, { text: 'The plan is written.' }]);
    // The approvals page is open before the request exists, so it must refresh on the live event.
    const approvals = await browser.newPage();
    try {
      await approvals.goto(`${server.url}/#/approvals`);
      await visible(approvals.getByText('No tool calls are waiting for approval.'));

      await page.goto(`${server.url}/#/agents/guarded/chat`);
      await visible(page.getByRole('heading', { name: /Chat with guarded/ }));
      await page.getByRole('textbox', { name: 'Message' }).fill('Write the plan');
      await page.getByRole('button', { name: 'Send' }).click();
      await visible(page.getByTestId('approval-request'), 'needs your approval');
      await visible(page.getByTestId('approval-request'), 'plan.md');

      const card = approvals.getByTestId('approval');
      await visible(card, 'guarded');
      await visible(card, 'file_write');
      await visible(card.getByTestId('approval-input'), '"path": "plan.md"');
      await visible(card, /expires (in|overdue)/);
      await visible(approvals.getByTestId('pending-approvals'), /^1$/);
      await screenshot('approvals');
      await card.getByRole('button', { name: 'Approve' }).click();
      await visible(approvals.getByText('No tool calls are waiting for approval.'));

      await visible(page.getByTestId('tool-result'), 'file_write');
      await visible(page.getByTestId('reply'), 'The plan is written.');
      await visible(page.getByTestId('approval-request'), 'approved');
      await visible(page.getByTestId('turn-usage'), '2 model calls');
      expect(await readFile(join(host.home.workspacesDir, 'guarded', 'plan.md'), 'utf8')).toBe('# Plan');
      expect(await host.kernel.approvals.list('approved')).toMatchObject([{ tool: 'file_write', decidedBy: 'local' }]);
      expect(await approvals.getByTestId('pending-approvals').count()).toBe(0);
      // Decided requests stay listed, with who decided.
      await approvals.getByRole('button', { name: 'Decided' }).click();
      await visible(approvals.getByTestId('decided-approval'), /file_write\s*approved by local/);
    } finally {
      await approvals.close();
    }
  });

  it("denies a guarded tool call from the chat's own Deny button: the tool result is an error, no file is written, and the reply still arrives", async () => {
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'secret.md', content: 'no' } }] }, { text: 'Understood, I did not write it.' }]);
    await page.goto(`${server.url}/#/agents/guarded/chat`);
    await page.getByRole('textbox', { name: 'Message' }).fill('Write the secret');
    await page.getByRole('button', { name: 'Send' }).click();
    const line = page.getByTestId('approval-request').filter({ hasText: 'secret.md' });
    await visible(line, 'needs your approval');
    await line.getByRole('button', { name: 'Deny' }).click();
    await visible(line, 'denied');
    await visible(page.locator('[data-testid="tool-result"].error'), 'file_write');
    await visible(page.getByTestId('reply'), 'Understood, I did not write it.');
    expect(existsSync(join(host.home.workspacesDir, 'guarded', 'secret.md'))).toBe(false);
  });
});
