import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/http/index.ts';
import { parseManifest } from '../../src/manifest/index.ts';
import { type DashboardHarness, startDashboard, VISIBLE, visible } from '../support/browser.ts';
import type { TestHost } from '../support/test-host.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';

// A fake clock never refills the rate limiter's bucket: give the dashboard's requests room.
const CONFIG = { rate_limit: { per_minute: 1_000_000 } };

const MARKDOWN_REPLY = [
  '## Results',
  '',
  'Here is **what I found**:',
  '',
  '- first point',
  '- second point',
  '',
  '| city | country |',
  '| --- | --- |',
  '| Oslo | Norway |',
  '| Lima | Peru |',
  '',
  '```ts',
  'const answer = 42;',
  '```',
  '',
  'See [the docs](https://example.com/docs).',
  '',
  '<script>window.__pwned = "script";</script>',
  '<img src="x" onerror="window.__pwned = \'img\'">',
  "[click me](javascript:window.__pwned='link')",
].join('\n');

describe('the chat page, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let host: TestHost;
  let server: RunningHttpServer;
  let browser: BrowserContext;
  let page: Page;
  let harness: DashboardHarness;
  let release: () => void = () => undefined;

  const spawn = async (name: string, capabilities = ''): Promise<void> => {
    const toml = `name = "${name}"\n\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n${capabilities}\n`;
    await host.kernel.spawn(parseManifest(toml, { source: `${name}.toml` }).manifest);
  };
  const hold = (): Promise<void> => new Promise((resolve) => (release = resolve));
  const openChat = async (name: string): Promise<void> => {
    await page.goto(`${server.url}/#/agents/${name}/chat`);
    await visible(page.getByRole('heading', { name: new RegExp(`Chat with ${name}`) }));
  };
  const say = async (text: string): Promise<void> => {
    await page.getByRole('textbox', { name: 'Message' }).fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
  };

  beforeAll(async () => {
    harness = await startDashboard('loom-web-chat-', CONFIG);
    ({ host, server, browser } = harness);
  }, 120_000);
  afterAll(async () => {
    release();
    await harness?.close();
  });
  beforeEach(async () => {
    page = await browser.newPage();
    return async () => {
      release();
      await page.close();
    };
  });

  it('renders the reply as Markdown (heading, list, table, code, link opening safely) and runs none of the HTML the model wrote', async () => {
    await spawn('writer');
    model.script([{ text: MARKDOWN_REPLY }]);
    await openChat('writer');
    await say('Summarise');
    const reply = page.getByTestId('reply').last();
    await visible(reply.getByRole('heading', { name: 'Results' }));
    await visible(reply.locator('li'), 'second point');
    await visible(reply.locator('strong'), 'what I found');
    await visible(reply.getByRole('cell', { name: 'Lima' }));
    expect(await reply.locator('th').allTextContents()).toEqual(['city', 'country']);
    await visible(reply.locator('pre code'), 'const answer = 42;');
    const link = reply.getByRole('link', { name: 'the docs' });
    expect(await link.getAttribute('href')).toBe('https://example.com/docs');
    expect(await link.getAttribute('target')).toBe('_blank');
    expect(await link.getAttribute('rel')).toContain('noopener');
    // Nothing the model wrote ran or stayed able to run.
    await page.getByTestId('turn-usage').last().waitFor(VISIBLE);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
    expect(await reply.locator('script').count()).toBe(0);
    expect(await reply.locator('[onerror]').count()).toBe(0);
    expect(await reply.locator('a[href^="javascript"]').count()).toBe(0);
  });

  it('copies a code block with its copy button', async () => {
    await harness.browser.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
    await spawn('coder');
    model.script([{ text: 'Run this:\n\n```sh\nnpm test -- --run\n```\n' }]);
    await openChat('coder');
    await say('How do I test?');
    const button = page.getByTestId('reply').last().getByRole('button', { name: 'Copy code' });
    await button.click();
    await visible(button, 'Copied');
    expect(
      await page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText()),
    ).toBe('npm test -- --run\n');
  });

  it('stops a streaming reply with the Stop button and with Esc: the text so far stays, marked cancelled', async () => {
    await spawn('talker');
    model.script([{ text: 'Once upon a time there was', stall: hold() }]);
    await openChat('talker');
    await say('Tell me a long story');
    await visible(page.getByTestId('reply'), 'Once upon a time there was');
    await page.getByRole('button', { name: 'Stop' }).click();
    const cancelled = page.locator('[data-testid="turn"][data-status="cancelled"]');
    await visible(cancelled.getByTestId('reply'), 'Once upon a time there was');
    await visible(cancelled.getByTestId('turn-status'), /^cancelled$/);
    await visible(cancelled.getByTestId('turn-note'), 'cut short');
    await visible(page.getByRole('button', { name: 'Send' }));

    model.script([{ text: 'A second story begins', stall: hold() }]);
    await say('Another one');
    await visible(page.getByTestId('reply'), 'A second story begins');
    await page.keyboard.press('Escape');
    await page.locator('[data-testid="turn"][data-status="cancelled"]').nth(1).waitFor(VISIBLE);
    const session = await host.kernel.session('talker');
    expect(JSON.stringify(session.messages)).toMatch(/Once upon a time there was.*cut short.*A second story begins.*cut short/);
  });

  it('shows a turn still running after a reload (its text so far, then the rest), and the finished turn once it ends', async () => {
    await spawn('narrator');
    model.script([{ text: 'The first half, ', stall: hold() }]);
    await openChat('narrator');
    await say('Narrate');
    await visible(page.getByTestId('reply'), 'The first half,');

    // Leaving the page does not throw the turn away: a reload finds it running and follows it.
    await page.reload();
    const live = page.getByTestId('live-turn');
    await visible(live.getByTestId('user-message'), 'Narrate');
    await visible(live.getByTestId('reply'), 'The first half,');
    await visible(page.getByRole('button', { name: 'Stop' }));
    release();
    await visible(page.locator('[data-testid="turn"][data-status="finished"]').getByTestId('reply'), 'The first half,');
    // The live turn gives way to the committed one (in the render after the session is read back).
    await page.getByTestId('live-turn').waitFor({ ...VISIBLE, state: 'detached' });
    expect(await page.locator('[data-testid="turn"]').count()).toBe(1);
    await visible(page.getByRole('button', { name: 'Send' }));
  });

  it("expands a tool call to its full input and output with its duration, and shows the turn's trace with the model calls' tokens and latency", async () => {
    await spawn('tracer', '[capabilities]\ntools = ["file_write", "file_read"]\n[autonomous]\napproval_required_for = ["file_write"]');
    const content = `${'lorem ipsum '.repeat(60)}THE END`;
    let answer!: () => void;
    const gate = new Promise<void>((resolve) => (answer = resolve));
    model.script([
      { toolCalls: [{ name: 'file_write', input: { path: 'long.txt', content } }], usage: { inputTokens: 1234, outputTokens: 56 }, gate },
      { toolCalls: [{ name: 'file_read', input: { path: 'long.txt' } }], usage: { inputTokens: 1500, outputTokens: 20 } },
      { text: 'Written and read back.', usage: { inputTokens: 1700, outputTokens: 9 } },
    ]);
    await openChat('tracer');
    await say('Write long.txt and read it back');
    // The first model call takes 2.5 s on the kernel's clock, the approval 4 s.
    await waitFor('the first model call', () => model.requests.length >= 1);
    await host.clock.advance(2500);
    answer();
    const approval = page.getByTestId('approval-request');
    await visible(approval, 'needs your approval');
    await host.clock.advance(4000);
    await approval.getByRole('button', { name: 'Approve' }).click();
    const turn = page.locator('[data-testid="turn"][data-status="finished"]');
    await visible(turn.getByTestId('reply'), 'Written and read back.');

    const write = turn.getByTestId('tool-call').filter({ hasText: 'file_write' });
    await visible(write.getByTestId('tool-duration'), '4.0 s');
    await write.locator('summary').click();
    expect(await write.getByTestId('tool-input').textContent()).toContain('THE END');
    const read = turn.getByTestId('tool-call').filter({ hasText: 'file_read' });
    await read.locator('summary').click();
    await visible(read.getByTestId('tool-output'), 'THE END');
    expect((await read.getByTestId('tool-output').textContent())?.length).toBeGreaterThan(700);

    await visible(turn.getByTestId('turn-usage'), '4,434 in · 85 out');
    await visible(turn.getByTestId('turn-usage'), '3 model calls');
    const trace = turn.getByTestId('turn-trace');
    await trace.locator('summary').click();
    const models = trace.getByTestId('trace-model');
    expect(await models.count()).toBe(3);
    await visible(models.first(), '1,234 in · 56 out');
    await visible(models.first(), '2.5 s');
    expect(await trace.getByTestId('trace-tool').allTextContents()).toEqual([
      expect.stringMatching(/file_write.*done.*4\.0 s/),
      expect.stringMatching(/file_read.*done.*0 ms/),
    ]);
  });

  it('opens scrolled to the newest message with the message box focused, each message with its time', async () => {
    await spawn('chatty');
    model.script(Array.from({ length: 12 }, (_, index) => ({ text: `Answer number ${index}.\n\nWith a second paragraph to take room.` })));
    for (let index = 0; index < 12; index++) await host.kernel.send('chatty', `Question number ${index}`);
    await openChat('chatty');
    const last = page.getByTestId('reply').filter({ hasText: 'Answer number 11.' });
    await visible(last);
    const height = page.viewportSize()?.height ?? 0;
    const onScreen = (box: { y: number; height: number } | null): boolean => box !== null && box.y >= 0 && box.y + box.height <= height;
    await expect.poll(async () => onScreen(await last.boundingBox()), VISIBLE).toBe(true);
    const first = await page.getByTestId('reply').filter({ hasText: 'Answer number 0.' }).boundingBox();
    expect(first === null || first.y + first.height <= 0).toBe(true);
    expect(
      await page.evaluate(() =>
        (globalThis as unknown as { document: { activeElement: { getAttribute(name: string): string | null } | null } }).document.activeElement?.getAttribute(
          'aria-label',
        ),
      ),
    ).toBe('Message');
    const stamp = page.getByTestId('user-message').last().locator('time');
    expect(await stamp.getAttribute('datetime')).toBe(new Date(host.clock.now()).toISOString());
  });

  it('resets the session with a confirmed button', async () => {
    await spawn('forgetful');
    model.script([{ text: 'Remembered.' }]);
    await host.kernel.send('forgetful', 'Remember this');
    await openChat('forgetful');
    await visible(page.getByTestId('reply'), 'Remembered.');
    await page.getByRole('button', { name: 'Reset session' }).click();
    await page.getByRole('button', { name: 'Reset', exact: true }).click();
    await visible(page.getByText('Say something to forgetful.'));
    expect((await host.kernel.session('forgetful')).messages).toEqual([]);
  });
});
