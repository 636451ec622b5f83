import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Locator } from 'playwright-core';
import { build } from 'vite';

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
  if (!existsSync(CHROMIUM)) throw new Error(`the dashboard tests drive Debian's Chromium at ${CHROMIUM}: install it with apt-get install chromium (.ci/run does)`);
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 820 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
