import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardHarness, startDashboard, visible } from '../support/browser.ts';
import { manifest } from '../support/test-kernel.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { activityJson, bindingJson, packageConfig, writePackage } from '../packages/support.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

/**
 * axe-core's browser bundle, evaluated in each page. Not added as a `<script>`: the dashboard's
 * Content-Security-Policy (`script-src 'self'`) refuses inline scripts, as it should.
 */
const AXE_SCRIPT = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** What `axe.run` reports of one violated rule. */
interface AxeViolation {
  id: string;
  impact: 'minor' | 'moderate' | 'serious' | 'critical' | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/** The screens every page is checked at. */
const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 820 },
  { name: 'phone', width: 390, height: 844 },
] as const;
const SCHEMES = ['light', 'dark'] as const;

/** Runs axe on the page and returns its serious and critical violations, one readable line each. */
async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate<boolean>("typeof axe === 'object'"))) await page.evaluate(AXE_SCRIPT);
  // Expressions run in the page (the tests' own TypeScript has no DOM types).
  const violations = await page.evaluate<AxeViolation[]>("axe.run(document, { resultTypes: ['violations'] }).then((results) => results.violations)");
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .flatMap((violation) =>
      violation.nodes.map(
        (node) =>
          `${violation.id} (${violation.impact}): ${violation.help} at ${node.target.join(' ')}${node.failureSummary === undefined ? '' : ` — ${node.failureSummary.replace(/\s+/g, ' ')}`}`,
      ),
    );
}

describe('every dashboard page, in Chromium at desktop and phone width, light and dark', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;

  /** Each page, its title, and something that shows once its data is in. */
  const pages: { path: string; title: string; ready: (page: Page) => Locator }[] = [
    { path: '#/agents', title: 'Agents · Loom', ready: (page) => page.locator('tr[data-agent="helper"]') },
    { path: '#/agents/helper', title: 'helper · Agents · Loom', ready: (page) => page.getByTestId('state-badge') },
    { path: '#/agents/helper/chat', title: 'Chat with helper · Loom', ready: (page) => page.getByRole('textbox', { name: 'Message' }) },
    { path: '#/approvals', title: 'Approvals · Loom', ready: (page) => page.getByText('No tool calls are waiting for approval.') },
    { path: '#/events', title: 'Events · Loom', ready: (page) => page.getByRole('table', { name: 'Events' }) },
    { path: '#/usage', title: 'Usage · Loom', ready: (page) => page.getByTestId('cost-chart').locator('canvas') },
    { path: '#/packages', title: 'Packages · Loom', ready: (page) => page.getByText('reporter').first() },
    { path: '#/tools', title: 'Tools · Loom', ready: (page) => page.getByRole('heading', { level: 1, name: /tools/i }) },
    { path: '#/channels', title: 'Channels · Loom', ready: (page) => page.getByTestId('channel').first() },
    { path: '#/no-such-page', title: 'Not found · Loom', ready: (page) => page.getByText('Nothing lives at') },
  ];

  beforeAll(async () => {
    const channels = [{ name: 'hooks', kind: 'webhook', agent: 'helper', secret_env: 'HOOK_SECRET', reply_url: 'http://127.0.0.1:9/replies' }];
    harness = await startDashboard(
      'loom-web-a11y-',
      { ...packageConfig(model.url), rate_limit: { per_minute: 1_000_000 }, channels },
      { packages: true, channels: true, env: { ...TEST_KEYS, HOOK_SECRET: 'secret' } },
    );
    const { host } = harness;
    await host.kernel.spawn(
      manifest(
        `name = "helper"\ndescription = "Answers questions"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n[capabilities]\ntools = ["memory_store"]\nmemory_write = ["self.*"]\n`,
      ),
    );
    model.script([
      { toolCalls: [{ name: 'memory_store', input: { key: 'self.note', value: 'hello' } }] },
      { text: 'Stored it.', usage: { inputTokens: 120, outputTokens: 30 } },
    ]);
    await host.kernel.send('helper', 'Remember hello');
    await host.channels.start();
    const folder = await writePackage(harness.dir, 'reporter', { workflows: { now: bindingJson({ type: 'manual' }, [activityJson('gather')]) } });
    const response = await fetch(`${harness.server.url}/api/packages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ source: folder }),
    });
    expect(response.status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  for (const viewport of VIEWPORTS) {
    for (const scheme of SCHEMES) {
      it(`has a title, no serious or critical axe violation and nothing wider than the screen on any page (${viewport.name}, ${scheme})`, async () => {
        const page = await harness.browser.newPage();
        try {
          await page.setViewportSize({ width: viewport.width, height: viewport.height });
          await page.emulateMedia({ colorScheme: scheme });
          const found: string[] = [];
          // Nothing a page does breaks the dashboard's Content-Security-Policy (an inline style or a
          // remote font would be refused and the page would look broken without a failing test).
          page.on('console', (message) => {
            if (message.text().includes('Content Security Policy')) found.push(`${page.url()}: ${message.text()}`);
          });
          for (const entry of pages) {
            await page.goto(`${harness.server.url}/${entry.path}`);
            await visible(entry.ready(page));
            await page.waitForFunction(`document.title === ${JSON.stringify(entry.title)}`, undefined, { timeout: 5_000 }).catch(() => undefined);
            expect(await page.title()).toBe(entry.title);
            // The theme follows the system: the page's background is dark exactly under a dark scheme.
            const background = await page.evaluate<string>('getComputedStyle(document.documentElement).backgroundColor');
            expect(background, `${entry.path} in the ${scheme} theme`).toBe(scheme === 'dark' ? 'rgb(15, 18, 32)' : 'rgb(246, 247, 251)');
            const widths = await page.evaluate<{ scroll: number; client: number }>(
              '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
            );
            expect(widths.scroll, `${entry.path} is wider than the screen at ${viewport.width} px`).toBeLessThanOrEqual(widths.client);
            for (const line of await seriousViolations(page)) found.push(`${entry.path}: ${line}`);
          }
          expect(found).toEqual([]);
        } finally {
          await page.close();
        }
      }, 120_000);
    }
  }

  it("keeps the chat's message box on screen at phone width, below a long conversation", async () => {
    const page = await harness.browser.newPage();
    try {
      await page.setViewportSize({ width: 390, height: 844 });
      for (let index = 0; index < 6; index += 1) {
        model.script([{ text: `Reply number ${index}: ${'a long answer that wraps over several lines on a phone '.repeat(4)}` }]);
        await harness.host.kernel.send('helper', `Question ${index}`);
      }
      await page.goto(`${harness.server.url}/#/agents/helper/chat`);
      const box = page.getByRole('textbox', { name: 'Message' });
      await visible(box);
      await visible(page.getByText('Reply number 5'));
      const bounds = await box.boundingBox();
      expect(bounds).not.toBeNull();
      expect((bounds?.y ?? 0) + (bounds?.height ?? 0)).toBeLessThanOrEqual(844);
      expect(bounds?.y ?? -1).toBeGreaterThanOrEqual(0);
    } finally {
      await page.close();
    }
  }, 60_000);
});
