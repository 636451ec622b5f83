import { join } from 'node:path';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import { ConfigSchema, resolveLoomHome, type LoomHome } from '../../src/config/index.ts';
import { type Host, openHost } from '../../src/host/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';

/** Keys the scripted server accepts; no real provider is ever called. */
export const TEST_KEYS = { OPENAI_API_KEY: 'sk-openai-test', ANTHROPIC_API_KEY: 'sk-ant-test', GROQ_API_KEY: 'gsk-test' };

/** A host on a temporary home with a fake clock, as the CLI and the daemon build it. */
export interface TestHost extends Host {
  home: LoomHome;
  clock: FakeClock;
}

/** Opens a host in `dir` with `config` (config.toml's shape, as an object). */
export async function openTestHost(
  dir: string,
  config: Record<string, unknown> = {},
  env: Record<string, string> = TEST_KEYS,
  options: { runSchedules?: boolean; connectMcpServers?: boolean; clock?: FakeClock } = {},
): Promise<TestHost> {
  const home = resolveLoomHome({ LOOM_HOME: join(dir, 'home') }, dir);
  const clock = options.clock ?? createFakeClock();
  const host = await openHost({ home, config: ConfigSchema.parse(config), env, logger: createSilentLogger(), clock, runSchedules: options.runSchedules ?? false, connectMcpServers: options.connectMcpServers ?? false });
  return { ...host, home, clock };
}

/**
 * Awaits `promise` while moving the fake clock forward, for code that sleeps on it (retries,
 * backoff). Bounded: gives up after `limitMs` of fake time.
 */
export async function settleWithClock<T>(clock: FakeClock, promise: Promise<T>, stepMs = 250, limitMs = 120_000): Promise<T> {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  for (let elapsed = 0; !settled && elapsed < limitMs; elapsed += stepMs) await clock.advance(stepMs);
  return watched;
}
