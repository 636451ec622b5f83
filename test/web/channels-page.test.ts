import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { type DashboardHarness, startDashboard, visible } from '../support/browser.ts';
import { manifest } from '../support/test-kernel.ts';
import { TEST_KEYS } from '../support/test-host.ts';

describe('the dashboard Channels page, in Chromium against a real daemon', () => {
  let harness: DashboardHarness;
  let page: Page;

  beforeAll(async () => {
    const channels = [
      { name: 'hooks', kind: 'webhook', agent: 'helper', secret_env: 'HOOK_SECRET', reply_url: 'http://127.0.0.1:9/replies' },
      { name: 'broken', kind: 'telegram', agent: 'helper', token_env: 'MISSING_TOKEN' },
    ];
    harness = await startDashboard(
      'loom-web-channels-',
      { rate_limit: { per_minute: 1_000_000 }, channels },
      { channels: true, env: { ...TEST_KEYS, HOOK_SECRET: 'secret' } },
    );
    await harness.host.kernel.spawn(manifest('name = "helper"'));
    await harness.host.channels.start();
    page = await harness.browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await harness?.close();
  });

  it("shows each channel's state and error, and approves a person waiting for pairing with a button", async () => {
    await harness.host.store.channels.receive({
      channel: 'hooks',
      platformId: 'm1',
      userId: 'u-bob',
      userName: 'Bob',
      conversationId: 'c1',
      conversationKind: 'direct',
      thread: null,
      mentioned: true,
      text: 'hello?',
      status: 'refused',
      note: 'not paired',
      receivedAt: harness.host.clock.now(),
      updatedAt: harness.host.clock.now(),
    });
    await harness.host.store.channels.requestPairing({
      code: 'K7QH2M',
      channel: 'hooks',
      userId: 'u-bob',
      userName: 'Bob',
      createdAt: harness.host.clock.now(),
      approvedAt: null,
    });

    await page.goto(`${harness.server.url}/#/channels`);
    const rows = page.getByTestId('channel');
    await visible(rows.filter({ hasText: 'hooks' }).getByTestId('channel-state'), 'connected');
    await visible(rows.filter({ hasText: 'broken' }).getByTestId('channel-state'), 'failed');
    await visible(rows.filter({ hasText: 'broken' }).getByTestId('channel-error'), "MISSING_TOKEN is not set in the daemon's environment");
    await visible(page.getByTestId('pairing'), 'Bob');
    await visible(page.getByTestId('pairing'), 'K7QH2M');
    await page.getByRole('button', { name: 'Approve' }).click();
    await visible(page.getByTestId('channel-note'), 'Bob may now talk on hooks.');
    await page.getByTestId('pairing').waitFor({ state: 'detached' });
  });
});
