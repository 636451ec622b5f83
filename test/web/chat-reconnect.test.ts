import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/http/index.ts';
import { parseManifest } from '../../src/manifest/index.ts';
import { type DashboardHarness, startDashboard, VISIBLE, visible } from '../support/browser.ts';
import type { TestHost } from '../support/test-host.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';

// The chat's stream breaks (the network, the daemon going away): the page says it is
// reconnecting, takes the turn up again from the last event it had (Last-Event-ID) and shows the
// rest of the reply once; it gives up after a bounded number of tries, saying so. The page is
// served through a TCP proxy whose link the test cuts and holds.

/** A key's conversation as the kernel names it (`principal:` and the key's name, role and agents). */
const ALICE = `principal:${JSON.stringify(['alice', 'user', ['*']])}`;

describe('the chat page when its stream breaks, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;
  let host: TestHost;
  let server: RunningHttpServer;
  let browser: BrowserContext;
  let proxy: TcpProxy;
  let page: Page;
  let url: string;

  const spawn = async (name: string): Promise<void> => {
    const toml = `name = "${name}"\n\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n\n[capabilities]\ntools = ["memory_store"]\nmemory_write = ["self.*"]\n`;
    await host.kernel.spawn(parseManifest(toml, { source: `${name}.toml` }).manifest);
  };
  const openChat = async (name: string): Promise<void> => {
    await page.goto(`${url}/#/agents/${name}/chat`);
    await visible(page.getByRole('heading', { name: new RegExp(`Chat with ${name}`) }));
  };
  const say = async (text: string): Promise<void> => {
    await page.getByRole('textbox', { name: 'Message' }).fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
  };
  /** Whether the agent's running turn has said `text` so far (read from the daemon directly, not through the proxy). */
  const turnHasSaid = async (agent: string, text: string): Promise<true | undefined> => {
    const events = (await host.kernel.followTurn(agent))[Symbol.asyncIterator]();
    let said = '';
    // What the turn has said so far comes at once; an event that does not come within a turn of the event loop is still to come.
    const later = (): Promise<undefined> => new Promise((resolve) => setImmediate(() => resolve(undefined)));
    for (
      let next = await Promise.race([events.next(), later()]);
      next !== undefined && next.done !== true;
      next = await Promise.race([events.next(), later()])
    ) {
      if ('event' in next.value && next.value.event.type === 'text-delta') said += next.value.event.text;
    }
    void events.return?.(undefined);
    return said.includes(text) ? true : undefined;
  };

  beforeAll(async () => {
    // A fake clock never refills the rate limiter's bucket: give the dashboard's requests room.
    harness = await startDashboard('loom-web-reconnect-', { rate_limit: { per_minute: 1_000_000 } });
    ({ host, server, browser } = harness);
    proxy = await startTcpProxy({ port: Number(new URL(server.url).port) });
    url = `http://127.0.0.1:${proxy.port}`;
  }, 120_000);
  afterAll(async () => {
    await proxy?.close();
    await harness?.close();
  });
  beforeEach(async () => {
    page = await browser.newPage();
    return async () => {
      proxy.resume();
      await page.close();
    };
  });

  it('shows "reconnecting…" while the link is down, then the part of the reply it missed, once, and the end', async () => {
    await spawn('scribe');
    let answer!: () => void;
    let finish!: () => void;
    model.script([
      { text: 'First half. ', toolCalls: [{ name: 'memory_store', input: { key: 'self.note', value: 'kept' } }] },
      { text: 'Second half.', gate: new Promise<void>((resolve) => (answer = resolve)), stall: new Promise<void>((resolve) => (finish = resolve)) },
    ]);
    await openChat('scribe');
    await say('Write it down');
    await visible(page.getByTestId('tool-call'), 'memory_store');
    await visible(page.getByTestId('reply'), 'First half.');

    // The link goes down: the stream breaks, and the page's tries to reconnect are held.
    proxy.pause();
    proxy.cut();
    await visible(page.getByTestId('reconnecting'), /reconnecting… \(try 1 of 6\)/);
    // Meanwhile the turn goes on: the page misses the second half.
    answer();
    await waitFor('the second half to be said', () => turnHasSaid('scribe', 'Second half.'));

    proxy.resume();
    await visible(page.getByTestId('live-turn').getByTestId('reply'), 'Second half.');
    await page.getByTestId('reconnecting').waitFor({ state: 'hidden', ...VISIBLE });
    finish();
    const turn = page.locator('[data-testid="turn"][data-status="finished"]');
    await visible(turn.getByTestId('reply'), 'Second half.');
    const log = (await page.getByTestId('chat-log').textContent()) ?? '';
    expect(log.split('First half.')).toHaveLength(2);
    expect(log.split('Second half.')).toHaveLength(2);
  });

  it("stops a reply on a session that is not the owner's own, chosen in the picker", async () => {
    await spawn('keeper');
    model.script([{ text: 'alice reply' }]);
    await host.kernel.send('keeper', 'said by alice', { conversation: ALICE });
    await openChat('keeper');
    const picker = page.getByRole('combobox', { name: 'Session' });
    await picker.locator('option', { hasText: 'key "alice"' }).waitFor({ state: 'attached' });
    await picker.selectOption({ label: 'key "alice" (2 messages)' });
    await visible(page.getByTestId('chat-log'), 'said by alice');

    model.script([{ text: 'A story for alice', stall: new Promise<never>(() => undefined) }]);
    await say('Tell alice a story');
    await visible(page.getByTestId('reply'), 'A story for alice');
    const stop = page.getByRole('button', { name: 'Stop' });
    expect(await stop.isEnabled()).toBe(true);
    await stop.click();
    await visible(page.locator('[data-testid="turn"][data-status="cancelled"]').getByTestId('reply'), 'A story for alice');
    expect(JSON.stringify((await host.kernel.session('keeper', { conversation: ALICE })).messages)).toMatch(/A story for alice.*cut short/);
  });

  it('gives up after its bounded tries when the daemon is gone, and says so', async () => {
    await spawn('lonely');
    model.script([{ text: 'Before the daemon went away. ', stall: new Promise<never>(() => undefined) }]);
    // The page's timers run on a clock the test moves: the backoff between tries is not waited for.
    await page.clock.install();
    await openChat('lonely');
    await say('Are you there?');
    await visible(page.getByTestId('reply'), 'Before the daemon went away.');
    await harness.stopServer();
    await visible(page.getByTestId('reconnecting'));
    const lost = page.getByRole('alert').filter({ hasText: 'could not get it back' });
    for (let step = 0; step < 40 && !(await lost.isVisible()); step += 1) await page.clock.fastForward(2_000);
    await visible(lost, 'lost the connection to the daemon and could not get it back (6 tries');
    expect(await page.getByTestId('reconnecting').count()).toBe(0);
    // What it said before stays on the page; it is not taken for a message the daemon refused.
    await visible(page.getByTestId('reply'), 'Before the daemon went away.');
    expect(await page.getByTestId('refused-turn').count()).toBe(0);
  });
});
