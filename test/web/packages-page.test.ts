import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type DashboardHarness, startDashboard, visible } from '../support/browser.ts';
import { activityJson, bindingJson, packageConfig, writePackage } from '../packages/support.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

/** A promise the test settles by hand: a scripted model reply held back until then keeps a run going. */
function latch(): { promise: Promise<void>; release: () => void } {
  let release = (): void => undefined;
  const promise = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { promise, release };
}

describe('the dashboard Packages page, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;
  let page: Page;

  const runUrl = (binding: string): string => `${harness.server.url}/api/packages/reporter/bindings/${binding}/run`;
  const runByApi = (binding: string): Promise<Response> =>
    fetch(runUrl(binding), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ inputs: {} }) });

  beforeAll(async () => {
    // packageConfig is config.toml's shape (packageConfigToml is its text): the model aliases point at the scripted model server.
    // Schedules run (so bindings have next fire times) on the harness's fake clock, which never moves here: nothing fires by itself.
    harness = await startDashboard(
      'loom-web-packages-',
      { ...packageConfig(model.url), rate_limit: { per_minute: 1_000_000 } },
      { packages: true, runSchedules: true },
    );
    const folder = await writePackage(harness.dir, 'reporter', {
      pricing: { model: 'per_run', cost: 0.5 },
      workflows: {
        nightly: bindingJson({ type: 'schedule', cron: '0 7 * * 1-5' }, [activityJson('collect')], { emit: 'collected' }),
        pulse: bindingJson({ type: 'heartbeat', interval: '30m', window: '08:00-18:00' }, [activityJson('look')]),
        digest: bindingJson({ type: 'event', sources: ['collected'] }, [activityJson('summarise')]),
        now: bindingJson({ type: 'manual' }, [activityJson('gather'), activityJson('write')], { budget: { total_per_run: 9000, cost_estimate: '~$0.02' } }),
        probe: bindingJson({ type: 'manual' }, [activityJson('ping', { on_error: { retry: 0, fallback: 'NotifyOwner' } })]),
      },
    });
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

  beforeEach(async () => {
    page = await harness.browser.newPage();
    await page.goto(`${harness.server.url}/#/packages`);
    await visible(page.getByRole('heading', { name: 'Packages' }));
    return async () => {
      await page.close();
    };
  });

  it('lists the package from the sidebar link with each binding trigger in words, its next fire time, emits, budget and pricing, and a Run button only for manual bindings', async () => {
    await page.goto(`${harness.server.url}/#/agents`);
    await page.getByRole('link', { name: 'Packages' }).click();
    await page.waitForURL(/#\/packages$/);

    const row = (binding: string) => page.locator(`[data-testid="binding"][data-binding="${binding}"]`);
    await visible(row('nightly').getByTestId('trigger'), 'schedule "0 7 * * 1-5"');
    await visible(row('pulse').getByTestId('trigger'), 'heartbeat every 30m within 08:00-18:00');
    await visible(row('digest').getByTestId('trigger'), 'on reporter.collected');
    await visible(row('now').getByTestId('trigger'), /^manual$/);
    await visible(row('nightly'), 'reporter.collected');
    await visible(row('now'), '9,000 tokens, ~$0.02');
    await visible(page.getByText('pricing per_run $0.50 (shown only; Loom charges nothing)'));

    // The next fire time is the API's, in the browser's local time; a manual binding has none.
    const [view] = (await (await fetch(`${harness.server.url}/api/packages`)).json()) as { bindings: { name: string; next_fire_at: string | null }[] }[];
    const nextFire = view?.bindings.find((binding) => binding.name === 'nightly')?.next_fire_at;
    expect(nextFire).toEqual(expect.any(String));
    const local = await page.evaluate(
      (at) => new Date(at).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' }),
      nextFire ?? '',
    );
    expect(await row('nightly').getByTestId('next-fire').innerText()).toBe(local);
    expect(await row('pulse').getByTestId('next-fire').innerText()).not.toBe('—');
    expect(await row('now').getByTestId('next-fire').innerText()).toBe('—');

    for (const binding of ['nightly', 'pulse', 'digest']) expect(await row(binding).getByRole('button').count()).toBe(0);
    expect(await row('now').getByRole('button', { name: 'Run now' }).isEnabled()).toBe(true);
    await visible(page.getByText('No runs yet.'));
  });

  it('runs a manual binding with the Run button, disabled while it runs, then shows the run with each activity status, tokens and cost', async () => {
    const held = latch();
    model.script([
      { text: 'gathered', usage: { inputTokens: 30, outputTokens: 10 }, gate: held.promise },
      { text: 'written', usage: { inputTokens: 50, outputTokens: 12 } },
    ]);
    const button = page.getByRole('button', { name: 'Run now' });
    await button.click();
    await visible(page.getByRole('button', { name: 'Run now' }).filter({ hasText: 'Running…' }));
    expect(await button.isDisabled()).toBe(true);
    await visible(page.locator('[data-testid="package-run"][data-status="running"]'), 'now');

    held.release();
    const run = page.locator('[data-testid="package-run"][data-binding="now"][data-status="completed"]');
    await visible(run, /gather completed · 40 tokens · \$0\.00/);
    await visible(run, /write completed · 62 tokens/);
    await visible(run.locator('td').nth(5), /^102$/);
    await visible(button, /^Run$/);
    expect(await button.isEnabled()).toBe(true);
    expect(model.remaining()).toBe(0);
  });

  it('shows the Run button disabled while a run started elsewhere is going, and a fire refused with 409 as a skipped run with its reason', async () => {
    const held = latch();
    model.script([{ text: 'gathered', gate: held.promise }, { text: 'written' }]);
    const first = runByApi('now');
    const button = page.getByRole('button', { name: 'Run now' });
    await visible(button, 'Running…');
    expect(await button.isDisabled()).toBe(true);

    const refused = await runByApi('now');
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({ error: { code: 'BINDING_BUSY' } });
    const skipped = page.locator('[data-testid="package-run"][data-binding="now"][data-status="skipped"]');
    await visible(skipped.getByTestId('run-reason'), 'not started: the previous run of "now" is still going');

    held.release();
    expect((await first).status).toBe(200);
    await visible(button, /^Run$/);
    // This run and the one the Run button started.
    await visible(page.locator('[data-testid="package-run"][data-binding="now"][data-status="completed"]').nth(1));
    expect(await page.locator('[data-testid="package-run"][data-binding="now"][data-status="completed"]').count()).toBe(2);
  });

  it('shows an owner notification on the page when an activity whose fallback is NotifyOwner fails, and the failed activity in the run', async () => {
    model.script([{ status: 400, body: { error: { message: 'the prompt is malformed', type: 'invalid_request_error' } } }]);
    await page.getByRole('button', { name: 'Run probe' }).click();
    const notice = page.getByTestId('package-notice');
    await visible(notice, /reporter \/ probe: activity ping failed: .*malformed/);
    const run = page.locator('[data-testid="package-run"][data-binding="probe"]');
    await visible(run.getByTestId('activity'), /^ping failed/);
    await visible(run.getByTestId('activity'), 'NotifyOwner: ');

    // The notification is read from the audit log, so it is still there on a fresh load.
    await page.reload();
    await visible(page.getByTestId('package-notice'), 'activity ping failed');
  });
});
