import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DashboardHarness, startDashboard, visible } from '../support/browser.ts';
import { TEST_KEYS } from '../support/test-host.ts';
import { manifest } from '../support/test-kernel.ts';
import { activityJson, bindingJson, packageConfig, writePackage } from '../packages/support.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * The dashboard's layouts at the widths people use: a small laptop (1024 px), a desktop (1280 px)
 * and a phone (390 px). On every page: nothing wider than the screen, no word broken inside a
 * pill, a button or an agent's name, every button inside its box, and no serious or critical
 * axe violation (a forged tool and a pending approval on screen). On the phone: the header leaves
 * the page most of the screen, and an approval asked in the chat is not hidden by the message box.
 */

const AXE_SCRIPT = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const WIDTHS = [
  { name: 'laptop', width: 1024, height: 768 },
  { name: 'desktop', width: 1280, height: 820 },
  { name: 'phone', width: 390, height: 844 },
] as const;

/** Pills, buttons and names: what must never break inside a word. */
const UNBREAKABLE = [
  '.badge',
  '.btn',
  'button',
  '.chip',
  '.event-type',
  '.tool-status',
  '.turn-status',
  '.nav-link',
  '.nav-count',
  '.cap-kind',
  '.segmented button',
  'tr[data-agent] a.strong',
].join(', ');

/**
 * In the page: each word (a run of non-space characters) inside a pill, button or name that the
 * browser laid out over more than one line, as `"<element text>": <word>`.
 */
const BROKEN_WORDS = `(() => {
  const found = [];
  for (const element of document.querySelectorAll(${JSON.stringify(UNBREAKABLE)})) {
    if (element.getClientRects().length === 0) continue;
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set([...range.getClientRects()].filter((rect) => rect.width > 0).map((rect) => Math.round(rect.top)));
        if (tops.size > 1) found.push(JSON.stringify(element.textContent.trim().slice(0, 60)) + ': ' + match[0]);
      }
    }
  }
  return found;
})()`;

/**
 * In the page: each button (or link styled as one) in the page that does not lie wholly inside
 * the screen's width and inside every box around it that clips (overflow other than visible).
 */
const CLIPPED_BUTTONS = `(() => {
  const found = [];
  const width = document.documentElement.clientWidth;
  for (const element of document.querySelectorAll('main .btn, main button')) {
    const rect = element.getBoundingClientRect();
    if (rect.width === 0) continue;
    let clipped = rect.left < -0.5 || rect.right > width + 0.5;
    for (let box = element.parentElement; box !== null && !clipped; box = box.parentElement) {
      const style = getComputedStyle(box);
      if (style.overflowX === 'visible') continue;
      const around = box.getBoundingClientRect();
      clipped = rect.left < around.left - 0.5 || rect.right > around.right + 0.5;
    }
    if (clipped) found.push(JSON.stringify(element.textContent.trim().slice(0, 40)) + ' at ' + Math.round(rect.left) + '–' + Math.round(rect.right) + ' px');
  }
  return found;
})()`;

/** What `axe.run` reports of one violated rule. */
interface AxeViolation {
  id: string;
  impact: 'minor' | 'moderate' | 'serious' | 'critical' | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate<boolean>("typeof axe === 'object'"))) await page.evaluate(AXE_SCRIPT);
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

/** Whether the middle of the button named `name` is what the screen shows there (nothing is drawn over it). */
async function uncovered(page: Page, button: Locator, name: string): Promise<boolean> {
  const box = await button.boundingBox();
  if (box === null) return false;
  const hit = `document.elementFromPoint(${box.x + box.width / 2}, ${box.y + box.height / 2})?.closest('button')?.textContent?.trim()`;
  return (await page.evaluate<string | undefined>(hit)) === name;
}

describe('the dashboard at 1024, 1280 and 390 px, in Chromium', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;

  /** Each page and something that shows once its data is in. */
  const pages: { path: string; ready: (page: Page) => Locator; open?: (page: Page) => Promise<void> }[] = [
    { path: '#/agents', ready: (page) => page.locator('tr[data-agent="research-assistant"]') },
    {
      path: '#/agents',
      ready: (page) => page.locator('tr[data-agent="research-assistant"]'),
      // The spawn editor opened: the manifest, its line numbers and its live check.
      open: async (page) => {
        await page.getByRole('button', { name: /spawn agent/i }).click();
        await visible(page.getByRole('textbox', { name: 'Manifest' }));
      },
    },
    { path: '#/agents/research-assistant', ready: (page) => page.getByTestId('state-badge') },
    { path: '#/agents/careful-writer/chat', ready: (page) => page.getByRole('button', { name: 'Approve' }) },
    { path: '#/approvals', ready: (page) => page.getByRole('button', { name: /approve/i }).first() },
    { path: '#/events', ready: (page) => page.getByRole('table', { name: 'Events' }) },
    { path: '#/usage', ready: (page) => page.getByTestId('cost-chart').locator('canvas') },
    { path: '#/packages', ready: (page) => page.getByText('reporter').first() },
    { path: '#/tools', ready: (page) => page.getByTestId('forged-tool').first() },
    {
      path: '#/tools',
      ready: (page) => page.getByTestId('forged-tool').first(),
      // A forged tool opened: its verdicts, schemas and source.
      open: async (page) => {
        await page.getByRole('button', { name: 'double_the_number' }).click();
        await visible(page.getByTestId('tool-detail'));
      },
    },
    { path: '#/channels', ready: (page) => page.getByTestId('channel').first() },
  ];

  beforeAll(async () => {
    const channels = [{ name: 'hooks', kind: 'webhook', agent: 'research-assistant', secret_env: 'HOOK_SECRET', reply_url: 'http://127.0.0.1:9/replies' }];
    harness = await startDashboard(
      'loom-web-layouts-',
      {
        ...packageConfig(model.url),
        default_model: { provider: 'openai', model: 'gpt-4o', base_url: model.url },
        rate_limit: { per_minute: 1_000_000 },
        channels,
      },
      { packages: true, channels: true, env: { ...TEST_KEYS, HOOK_SECRET: 'secret' } },
    );
    const { kernel } = harness.host;
    const openai = `[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`;
    await kernel.spawn(
      manifest(
        `name = "research-assistant"\ndescription = "Reads long reports about renewable energy markets and answers questions about them with sources and caveats, in plain words"\n${openai}[capabilities]\ntools = ["memory_store"]\nmemory_write = ["self.*"]\n`,
      ),
    );
    await kernel.spawn(
      manifest(
        `name = "summariser"\ndescription = "Summarises"\n[model]\nprovider = "openai-compatible"\nmodel = "meta-llama-3.1-70b-instruct-quantised-q4"\nbase_url = "${model.url}"\n`,
      ),
    );
    await kernel.spawn(manifest(`name = "night-shift"\n${openai}`));
    await kernel.suspend('night-shift');
    // A forged tool, on the Tools page (its name once read at 2.58:1).
    await kernel.spawn(manifest(`name = "smith"\n${openai}[capabilities]\ntools = ["forge_tool"]\n[emergent]\npersist_sandbox_source = true\n`));
    model.script([{ text: JSON.stringify({ approved: true, confidence: 0.93, issues: [] }) }]);
    const forged = await kernel.forgedTools.forge(
      'smith',
      {
        name: 'double_the_number',
        description: 'Doubles a number',
        inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
        implementation: { mode: 'sandbox', code: 'function execute(input) {\n  return { n: input.n * 2 };\n}', allowlist: [] },
        testCases: [{ input: { n: 2 }, expectedOutput: { n: 4 } }],
      },
      'test',
    );
    expect(forged.ok).toBe(true);
    model.script([
      { toolCalls: [{ name: 'memory_store', input: { key: 'self.note', value: 'hello' } }] },
      { text: 'Stored it.', usage: { inputTokens: 120, outputTokens: 30 } },
    ]);
    await kernel.send('research-assistant', 'Remember hello');
    await harness.host.channels.start();
    const folder = await writePackage(harness.dir, 'reporter', { workflows: { now: bindingJson({ type: 'manual' }, [activityJson('gather')]) } });
    expect(
      (
        await fetch(`${harness.server.url}/api/packages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ source: folder }),
        })
      ).status,
    ).toBe(201);
    // A turn waiting for a person: its Approve and Deny show in the chat and on the approvals page.
    await kernel.spawn(
      manifest(
        `name = "careful-writer"\n${openai}[capabilities]\ntools = ["file_write"]\nfile_write = ["*"]\n[autonomous]\napproval_required_for = ["file_write"]\n`,
      ),
    );
    // A conversation longer than a phone's screen, so the chat scrolls to reach the question.
    for (let index = 0; index < 4; index += 1) {
      model.script([{ text: `Draft ${index}: ${'a paragraph that wraps over several lines on a phone. '.repeat(5)}` }]);
      await kernel.send('careful-writer', `Draft number ${index}`);
    }
    model.script([{ toolCalls: [{ name: 'file_write', input: { path: 'notes.txt', content: 'hello' } }] }, { text: 'Written.' }]);
    kernel.send('careful-writer', 'Write hello into notes.txt').catch(() => undefined);
    await waitFor('the write to wait for approval', async () => {
      const pending = (await (await fetch(`${harness.server.url}/api/approvals`)).json()) as unknown[];
      return pending.length === 1 ? true : undefined;
    });
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  for (const screen of WIDTHS) {
    it(`fits every page at ${screen.width} px: no sideways scroll, no word broken in a pill, button or name, no button cut off, no serious axe violation`, async () => {
      const page = await harness.browser.newPage();
      try {
        await page.setViewportSize({ width: screen.width, height: screen.height });
        const found: string[] = [];
        for (const scheme of ['light', 'dark'] as const) {
          await page.emulateMedia({ colorScheme: scheme });
          for (const entry of pages) {
            await page.goto(`${harness.server.url}/${entry.path}`);
            await visible(entry.ready(page));
            await entry.open?.(page);
            const where = `${entry.path}${entry.open === undefined ? '' : ' (opened)'} (${scheme})`;
            if (scheme === 'light') {
              const widths = await page.evaluate<{ scroll: number; client: number }>(
                '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
              );
              if (widths.scroll > widths.client) found.push(`${where}: ${widths.scroll} px wide on a ${widths.client} px screen`);
              for (const word of await page.evaluate<string[]>(BROKEN_WORDS)) found.push(`${where}: a word broken over two lines in ${word}`);
              for (const button of await page.evaluate<string[]>(CLIPPED_BUTTONS)) found.push(`${where}: the button ${button} is cut off`);
            }
            for (const line of await seriousViolations(page)) found.push(`${where}: ${line}`);
          }
        }
        expect(found).toEqual([]);
      } finally {
        await page.close();
      }
    }, 180_000);
  }

  it('keeps the header of a phone screen to a fifth of it, the nav in two rows at most, on a long page and a short one', async () => {
    const page = await harness.browser.newPage();
    try {
      await page.setViewportSize({ width: 390, height: 844 });
      for (const [path, ready] of [
        ['#/agents', page.locator('tr[data-agent="research-assistant"]')],
        ['#/no-such-page', page.getByText('Nothing lives at')],
      ] as const) {
        await page.goto(`${harness.server.url}/${path}`);
        await visible(ready);
        const header = await page.locator('aside.sidebar').boundingBox();
        expect(header?.height ?? 844, `the header's height on ${path}`).toBeLessThanOrEqual(844 / 5);
        const tops = await page.evaluate<number[]>(
          "[...document.querySelectorAll('nav .nav-link')].map((link) => Math.round(link.getBoundingClientRect().top))",
        );
        expect(new Set(tops).size, `rows of the nav on ${path}`).toBeLessThanOrEqual(2);
        expect(tops.length).toBe(7);
      }
    } finally {
      await page.close();
    }
  }, 60_000);

  it("shows an approval asked in the chat above the phone's message box, not under it", async () => {
    const page = await harness.browser.newPage();
    try {
      await page.setViewportSize({ width: 390, height: 844 });
      await page.goto(`${harness.server.url}/#/agents/careful-writer/chat`);
      const approve = page.getByRole('button', { name: 'Approve' });
      const deny = page.getByRole('button', { name: 'Deny' });
      await visible(approve);
      // The chat scrolls to its end when it opens: the buttons are then on screen, and the message box is not drawn over them.
      await waitFor('the chat to scroll to its end', async () => ((await page.evaluate<number>('window.scrollY')) > 0 ? true : undefined));
      for (const [button, name] of [
        [approve, 'Approve'],
        [deny, 'Deny'],
      ] as const) {
        const box = await button.boundingBox();
        expect(box).not.toBeNull();
        expect((box?.y ?? 0) + (box?.height ?? 0)).toBeLessThanOrEqual(844);
        expect(await uncovered(page, button, name), `${name} is drawn over`).toBe(true);
      }
    } finally {
      await page.close();
    }
  }, 60_000);
});
