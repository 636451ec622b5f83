import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Locator } from 'playwright-core';
import { build } from 'vite';
import { ConfigSchema } from '../../src/config/index.ts';
import { createHttpApp, type RunningHttpServer, startHttpServer } from '../../src/http/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { openTestHost, TEST_KEYS, type TestHost } from './test-host.ts';

/** Debian's Chromium, which the browser tests drive (never a downloaded browser). */
export const CHROMIUM = '/usr/bin/chromium';

/** Bounded waits for visible conditions: generous for a cold browser, far below the test timeout. */
export const VISIBLE = { timeout: 15_000 };

/** Waits (bounded) until `locator` is visible, and contains `text` when given. */
export async function visible(locator: Locator, text?: string | RegExp): Promise<void> {
  await (text === undefined ? locator : locator.filter({ hasText: text })).first().waitFor({ state: 'visible', ...VISIBLE });
}

/** Builds the dashboard into `outDir` with Vite, as `npm install` does. */
export async function buildDashboard(outDir: string): Promise<void> {
  await build({ root: join(import.meta.dirname, '../../web'), logLevel: 'silent', build: { outDir, emptyOutDir: true } });
}

/** Chromium, headless, with a fresh profile in `profileDir`. */
export async function launchChromium(profileDir: string): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM))
    throw new Error(`the dashboard tests drive Debian's Chromium at ${CHROMIUM}: install it with apt-get install chromium (.ci/run does)`);
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 820 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** A daemon's HTTP app serving a freshly built dashboard, and Chromium to look at it. */
export interface DashboardHarness {
  dir: string;
  host: TestHost;
  server: RunningHttpServer;
  browser: BrowserContext;
  /** Stops the HTTP server alone (the daemon gone, as the dashboard sees it); `close` then closes the rest. */
  stopServer(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Builds the dashboard, opens a test host on `config` (config.toml's shape) in a temporary
 * folder, serves it on 127.0.0.1 and launches Chromium. `packages` mounts `/api/packages`,
 * `channels` `/api/channels`, `connectMcpServers` connects `[[mcp_servers]]`; `env` is the host's environment (the test keys by default).
 */
export async function startDashboard(
  prefix: string,
  config: Record<string, unknown>,
  options: { packages?: boolean; runSchedules?: boolean; channels?: boolean; connectMcpServers?: boolean; env?: Record<string, string> } = {},
): Promise<DashboardHarness> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const outDir = join(dir, 'dist');
  await buildDashboard(outDir);
  const host = await openTestHost(dir, config, options.env, {
    runSchedules: options.runSchedules ?? false,
    connectMcpServers: options.connectMcpServers ?? false,
  });
  const app = createHttpApp({
    kernel: host.kernel,
    config: ConfigSchema.parse(config),
    // The daemon's one environment: the host's model keys (a spawn warns without them), and where the dashboard is.
    env: { ...(options.env ?? TEST_KEYS), LOOM_DASHBOARD_DIR: outDir },
    clock: host.clock,
    logger: createSilentLogger(),
    version: '9.9.9-test',
    skills: host.runtime.skills,
    ...(options.packages === true ? { packages: host.packages } : {}),
    ...(options.channels === true ? { channels: host.channels } : {}),
    ...(host.mcp === undefined ? {} : { mcp: host.mcp }),
  });
  const server = await startHttpServer(app, { host: '127.0.0.1', port: 0 });
  // A fresh profile in the test's temporary folder (Playwright passes it as --user-data-dir).
  const browser = await launchChromium(join(dir, 'chromium-profile'));
  let serverStopped = false;
  const stopServer = async (): Promise<void> => {
    if (serverStopped) return;
    serverStopped = true;
    await server.close();
  };
  return {
    dir,
    host,
    server,
    browser,
    stopServer,
    close: async () => {
      await browser.close();
      await stopServer();
      await host.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
