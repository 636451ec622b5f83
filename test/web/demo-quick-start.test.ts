import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDashboard, launchChromium, visible } from '../support/browser.ts';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { waitFor } from '../support/wait-for.ts';

const root = join(import.meta.dirname, '../..');

/**
 * The quick start as a newcomer without a key walks it: one command (`loom demo`), then a reply
 * streamed word by word in the CLI and in the dashboard's chat, in Chromium.
 */
describe('the quick start: loom demo, to a streamed reply in the CLI and in Chromium', () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let demo: ChildProcess | undefined;
  let output = '';

  beforeAll(async () => {
    dir = await makeTempDir('loom-demo-web-');
  });
  afterAll(async () => {
    if (demo !== undefined && demo.exitCode === null) {
      const exited = new Promise((resolve) => demo?.once('exit', resolve));
      demo.kill('SIGINT');
      await exited;
    }
    await dir.remove();
  });

  it("streams hello's reply in loom send --stream and, word by word, in the dashboard's chat", async () => {
    const home = join(dir.path, 'home');
    // The dashboard as `npm install` builds it.
    const dashboard = join(dir.path, 'dist');
    await buildDashboard(dashboard);
    demo = spawn(process.execPath, [join(root, 'bin/loom.js'), 'demo', '--port', '0'], {
      env: { PATH: process.env['PATH'] ?? '', HOME: dir.path, LOOM_HOME: home, LOOM_DASHBOARD_DIR: dashboard },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: dir.path,
    });
    demo.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    demo.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const chatUrl = await waitFor(`loom demo to print the dashboard's URL (${output})`, () => /Open the dashboard: (\S+)/.exec(output)?.[1], { ms: 60_000 });
    const url = new URL(chatUrl).origin;

    const sent = await runCli(home, ['--url', url, 'send', 'hello', 'Who is here?', '--stream']);
    expect(sent.code).toBe(0);
    expect(sent.stdout).toContain('Hello! I am answering from a scripted model');

    const browser = await launchChromium(join(dir.path, 'chromium-profile'));
    try {
      const page = await browser.newPage();
      await page.goto(chatUrl);
      await page.getByRole('textbox', { name: 'Message' }).fill('Who is here?');
      await page.getByRole('button', { name: 'Send' }).click();
      const reply = page.getByTestId('live-turn').getByTestId('reply');
      // Caught halfway: the first words are there, the last are not yet (30 ms a word).
      await waitFor('a reply shown in part', async () => {
        const text = (await reply.allInnerTexts()).join(' ');
        return text.includes('Hello!') && !text.includes('something of my own');
      });
      await visible(page.locator('[data-testid="turn"][data-status="finished"]').getByTestId('reply').nth(1), 'something of my own');
    } finally {
      await browser.close();
    }
  }, 120_000);
});
