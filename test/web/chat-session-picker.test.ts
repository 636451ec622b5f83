import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningHttpServer } from '../../src/http/index.ts';
import { parseManifest } from '../../src/manifest/index.ts';
import { type DashboardHarness, startDashboard, visible } from '../support/browser.ts';
import type { TestHost } from '../support/test-host.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';

// The dashboard's chat is the owner's main session unless another is chosen: a picker lists the
// sessions the caller holds (GET …/sessions), and the one chosen is read and sent to.

const model = useScriptedModelServer();
let harness: DashboardHarness;
let host: TestHost;
let server: RunningHttpServer;
let browser: BrowserContext;
let page: Page;

/** A key's conversation as the kernel names it (`principal:` and the key's name, role and agents). */
const ALICE = `principal:${JSON.stringify(['alice', 'user', ['keeper']])}`;

beforeAll(async () => {
  harness = await startDashboard('loom-web-session-picker-', { rate_limit: { per_minute: 1_000_000 } });
  ({ host, server, browser } = harness);
  const toml = `name = "keeper"\n\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`;
  await host.kernel.spawn(parseManifest(toml, { source: 'keeper.toml' }).manifest);
  model.script([{ text: 'main reply' }, { text: 'alice reply' }]);
  await host.kernel.send('keeper', 'said in the main session');
  await host.kernel.send('keeper', 'said by alice', { conversation: ALICE });
  page = await browser.newPage();
}, 120_000);
afterAll(async () => {
  await page?.close();
  await harness?.close();
});

it("shows the owner's main session, switches the history to a chosen session, sends into it, and switches back", async () => {
  await page.goto(`${server.url}/#/agents/keeper/chat`);
  const log = page.getByTestId('chat-log');
  await visible(log, 'said in the main session');
  expect(await log.textContent()).not.toContain('said by alice');

  const picker = page.getByRole('combobox', { name: 'Session' });
  await picker.locator('option', { hasText: 'Your session (main)' }).waitFor({ state: 'attached' });
  await picker.locator('option', { hasText: 'key "alice" (2 messages)' }).waitFor({ state: 'attached' });
  await picker.selectOption({ label: 'key "alice" (2 messages)' });
  await visible(log, 'said by alice');
  expect(await log.textContent()).not.toContain('said in the main session');

  // A message sent now goes on with Alice's session, not the main one.
  model.script([{ text: 'second alice reply' }]);
  await page.getByRole('textbox', { name: 'Message' }).fill("the owner, in alice's session");
  await page.getByRole('button', { name: 'Send' }).click();
  await visible(log, 'second alice reply');
  expect(JSON.stringify(model.requests.at(-1)?.body)).toContain('said by alice');
  await waitFor(
    "the owner's message in alice's session",
    async () => JSON.stringify((await host.kernel.session('keeper', { conversation: ALICE })).messages).includes("the owner, in alice's session") || undefined,
  );
  expect(JSON.stringify((await host.kernel.session('keeper')).messages)).not.toContain("the owner, in alice's session");

  await picker.selectOption({ label: 'Your session (main)' });
  await visible(log, 'said in the main session');
  expect(await log.textContent()).not.toContain('second alice reply');
}, 60_000);
