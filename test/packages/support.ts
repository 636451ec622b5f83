import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'smol-toml';
import { afterEach, beforeEach } from 'vitest';
import type { FakeClock } from '../../src/clock/index.ts';
import type { ScriptedModelServer } from '../support/scripted-model-server.ts';
import { openTestHost, type TestHost } from '../support/test-host.ts';
import { makeTempDir } from '../support/test-kernel.ts';

/** The example packages shipped in `examples/packages/`. */
export const EXAMPLES = join(import.meta.dirname, '../../examples/packages');

/** An activity as agent.json writes it, with spec/04's required fields filled. */
export function activityJson(id: string, changes: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, intent: `Do ${id}`, model: 'claude-haiku', token_budget: { max: 2000 }, on_error: { retry: 0, fallback: 'Abort' }, ...changes };
}

/** A binding as agent.json writes it. */
export function bindingJson(
  trigger: Record<string, unknown>,
  activities: Record<string, unknown>[],
  changes: Record<string, unknown> = {},
): Record<string, unknown> {
  return { trigger, description: 'a test binding', activities, budget: { total_per_run: 10_000, cost_estimate: '~$0.01' }, ...changes };
}

/** Writes a package folder `<dir>/<slug>` and returns its path. */
export async function writePackage(
  dir: string,
  slug: string,
  agentJson: Record<string, unknown> | string,
  options: { persona?: string; loomToml?: string; skills?: Record<string, string> } = {},
): Promise<string> {
  const folder = join(dir, slug);
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, 'AGENT.md'), options.persona ?? `You are ${slug}.\n`);
  await writeFile(join(folder, 'agent.json'), typeof agentJson === 'string' ? agentJson : JSON.stringify(agentJson, null, 2));
  if (options.loomToml !== undefined) await writeFile(join(folder, 'loom.toml'), options.loomToml);
  for (const [name, text] of Object.entries(options.skills ?? {})) {
    await mkdir(join(folder, 'skills', name), { recursive: true });
    await writeFile(join(folder, 'skills', name, 'SKILL.md'), text);
  }
  return folder;
}

/** The config every package test uses: the aliases point at the scripted model server; the MCP servers the examples name exist. */
export function packageConfig(modelUrl: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    scheduler: { timezone: 'UTC' },
    models: {
      aliases: {
        'claude-sonnet': { provider: 'anthropic', model: 'claude-sonnet-4-5', base_url: modelUrl },
        'claude-haiku': { provider: 'openai', model: 'gpt-4o-mini', base_url: modelUrl },
      },
    },
    mcp_servers: ['google-calendar', 'gmail', 'slack', 'slack-notifier'].map((name) => ({ name, transport: { type: 'stdio', command: 'node' } })),
    ...extra,
  };
}

/** {@link packageConfig} as config.toml text. */
export function packageConfigToml(modelUrl: string, extra: Record<string, unknown> = {}): string {
  return stringify(packageConfig(modelUrl, extra));
}

/** A test file's daemon hosts on the scripted model server, each test in a folder of its own. */
export interface PackageHosts {
  /** The test's folder (the hosts' homes are in it). */
  readonly dir: string;
  /** Opens a host (its timers running) on `clock`, with `config` over {@link packageConfig}'s; it is closed after the test. */
  open: (clock?: FakeClock, config?: Record<string, unknown>) => Promise<TestHost>;
  /** Closes a host before the test ends (a restart's first half). */
  close: (host: TestHost) => Promise<void>;
}

/** Makes each test's folder (removed after it) and closes the hosts it opened. Valid once the tests run. */
export function usePackageHosts(server: ScriptedModelServer, prefix: string): PackageHosts {
  let dir: Awaited<ReturnType<typeof makeTempDir>> | undefined;
  let hosts: TestHost[] = [];
  beforeEach(async () => {
    dir = await makeTempDir(prefix);
    hosts = [];
  });
  afterEach(async () => {
    for (const host of hosts) await host.close();
    await dir?.remove();
  });
  const folder = (): string => {
    if (dir === undefined) throw new Error('the package hosts are used before the tests start');
    return dir.path;
  };
  return {
    get dir() {
      return folder();
    },
    open: async (clock, config = {}) => {
      const host = await openTestHost(folder(), { ...packageConfig(server.url), ...config }, undefined, {
        runSchedules: true,
        ...(clock === undefined ? {} : { clock }),
      });
      hosts.push(host);
      return host;
    },
    close: async (host) => {
      hosts = hosts.filter((open) => open !== host);
      await host.close();
    },
  };
}

/** Moves the host's fake clock forward in steps, letting the runs started on the way finish. */
export async function advance(host: TestHost, ms: number, stepMs = 60_000): Promise<void> {
  for (let done = 0; done < ms; done += stepMs) {
    await host.clock.advance(Math.min(stepMs, ms - done));
    await host.packages.runtime.idle();
  }
}
