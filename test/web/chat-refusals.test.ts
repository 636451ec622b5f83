import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseManifest } from '../../src/manifest/index.ts';
import { type DashboardHarness, startDashboard, VISIBLE, visible } from '../support/browser.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

// A fake clock never refills the rate limiter's bucket: give the dashboard's requests room.
const CONFIG = { rate_limit: { per_minute: 1_000_000 } };

/**
 * A send the daemon refuses (409) stays in the conversation: the person's message, the daemon's
 * reason and what to do. It used to show for an instant and vanish when the session was read back.
 */
describe('the chat page with a refused message, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;
  let page: Page;

  const openChat = async (name: string): Promise<void> => {
    await page.goto(`${harness.server.url}/#/agents/${name}/chat`);
    await visible(page.getByRole('heading', { name: new RegExp(`Chat with ${name}`) }));
  };
  const say = async (text: string): Promise<void> => {
    await page.getByRole('textbox', { name: 'Message' }).fill(text);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
  };

  beforeAll(async () => {
    // No [default_model] in config.toml: an agent without [model] has nothing to run on.
    harness = await startDashboard('loom-web-refusals-', CONFIG);
  }, 120_000);
  afterAll(async () => {
    await harness?.close();
  });
  beforeEach(async () => {
    page = await harness.browser.newPage();
    return async () => {
      await page.close();
    };
  });

  it("keeps a message sent to a suspended agent in the conversation with the daemon's reason and a Resume button that lets the next one through", async () => {
    const toml = `name = "sleeper"\n\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`;
    await harness.host.kernel.spawn(parseManifest(toml, { source: 'sleeper.toml' }).manifest);
    await harness.host.kernel.suspend('sleeper');
    await openChat('sleeper');
    await say('Are you there?');

    const refused = page.getByTestId('refused-turn');
    await visible(refused.getByTestId('user-message'), 'Are you there?');
    await visible(refused.getByTestId('refusal'), 'agent "sleeper" is suspended; resume it to send it messages');
    await visible(refused.getByTestId('refusal-fix'), 'Resume sleeper');
    // Still there once the session has been read back (the refusal is not in it).
    await page.getByRole('button', { name: 'Send', exact: true }).waitFor(VISIBLE);
    await page.waitForLoadState('networkidle');
    expect(await refused.count()).toBe(1);
    expect(await refused.getByTestId('refusal').innerText()).toContain('is suspended');
    expect(await page.getByRole('textbox', { name: 'Message' }).inputValue()).toBe('');

    model.script([{ text: 'Awake now.' }]);
    await refused.getByRole('button', { name: 'Resume sleeper' }).click();
    await visible(page.getByTestId('state-badge'), /running/i);
    await say('And now?');
    await visible(page.locator('[data-testid="turn"][data-status="finished"]').getByTestId('reply'), 'Awake now.');
    // The refused message stays where it was, above the turn that went through.
    const turns = page.getByTestId('chat-log').locator('[data-testid="refused-turn"], [data-testid="turn"]');
    const order = await Promise.all((await turns.all()).map((turn) => turn.getAttribute('data-testid')));
    expect(order).toEqual(['refused-turn', 'turn']);
  });

  it('keeps a message sent to an agent with no model in the conversation, saying it has no [model] and how to give it one', async () => {
    await harness.host.kernel.spawn(parseManifest('name = "blank"\n', { source: 'blank.toml' }).manifest);
    await openChat('blank');
    await say('Hello?');

    const refused = page.getByTestId('refused-turn');
    await visible(refused.getByTestId('user-message'), 'Hello?');
    await visible(refused.getByTestId('refusal'), 'has no [model] and no default model is configured');
    await visible(refused.getByTestId('refusal-fix'), 'loom init');
    await page.waitForLoadState('networkidle');
    expect(await refused.count()).toBe(1);

    // A second refused send is kept too, each under its own message.
    await say('Anyone?');
    await visible(page.getByTestId('refused-turn').nth(1).getByTestId('user-message'), 'Anyone?');
    expect(await page.getByTestId('refused-turn').count()).toBe(2);

    // Another agent's chat, reached in the page (a hash change), shows none of them.
    await harness.host.kernel.spawn(
      parseManifest(`name = "other"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`, { source: 'other.toml' }).manifest,
    );
    await openChat('other');
    await visible(page.getByText('Say something to other.'));
    expect(await page.getByTestId('refused-turn').count()).toBe(0);
  });
});
