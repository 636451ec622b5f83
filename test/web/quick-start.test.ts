import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDashboard, launchChromium, visible } from '../support/browser.ts';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';

const root = join(import.meta.dirname, '../..');
const bin = join(root, 'bin/loom.js');

/** Starts `loom <args>` as a process and resolves once `ready` finds what it waits for in its output. */
function start(args: string[], env: Record<string, string>, ready: (output: string) => string | undefined): { child: ChildProcess; found: Promise<string> } {
  const child = spawn(process.execPath, [bin, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'], cwd: root });
  let output = '';
  const found = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`loom ${args.join(' ')} did not get ready: ${output}`)), 30_000);
    const read = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const value = ready(output);
      if (value !== undefined) {
        clearTimeout(timer);
        resolve(value);
      }
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
    child.once('exit', (code) => reject(new Error(`loom ${args.join(' ')} exited ${String(code)}: ${output}`)));
  });
  return { child, found };
}

async function stop(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGINT');
  await exited;
}

/**
 * The README's quick start on a machine with no model key, as a newcomer follows it: a scripted
 * model served by `loom model serve`, `loom init` pointing the default model at it, the daemon
 * (`npm start` is `loom start --foreground`), the hello agent spawned and messaged from the CLI,
 * and then the same in the dashboard's chat, ending in a streamed reply after a tool call.
 */
describe("the README's quick start with no key, to a streamed reply in the dashboard", () => {
  let dir: Awaited<ReturnType<typeof makeTempDir>>;
  let model: ChildProcess | undefined;
  let daemon: ChildProcess | undefined;

  beforeAll(async () => {
    dir = await makeTempDir('loom-quick-start-');
  });
  afterAll(async () => {
    await stop(daemon);
    await stop(model);
    await dir.remove();
  });

  it('runs the commands of the quick start and ends in the dashboard with a reply', async () => {
    const home = join(dir.path, 'home');
    const env = { HOME: dir.path, LOOM_HOME: home };
    const served = start(
      ['model', 'serve', '--script', 'examples/models/hello.json', '--port', '0'],
      env,
      (output) => /Scripted model at (\S+) /.exec(output)?.[1],
    );
    model = served.child;
    const modelUrl = await served.found;
    expect((await runCli(home, ['init', '--default-model', 'openai-compatible/scripted', '--base-url', modelUrl])).code).toBe(0);

    // `npm start`, on a free port; the dashboard as `npm install` builds it.
    const dashboard = join(dir.path, 'dist');
    await buildDashboard(dashboard);
    const running = start(
      ['start', '--foreground', '--port', '0'],
      { ...env, LOOM_DASHBOARD_DIR: dashboard },
      (output) => /Loom is listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1],
    );
    daemon = running.child;
    const url = await running.found;

    expect((await runCli(home, ['agent', 'spawn', join(root, 'examples/agents/hello.toml')])).code).toBe(0);
    // hello has no [model]: the daemon's default is named where it runs.
    expect((await runCli(home, ['agent', 'list'])).stdout).toMatch(/\n\s*hello\s+running\s+\S+\s+-\s+openai-compatible\/scripted \(default\)\n/);
    const reply = await runCli(home, ['send', 'hello', 'Who is here?', '--stream']);
    expect(reply.code).toBe(0);
    expect(reply.stdout).toContain('agent_list');
    expect(reply.stdout).toContain('Hello! I am answering from a scripted model');

    const browser = await launchChromium(join(dir.path, 'chromium-profile'));
    try {
      const page = await browser.newPage();
      await page.goto(`${url}/#/agents/hello/chat`);
      await page.getByRole('textbox', { name: 'Message' }).fill('Who is here?');
      await page.getByRole('button', { name: 'Send' }).click();
      // The second exchange of the session: the tool call, then the streamed reply.
      await visible(page.getByText('Hello! I am answering from a scripted model').nth(1));
      expect(await page.getByText('agent_list').count()).toBeGreaterThan(0);
      await page.goto(`${url}/#/agents/hello`);
      await visible(page.getByTestId('agent-model'));
      expect(await page.getByTestId('agent-model').innerText()).toBe('openai-compatible/scripted (default)');
    } finally {
      await browser.close();
    }
  }, 120_000);
});
