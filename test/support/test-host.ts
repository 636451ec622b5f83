import { setTimeout as delay } from 'node:timers/promises';
import { join } from 'node:path';
import { createFakeClock, type FakeClock } from '../../src/clock/index.ts';
import { ConfigSchema, resolveLoomHome, type LoomHome } from '../../src/config/index.ts';
import { type Host, openHost } from '../../src/host/index.ts';
import type { Logger } from '../../src/contracts/index.ts';
import { createLogger, createSilentLogger } from '../../src/logging/index.ts';
import { createHttpApp, type RunningHttpServer, startHttpServer } from '../../src/http/index.ts';

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
  options: { runSchedules?: boolean; connectMcpServers?: boolean; clock?: FakeClock; logger?: Logger } = {},
): Promise<TestHost> {
  const home = resolveLoomHome({ LOOM_HOME: join(dir, 'home') }, dir);
  const clock = options.clock ?? createFakeClock();
  const host = await openHost({
    home,
    config: ConfigSchema.parse(config),
    env,
    logger: options.logger ?? createSilentLogger(),
    clock,
    runSchedules: options.runSchedules ?? false,
    connectMcpServers: options.connectMcpServers ?? false,
  });
  return { ...host, home, clock };
}

/** The host's HTTP API, its channels' webhooks too, with `config` (config.toml's shape) and no keys; `clientAddress` for `app.request()`, which has no socket. */
export function hostApiApp(host: TestHost, config: Record<string, unknown> = {}, clientAddress?: string): ReturnType<typeof createHttpApp> {
  return createHttpApp({
    kernel: host.kernel,
    config: ConfigSchema.parse(config),
    env: {},
    clock: host.clock,
    logger: createSilentLogger(),
    channels: host.channels,
    ...(clientAddress === undefined ? {} : { clientAddress: () => clientAddress }),
  });
}

/** The host's HTTP API ({@link hostApiApp}) on 127.0.0.1 at a free port. */
export function serveHostApi(host: TestHost, config: Record<string, unknown> = {}): Promise<RunningHttpServer> {
  return startHttpServer(hostApiApp(host, config), { host: '127.0.0.1', port: 0 });
}

/**
 * Loom's own logger at `info`, its JSON records kept in `records`, for tests of what reaches the
 * daemon's log as written (`createRecordingLogger` in recording-logger.ts keeps the calls instead).
 */
export function createJsonLogRecorder(): { logger: Logger; records: Record<string, unknown>[] } {
  const records: Record<string, unknown>[] = [];
  const logger = createLogger({
    level: 'info',
    sink: {
      write: (text: string) =>
        records.push(
          ...text
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as Record<string, unknown>),
        ),
    },
  });
  return { logger, records };
}

/** What agent `agent`'s module wrote to stderr, as it reached the log (lines and notes), from `createJsonLogRecorder`'s records. */
export function stderrLogOf(records: readonly Record<string, unknown>[], agent: string): string[] {
  return records.filter((record) => record['stream'] === 'stderr' && record['agent'] === agent).map((record) => String(record['msg']));
}

/**
 * Awaits `promise` while moving the fake clock forward, for code that sleeps on it (retries,
 * backoff). The clock moves only while something sleeps on it: real I/O in between (a request
 * to the scripted server) is waited for in real time, so a slow machine cannot run the fake
 * clock past a sleep that has not started yet. Bounded: gives up after `limitMs` of fake time,
 * or `realLimitMs` of real time with nothing asleep.
 */
export async function settleWithClock<T>(clock: FakeClock, promise: Promise<T>, stepMs = 250, limitMs = 120_000, realLimitMs = 20_000): Promise<T> {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  const realDeadline = Date.now() + realLimitMs;
  for (let elapsed = 0; !settled && elapsed < limitMs && Date.now() < realDeadline;) {
    if (clock.pending() === 0) {
      await delay(5);
      continue;
    }
    await clock.advance(stepMs);
    elapsed += stepMs;
  }
  return watched;
}
