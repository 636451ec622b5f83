import { afterEach, beforeEach } from 'vitest';
import type { FakeClock } from '../../src/clock/index.ts';
import { openTestHost, TEST_KEYS, type TestHost } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';

export const MINUTE = 60_000;
/** Monday 5 January 2026, 08:00 UTC. */
export const EIGHT = Date.UTC(2026, 0, 5, 8);

/** A daemon that runs schedules, in a fresh temporary home per test. */
export interface ScheduledDaemon {
  /** The test's temporary folder. */
  readonly dir: string;
  /** Starts the daemon on `clock` (the same one across a restart) with `config` (config.toml's shape). */
  start(clock: FakeClock, config?: Record<string, unknown>): Promise<TestHost>;
  /** Stops the daemon, lets `ms` pass on `clock` while it is down, and starts it again. */
  restartAfter(clock: FakeClock, ms: number, config?: Record<string, unknown>): Promise<TestHost>;
}

/** Sets up a {@link ScheduledDaemon} for each test of the file (closed and removed after it). */
export function useScheduledDaemon(prefix: string): ScheduledDaemon {
  let dir: Awaited<ReturnType<typeof makeTempDir>> | undefined;
  let host: TestHost | undefined;
  beforeEach(async () => {
    dir = await makeTempDir(prefix);
  });
  afterEach(async () => {
    await host?.close();
    host = undefined;
    await dir?.remove();
  });
  const folder = (): string => {
    if (dir === undefined) throw new Error('no folder: the beforeEach has not run');
    return dir.path;
  };
  const daemon: ScheduledDaemon = {
    get dir() {
      return folder();
    },
    async start(clock, config = {}) {
      host = await openTestHost(folder(), config, TEST_KEYS, { runSchedules: true, clock });
      return host;
    },
    async restartAfter(clock, ms, config = {}) {
      await host?.close();
      host = undefined;
      await clock.advance(ms);
      return daemon.start(clock, config);
    },
  };
  return daemon;
}

/** A manifest of agent `name` with `schedule` (the lines of its `[schedule]` table and after), on the scripted model at `modelUrl`. */
export function scheduledAgentToml(name: string, schedule: string, modelUrl: string, model = 'gpt-4o'): string {
  return `name = "${name}"\n[schedule]\n${schedule}\n[model]\nprovider = "openai"\nmodel = "${model}"\nbase_url = "${modelUrl}"\n`;
}
