import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard, type DashboardHarness } from '../support/browser.ts';
import { manifest } from '../support/test-kernel.ts';
import { EVERYTHING_BIN, stdioEntry } from '../mcp/client-helpers.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';

describe('a question an MCP server asks, answered on the approvals page (Chromium)', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;

  beforeAll(async () => {
    harness = await startDashboard('loom-web-question-', { mcp_servers: [stdioEntry('everything', [EVERYTHING_BIN, 'stdio'])] }, { connectMcpServers: true });
    await waitFor('the MCP server to connect', () => harness.host.mcp?.servers()[0]?.status === 'connected');
  });
  afterAll(async () => {
    await harness.close();
  });

  it("shows the server's fields with their defaults, takes the answer, and the call goes on with it", async () => {
    const { host, server, browser } = harness;
    await host.kernel.spawn(
      manifest(`name = "asker"\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n[capabilities]\ntools = ["mcp_everything_*"]\n`),
    );
    model.script([{ toolCalls: [{ name: 'mcp_everything_trigger_elicitation_request', input: {} }] }, { text: 'Thanks.' }]);
    const results: string[] = [];
    const turn = (async () => {
      for await (const event of host.kernel.stream('asker', 'ask me')) if (event.type === 'tool-result') results.push(event.text);
    })();

    const page = await browser.newPage();
    await page.goto(`${server.url}/#/approvals`);
    const form = page.getByTestId('question-form');
    await form.waitFor();
    await expect(page.getByRole('region', { name: 'mcp_everything_elicitation asks for asker' }).isVisible()).resolves.toBe(true);
    expect(await form.getByText('Please provide inputs for the following fields:').isVisible()).toBe(true);
    // A field with a default starts with it.
    expect(await form.getByLabel('Integer').inputValue()).toBe('42');
    await form.getByLabel('String (required)').fill('Ada Lovelace');
    await form.getByLabel('Boolean').check();
    await form.getByRole('button', { name: 'Answer' }).click();
    await turn;
    expect(results[0]).toContain('- Name: Ada Lovelace');
    expect(results[0]).toContain('- Agreed to terms: true');
    expect(results[0]).toContain('- Favorite Integer: 42');
    expect(await host.kernel.approvals.list('all')).toMatchObject([{ tool: 'mcp_everything_elicitation', status: 'approved', decidedBy: 'local' }]);
    await page.close();
  });
});
