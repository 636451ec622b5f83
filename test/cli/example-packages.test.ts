import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig, resolveLoomHome } from '../../src/config/index.ts';
import { type RunningDaemon, startDaemon } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import type { PackageView } from '../../src/packages/index.ts';
import { runCli } from '../support/run-cli.ts';
import { makeTempDir } from '../support/test-kernel.ts';
import { EXAMPLES } from '../packages/support.ts';

let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;
let daemon: RunningDaemon;

// A home as `loom init` makes it: no [[mcp_servers]], no keys. The example packages name MCP
// servers (slack, gmail…) that a newcomer has not configured.
beforeEach(async () => {
  dir = await makeTempDir('loom-example-packages-');
  home = join(dir.path, 'home');
  await runCli(home, ['init']);
  const loomHome = resolveLoomHome({ LOOM_HOME: home }, dir.path);
  daemon = await startDaemon({ home: loomHome, config: await loadConfig(loomHome), env: {}, logger: createSilentLogger(), version: 'test', port: 0 });
});
afterEach(async () => {
  await daemon.stop();
  await dir.remove();
});

const loom = (args: string[]) => runCli(home, args, { env: {} });

describe('the example packages on a fresh home', () => {
  it.each([
    ['data-pipeline', ['slack-notifier']],
    ['chief-of-staff', ['google-calendar', 'gmail', 'slack']],
  ])('%s validates and installs into the running daemon, warning of each MCP server config.toml lacks', async (name, servers) => {
    const folder = join(EXAMPLES, name);
    const valid = await loom(['package', 'validate', folder]);
    expect(valid).toMatchObject({ code: 0, stderr: '' });
    expect(valid.stdout).toContain(`${name} is valid.`);
    for (const server of servers)
      expect(valid.stdout).toContain(
        `: MCP server "${server}" is not configured (config.toml configures none); the activity runs without its tools until you add it as [[mcp_servers]] name = "${server}"`,
      );

    const installed = await loom(['package', 'install', folder, '--yes']);
    expect(installed.code).toBe(0);
    expect(installed.stdout).toMatch(new RegExp(`^Installed ${name} 1\\.0\\.0: agent "${name}" \\(\\S+\\)\\.\\n$`));
    expect(installed.stderr).toContain(`warning: agent.json: workflows.`);
    expect(daemon.host.packages.runtime.isActive(name)).toBe(true);
    const listed = JSON.parse((await loom(['package', 'list', '--json'])).stdout) as PackageView[];
    expect(listed.map((pkg) => pkg.slug)).toEqual([name]);
  });
});
