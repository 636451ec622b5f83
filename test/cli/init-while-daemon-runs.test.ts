import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema, resolveLoomHome } from '../../src/config/index.ts';
import { type RunningDaemon, startDaemon } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { runCli } from '../support/run-cli.ts';
import { useScriptedModelServer } from '../support/use-scripted-model-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { makeTempDir } from '../support/test-kernel.ts';

const model = useScriptedModelServer();
let dir: Awaited<ReturnType<typeof makeTempDir>>;
let home: string;

beforeEach(async () => {
  dir = await makeTempDir('loom-init-daemon-');
  home = join(dir.path, 'home');
});
afterEach(async () => {
  await dir.remove();
});

const defaultModel = ['--default-model', 'openai-compatible/scripted', '--base-url', 'http://127.0.0.1:4300/v1'];

describe('loom init while a daemon runs for the home', () => {
  let daemon: RunningDaemon;
  beforeEach(async () => {
    // Started without a default model, and with no model key in its environment.
    daemon = await startDaemon({
      home: resolveLoomHome({ LOOM_HOME: home }, dir.path),
      config: ConfigSchema.parse({}),
      env: {},
      logger: createSilentLogger(),
      version: 'test',
      port: 0,
    });
  });
  afterEach(async () => {
    await daemon.stop();
  });

  it('takes the new default model at once: an agent without [model] runs on it without a restart, and nothing says to restart', async () => {
    const manifest = join(dir.path, 'bare.toml');
    await writeFile(manifest, 'name = "bare"\n');
    const spawned = await runCli(home, ['agent', 'spawn', manifest]);
    expect(spawned.stderr).toContain('warning: agent "bare" cannot run: it has no [model] and config.toml has no [default_model]');
    const init = await runCli(home, ['init', '--default-model', 'openai-compatible/scripted', '--base-url', model.url]);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain('Default model: openai-compatible/scripted (as asked)\n');
    expect(
      init.stdout.endsWith(
        `The Loom daemon at ${daemon.info.url} (pid ${daemon.info.pid}) takes openai-compatible/scripted as its default model now: it follows [default_model] in config.toml, no restart needed.\n`,
      ),
    ).toBe(true);
    await waitFor('the daemon to run bare on the new default model', async () => {
      const [bare] = JSON.parse((await runCli(home, ['agent', 'list', '--json'])).stdout) as { runs_on: string | null; cannot_run: unknown }[];
      return bare?.runs_on === 'openai-compatible/scripted' && bare.cannot_run === null;
    });
    model.script([{ text: 'Hello from the default model.' }]);
    const sent = await runCli(home, ['send', 'bare', 'hi']);
    expect(sent.code).toBe(0);
    expect(sent.stdout).toContain('Hello from the default model.');
    // Nothing else in config.toml changed: the daemon runs with it as it is.
    await waitFor('loom doctor to find the daemon current', async () =>
      (await runCli(home, ['doctor'])).stdout.includes(`✓ the daemon runs at ${daemon.info.url} (pid ${daemon.info.pid})\n`),
    );
    expect((await runCli(home, ['init'])).stdout).not.toContain('restart');
  });

  it('still says to restart for a change of another setting, which the daemon reads only when it starts', async () => {
    // The default model is followed; the log level is read only at the next start.
    await writeFile(
      join(home, 'config.toml'),
      `[log]\nlevel = "debug"\n\n[default_model]\nprovider = "openai-compatible"\nmodel = "scripted"\nbase_url = "${model.url}"\n`,
    );
    const again = `The Loom daemon at ${daemon.info.url} (pid ${daemon.info.pid}) started before config.toml last changed: restart it to use what changed (loom stop, then loom start or npm start).\n`;
    expect((await runCli(home, ['init'])).stdout).toContain(again);
    const json = await runCli(home, ['init', '--json']);
    expect(json.stderr).toBe(again);
    const doctor = await runCli(home, ['doctor']);
    expect(doctor.stdout).toContain(
      `! the daemon runs at ${daemon.info.url} (pid ${daemon.info.pid}), with config.toml as it was when it started: it changed since, so restart the daemon to use it (loom stop, then loom start)\n`,
    );
  });
});

describe('loom init with no daemon running', () => {
  it('says nothing of restarting one', async () => {
    const init = await runCli(home, ['init', ...defaultModel]);
    expect(init.code).toBe(0);
    expect(init.stdout).not.toContain('restart');
  });
});
