import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ManifestValidation } from '../../src/wire/index.ts';
import { type DashboardHarness, startDashboard, VISIBLE, visible } from '../support/browser.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

// A fake clock never refills the rate limiter's bucket: give the dashboard's requests room.
const CONFIG = { rate_limit: { per_minute: 1_000_000 } };

describe('the manifest editor, in Chromium against a real daemon', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;
  let page: Page;

  beforeAll(async () => {
    harness = await startDashboard('loom-web-editor-', CONFIG);
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

  const validate = async (text: string, type = 'application/toml'): Promise<ManifestValidation> => {
    const response = await fetch(`${harness.server.url}/api/manifests/validate`, { method: 'POST', headers: { 'content-type': type }, body: text });
    expect(response.status).toBe(200);
    return (await response.json()) as ManifestValidation;
  };

  it('POST /api/manifests/validate answers every error at its line and column, in TOML and JSON', async () => {
    const toml = await validate('name = "helper"\npriority = "urgent"\n\n[model]\nprovider = "openai"\n\n[capabilities]\ntols = ["file_read"]\n');
    expect(toml.valid).toBe(false);
    expect(toml.errors).toEqual([
      { message: 'priority: expected one of low, normal, high, critical, got "urgent"', field: 'priority', line: 2, column: 1 },
      // A missing field points at its table's header.
      {
        message: '[model].model: required with provider, e.g. model = "gpt-4o"; or leave out both provider and model to run on the daemon\'s default model',
        field: '[model].model',
        line: 4,
        column: 1,
      },
      { message: '[capabilities].tols: unknown key, did you mean "tools"?', field: '[capabilities].tols', line: 8, column: 1 },
    ]);

    const json = await validate('{\n  "name": "helper",\n  "model": { "provider": "openai", "model": 7 }\n}\n', 'application/json');
    expect(json.errors).toEqual([{ message: 'model.model: expected a string, got 7', field: 'model.model', line: 3, column: 36 }]);

    const syntax = await validate('name = "helper"\ndescription = "unterminated\n');
    expect(syntax.errors).toMatchObject([{ message: expect.stringContaining('TOML syntax error') as string, line: 2 }]);
    const jsonSyntax = await validate('{\n  "name": "helper",\n}', 'application/json');
    expect(jsonSyntax.errors).toMatchObject([{ message: expect.stringContaining('JSON syntax error') as string, line: 3, column: 1 }]);
  });

  it('POST /api/manifests/validate gives a valid manifest the warnings the CLI prints: a key after a table header, an agent that could not run', async () => {
    const hoisted = await validate(`name = "helper"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\npriority = "high"\n`);
    expect(hoisted).toMatchObject({ valid: true, errors: [] });
    expect(hoisted.warnings).toEqual([expect.stringContaining('"priority" stands after the [model] header')]);
    const keyless = await validate('name = "helper"\n[model]\nprovider = "anthropic"\nmodel = "claude-haiku-4-5"\napi_key_env = "NOT_SET_HERE"\n');
    expect(keyless.warnings).toEqual([
      'agent "helper" cannot run: model "anthropic/claude-haiku-4-5" ([model]) needs NOT_SET_HERE, which is not set; set NOT_SET_HERE in the daemon\'s environment and restart it',
    ]);
  });

  it('marks the lines that are wrong as you type, without spawning, with the warnings, then spawns the fixed manifest', async () => {
    await page.goto(harness.server.url);
    await page.getByRole('button', { name: '+ Spawn agent' }).click();
    const editor = page.getByRole('textbox', { name: 'Manifest' });
    await visible(editor);

    await editor.fill('name = "typist"\n\n[model]\nprovider = "openai"\nmodle = "gpt-4o"\n');
    const issues = page.getByTestId('manifest-issues');
    await visible(issues, 'line 5');
    await visible(issues, '[model].modle: unknown key, did you mean "model"?');
    await visible(issues, 'line 3');
    await visible(issues, '[model].model: required with provider');
    await visible(page.locator('.gutter-line.bad[data-line="5"]'));
    expect(await editor.getAttribute('aria-invalid')).toBe('true');
    // Nothing was spawned: checking is not spawning.
    expect(harness.host.kernel.list()).toEqual([]);

    await editor.fill(
      `name = "typist"\n\n[model]\nprovider = "anthropic"\nmodel = "claude-haiku-4-5"\napi_key_env = "TYPIST_KEY"\nbase_url = "${model.url}"\n`,
    );
    await issues.waitFor({ state: 'detached', ...VISIBLE });
    expect(await page.locator('.gutter-line.bad').count()).toBe(0);
    await visible(
      page.getByTestId('manifest-warnings'),
      'agent "typist" cannot run: model "anthropic/claude-haiku-4-5" ([model]) needs TYPIST_KEY, which is not set',
    );

    await page.getByRole('button', { name: 'Spawn', exact: true }).click();
    await page.waitForURL(/#\/agents\/typist$/, VISIBLE);
    expect(harness.host.kernel.list().map((agent) => agent.name)).toEqual(['typist']);
  });
});
