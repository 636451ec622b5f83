import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type DashboardHarness, startDashboard, VISIBLE, visible } from '../support/browser.ts';
import { manifest } from '../support/test-kernel.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

// A fake clock never refills the rate limiter's bucket: give the dashboard's requests room.
const CONFIG = { rate_limit: { per_minute: 1_000_000 } };

describe('the agent page, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;
  let page: Page;

  const agentToml = (name: string, extra = ''): string =>
    `name = "${name}"\ndescription = "before the edit"\n\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n${extra}`;

  beforeAll(async () => {
    harness = await startDashboard('loom-web-agent-page-', CONFIG);
  }, 120_000);

  afterAll(() => harness?.close());

  beforeEach(async () => {
    page = await harness.browser.newPage();
    return async () => {
      await page.close();
    };
  });

  it("edits a live agent's manifest in place: errors at their line as you type, a refused save in place, and a saved one keeps the id and session", async () => {
    const spawned = await harness.host.kernel.spawn(manifest(agentToml('editable')));
    model.script([{ text: 'remembered' }]);
    await harness.host.kernel.send('editable', 'hello');

    await page.goto(`${harness.server.url}/#/agents/editable`);
    await page.getByRole('button', { name: 'Edit manifest' }).click();
    const form = page.getByRole('form', { name: 'Edit the manifest of editable' });
    const editor = form.getByRole('textbox', { name: 'Manifest' });
    await visible(editor);
    // It starts from the agent's current manifest.
    expect(await editor.inputValue()).toContain('description = "before the edit"');

    await editor.fill(
      `name = "editable"\ndescription = "before the edit"\npriority = "urgent"\n\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`,
    );
    await visible(form.getByTestId('manifest-issues'), 'line 3');
    await visible(form.getByTestId('manifest-issues'), 'priority: expected one of low, normal, high, critical, got "urgent"');

    // The daemon refuses a rename: said in the editor, which stays open.
    await editor.fill(agentToml('renamed'));
    await form.getByRole('button', { name: 'Save' }).click();
    await visible(form.getByTestId('manifest-error'), 'AGENT_RENAME');

    await editor.fill(
      `name = "editable"\ndescription = "after the edit"\ntags = ["edited"]\n\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`,
    );
    await form.getByRole('button', { name: 'Save' }).click();
    await form.waitFor({ state: 'detached', ...VISIBLE });
    await visible(page.getByTestId('manifest'), 'description = "after the edit"');
    const after = harness.host.kernel.get('editable');
    expect([after.id, after.session_id, after.description]).toEqual([spawned.id, spawned.session_id, 'after the edit']);
    await visible(page.getByText('Session history (2)'));
  });

  it('shows the skills an agent is offered, and warns of one it names that is not installed', async () => {
    const folder = join(harness.host.home.skillsDir, 'acme', 'note-taker', '1.0.0');
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'SKILL.md'), '---\nname: note-taker\ndescription: Keeps notes.\nmetadata:\n  version: "1.0.0"\n---\nWrite notes as lists.\n');
    await harness.host.kernel.spawn(manifest(`skills = ["note-taker", "pdf-reader"]\n${agentToml('skilled')}`));

    await page.goto(`${harness.server.url}/#/agents/skilled`);
    const skills = page.getByRole('list', { name: 'Skills', exact: true });
    await visible(skills, '@acme/skills/note-taker@1.0.0');
    await visible(page.getByTestId('skill-problems'), 'warning: skill "pdf-reader" is not installed');
  });

  it('says an agent was killed, then goes to the agent list', async () => {
    await harness.host.kernel.spawn(manifest(agentToml('doomed')));
    await page.goto(`${harness.server.url}/#/agents/doomed`);
    await page.getByRole('button', { name: 'Kill' }).click();
    await page.getByRole('button', { name: 'Really kill?' }).click();
    await visible(page.getByTestId('agent-killed'), 'doomed was killed');
    await page.waitForURL(/#\/agents$/, VISIBLE);
    await visible(page.getByRole('heading', { name: 'Agents', exact: true }));
    expect(harness.host.kernel.list().map((agent) => agent.name)).not.toContain('doomed');
  });

  it('shows a plain "no such agent" for an agent that does not exist, with no error box', async () => {
    await page.goto(`${harness.server.url}/#/agents/ghost`);
    await visible(page.getByTestId('no-such-agent'), 'No such agent: there is no agent named “ghost”.');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Edit manifest' }).count()).toBe(0);
  });

  // Last: it stops the daemon's HTTP server.
  it('says plainly that the daemon went away, keeping what it showed', async () => {
    await harness.host.kernel.spawn(manifest(agentToml('steady')));
    await page.goto(`${harness.server.url}/#/agents/steady`);
    await visible(page.getByTestId('manifest'), 'name = "steady"');
    await harness.stopServer();
    await visible(page.getByTestId('daemon-gone'), `The Loom daemon at ${harness.server.url} does not answer. Start it again`);
    await visible(page.getByTestId('manifest'), 'name = "steady"');
    expect(await page.getByRole('alert').count()).toBe(0);
  });
});
