import { utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigSchema, resolveLoomHome } from '../../src/config/index.ts';
import { type RunningDaemon, startDaemon } from '../../src/daemon/index.ts';
import { createSilentLogger } from '../../src/logging/index.ts';
import { runCli } from '../helpers/run-cli.ts';
import { makeTempDir } from '../helpers/test-kernel.ts';

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
    daemon = await startDaemon({ home: resolveLoomHome({ LOOM_HOME: home }, dir.path), config: ConfigSchema.parse({}), env: {}, logger: createSilentLogger(), version: 'test', port: 0 });
  });
  afterEach(async () => {
    await daemon.stop();
  });

  it('says to restart the daemon so it uses the new default model, and that it started before config.toml changed when run again', async () => {
    const notice = `The Loom daemon at ${daemon.info.url} (pid ${daemon.info.pid}) runs with the config.toml it started with: restart it to use openai-compatible/scripted (loom stop, then loom start or npm start).\n`;
    const init = await runCli(home, ['init', ...defaultModel]);
    expect(init.code).toBe(0);
    expect(init.stdout).toContain('Default model: openai-compatible/scripted (as asked)\n');
    expect(init.stdout.endsWith(notice)).toBe(true);
    // Run again (the daemon still not restarted): config.toml is newer than the daemon, whatever changed.
    const again = `The Loom daemon at ${daemon.info.url} (pid ${daemon.info.pid}) started before config.toml last changed: restart it to use what changed (loom stop, then loom start or npm start).\n`;
    expect((await runCli(home, ['init'])).stdout).toContain(again);
    // With --json, standard output holds the JSON alone.
    const json = await runCli(home, ['init', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ default_model: { provider: 'openai-compatible', model: 'scripted' } });
    expect(json.stderr).toBe(again);
  });

  it('has the daemon say, for an agent without [model], that a daemon started before loom init must be restarted', async () => {
    await runCli(home, ['init', ...defaultModel]);
    const manifest = join(dir.path, 'bare.toml');
    await writeFile(manifest, 'name = "bare"\n');
    const spawned = await runCli(home, ['agent', 'spawn', manifest]);
    expect(spawned.code).toBe(0);
    expect(spawned.stderr).toContain('warning: agent "bare" cannot run: it has no [model] and config.toml has no [default_model]; run `loom init`');
    expect(spawned.stderr).toContain('or [model] to the manifest (if you just ran `loom init`, restart the daemon)\n');
    const sent = await runCli(home, ['send', 'bare', 'hi']);
    expect(sent.code).not.toBe(0);
    // A refusal from a daemon that started before config.toml changed says so, on the line after.
    expect(sent.stderr).toBe(
      'error: agent "bare" has no [model] and no default model is configured; add [model] to its manifest or [default_model] to config.toml (`loom init` sets one; if you just ran it, restart the daemon)\n' +
        `note: the daemon at ${daemon.info.url} (pid ${daemon.info.pid}) started before config.toml last changed, and runs with the config it read then; restart it to use what changed (loom stop, then loom start)\n`,
    );
  });

  it('has loom doctor say the daemon runs with config.toml as it was, once it changed', async () => {
    // A config.toml older than the daemon, as `loom start` leaves it.
    await writeFile(join(home, 'config.toml'), '');
    await utimes(join(home, 'config.toml'), new Date(0), new Date(0));
    const before = await runCli(home, ['doctor']);
    expect(before.stdout).toContain(`✓ the daemon runs at ${daemon.info.url} (pid ${daemon.info.pid})\n`);
    await runCli(home, ['init', ...defaultModel]);
    const after = await runCli(home, ['doctor']);
    // The default model check reads config.toml as it is now; the daemon line says it holds the old one.
    expect(after.stdout).toContain('✓ default model openai-compatible/scripted\n');
    expect(after.stdout).toContain(
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
